package search

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"linerate/box/netnsread"
	"linerate/ceiling"
	"linerate/internal/testenv"
	"linerate/source"
)

// BenchmarkSearchShapedVeth searches the NDR and PDR of 1518-byte frames
// through a veth shaped by a 100 Mbit/s tbf, with a paced UDP sender of
// this test's own, and reports the NDR as a share of the shaper's frame
// rate (ceiling.PathCeiling) and the trials it took. It is a benchmark, not
// a test: a paced sender on a busy machine is late now and then.
//
// Sub-benchmarks run Run and, to compare, Binary.
//
//	go test -run XXX -bench SearchShapedVeth -benchtime 1x ./search
func BenchmarkSearchShapedVeth(b *testing.B) {
	testenv.RequireRoot(b)
	a, z := testenv.NewNetNS(b), testenv.NewNetNS(b)
	testenv.Veth(b, a, "va", z, "vz", 1)
	a.AddAddr(b, "va", "10.78.0.1/24")
	z.AddAddr(b, "vz", "10.78.0.2/24")
	h := a.Netlink(b)
	l, err := h.LinkByName("va")
	if err != nil {
		b.Fatal(err)
	}
	const rate = 100e6 / 8
	err = h.QdiscAdd(&netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
		Rate:       rate, Limit: 60000, Buffer: uint32(3100 * 1e9 / rate / 64),
	})
	if err != nil {
		b.Fatal(err)
	}
	src, err := source.NewLiveNetns(a.Name)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	r, err := netnsread.New(src, netnsread.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	path, err := r.Path("client", "va")
	if err != nil {
		b.Fatal(err)
	}
	mix := ceiling.SingleFrame(1518)
	lim, ok := ceiling.PathCeiling(path, mix)
	if !ok {
		b.Fatal("no ceiling")
	}
	sink := z.ListenUDP(b, "10.78.0.2:5201", 32<<20)
	flush := &testenv.Flush{Sink: z.ListenUDP(b, "10.78.0.2:5202", 0), Before: testenv.QdiscsDrained(b, a)}
	a.SendUDP(b, flush.Sink.Addr, 1, 8, flush)
	payload := 1518 - 14 - 20 - 8 - 4
	trial := func(ctx context.Context, spec TrialSpec) (TrialResult, error) {
		sent := paced(b, a, sink.Addr, spec, payload)
		a.SendUDP(b, sink.Addr, 0, payload, flush)
		return TrialResult{Sent: uint64(sent), Received: uint64(sink.Drain(b))}, nil
	}
	cfg := Config{Goals: []Goal{NDR, PDR(0.005)}, MinRate: 1000, MaxRate: lim.FPS * 1.5,
		Precision: 0.005, FinalTrial: 2 * time.Second, InitialTrial: 250 * time.Millisecond}
	for _, m := range []struct {
		name string
		run  func(context.Context, Config, Trial) (Result, error)
	}{{"mlr", Run}, {"binary", Binary}} {
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				res, err := m.run(context.Background(), cfg, trial)
				if err != nil {
					b.Fatal(err)
				}
				ndr, _ := res.Goal("ndr")
				pdr, _ := res.Goal("pdr")
				b.ReportMetric(ndr.Rate/lim.FPS, "ndr/ceiling")
				b.ReportMetric(pdr.Rate/lim.FPS, "pdr/ceiling")
				b.ReportMetric(float64(len(res.Trials)), "trials")
				b.ReportMetric(res.TrialSeconds(), "trial-s")
				b.Logf("%s: ceiling %s: %.0f fps; NDR %.0f, PDR %.0f fps in %d trials (%.1f s of trials)",
					m.name, lim.What, lim.FPS, ndr.Rate, pdr.Rate, len(res.Trials), res.TrialSeconds())
			}
		})
	}
}

// paced sends datagrams of size bytes to to at spec.Rate for
// spec.Duration from inside ns, in bursts every half millisecond, and
// returns how many the kernel took.
func paced(b *testing.B, ns *testenv.NetNS, to netip.AddrPort, spec TrialSpec, size int) int {
	n := int(spec.Rate * spec.Duration.Seconds())
	sent := 0
	err := ns.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		sa := &unix.SockaddrInet4{Port: int(to.Port()), Addr: to.Addr().As4()}
		buf := make([]byte, size)
		start := time.Now()
		for done := 0; done < n; {
			due := min(n, int(spec.Rate*time.Since(start).Seconds())+1)
			for ; done < due; done++ {
				if unix.Sendto(fd, buf, 0, sa) == nil {
					sent++
				}
			}
			time.Sleep(500 * time.Microsecond)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return sent
}
