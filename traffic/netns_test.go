package traffic

import (
	"context"
	"math"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"linerate/box"
	"linerate/internal/testenv"
	"linerate/results"
	"linerate/source/ethtool"
	"linerate/source/procfs"
	"linerate/traffic/session"
	"linerate/traffic/udp"
	"linerate/wire"
)

// lab is two network namespaces joined by a veth pair: the client in a
// (lra, 10.99.0.1) and a server in b (lrb, 10.99.0.2).
type lab struct {
	a, b   *testenv.NetNS
	server string // control address of the server in b
}

func newLab(t *testing.T, srv *Server) *lab {
	t.Helper()
	testenv.RequireRoot(t)
	l := &lab{a: testenv.NewNetNS(t), b: testenv.NewNetNS(t)}
	testenv.Veth(t, l.a, "lra", l.b, "lrb", 1)
	l.a.AddAddr(t, "lra", "10.99.0.1/24")
	l.b.AddAddr(t, "lrb", "10.99.0.2/24")
	srv.Setup = l.b.Do
	srv.Sampling = sampling(l.b)
	var ln interface{ Close() error }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	err := l.b.Do(func() error {
		lc, err := net.Listen("tcp", "10.99.0.2:0")
		if err != nil {
			return err
		}
		ln = lc
		l.server = lc.Addr().String()
		go func() { done <- srv.Serve(ctx, lc) }()
		return nil
	})
	if err != nil {
		t.Fatalf("server in %s: %v", l.b.Name, err)
	}
	_ = ln
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	return l
}

// sampling records counters inside ns, reading /proc/thread-self/net from
// a thread switched into it.
func sampling(ns *testenv.NetNS) session.Sampling {
	fs := procfs.NewFS("/proc").WithNetDir("/proc/thread-self/net")
	return func(each func(box.Rates)) func() ([]box.Rates, error) {
		read := func() (box.Counters, error) {
			var c box.Counters
			err := ns.Do(func() error {
				var err error
				c, err = box.ReadCounters(fs, nil, nil)
				return err
			})
			return c, err
		}
		return startTestLoop(read, each)
	}
}

// startTestLoop is a minimal once-a-second sampler for these tests (the
// real one is package sample, which imports this package's users, not it).
func startTestLoop(read func() (box.Counters, error), each func(box.Rates)) func() ([]box.Rates, error) {
	stop := make(chan struct{})
	done := make(chan struct{})
	var out []box.Rates
	var firstErr error
	prev, err := read()
	if err != nil {
		firstErr = err
	}
	take := func() {
		c, err := read()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		if !prev.Time.IsZero() {
			r := box.Delta(prev, c)
			out = append(out, r)
			if each != nil {
				each(r)
			}
		}
		prev = c
	}
	go func() {
		defer close(done)
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				take()
			}
		}
	}()
	return func() ([]box.Rates, error) {
		close(stop)
		<-done
		take()
		return out, firstErr
	}
}

// ifStats reads an interface's packet and byte counters inside ns.
type linkCount struct{ rxPk, txPk, rxBytes, txBytes uint64 }

func ifStats(t *testing.T, ns *testenv.NetNS, iface string) linkCount {
	t.Helper()
	h := ns.Netlink(t)
	l, err := h.LinkByName(iface)
	if err != nil {
		t.Fatalf("%s in %s: %v", iface, ns.Name, err)
	}
	s := l.Attrs().Statistics
	if s == nil {
		t.Fatalf("%s: no statistics", iface)
	}
	return linkCount{s.RxPackets, s.TxPackets, s.RxBytes, s.TxBytes}
}

// snmp reads one field of /proc/net/snmp inside ns.
func snmp(t *testing.T, ns *testenv.NetNS, section, field string) uint64 {
	t.Helper()
	var b []byte
	if err := ns.Do(func() error {
		var err error
		b, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(lines[i], section+":") || !strings.HasPrefix(lines[i+1], section+":") {
			continue
		}
		names, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		for j, n := range names {
			if n == field && j < len(vals) {
				v, _ := strconv.ParseUint(vals[j], 10, 64)
				return v
			}
		}
	}
	t.Fatalf("%s %s not in snmp", section, field)
	return 0
}

func (l *lab) config(sp wire.Spec) Config {
	return Config{Targets: []string{l.server}, Spec: sp, Setup: l.a.Do, Sampling: sampling(l.a)}
}

func udpSpec(d time.Duration, rate wire.Rate) wire.Spec {
	return wire.Spec{Proto: "udp", Direction: wire.Forward, Duration: wire.Seconds(d), Rate: rate, Streams: 1, Ports: 1, Threads: 1}
}

// closeTo reports whether got is within frac of want.
func closeTo(got, want uint64, frac float64) bool {
	return math.Abs(float64(got)-float64(want)) <= frac*float64(want)
}

func TestUDPCountsMatchInterfaces(t *testing.T) {
	l := newLab(t, &Server{})
	before := [2]linkCount{ifStats(t, l.a, "lra"), ifStats(t, l.b, "lrb")}
	cfg := l.config(udpSpec(time.Second, wire.Rate{PPS: 100000}))
	cfg.FrameSize = 64
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	after := [2]linkCount{ifStats(t, l.a, "lra"), ifStats(t, l.b, "lrb")}
	tx := after[0].txPk - before[0].txPk
	rx := after[1].rxPk - before[1].rxPk
	s := res.Summary
	t.Logf("linerate sent %d received %d (%.0f pps); lra tx %d, lrb rx %d", s.SentPackets, s.ReceivedPackets, s.ReceivedPPS, tx, rx)
	if s.SentPackets < 1000 {
		t.Fatalf("sent only %d packets", s.SentPackets)
	}
	if !closeTo(s.SentPackets, tx, 0.005) {
		t.Errorf("sent %d packets, the client's interface sent %d: more than 0.5%% apart", s.SentPackets, tx)
	}
	if !closeTo(s.ReceivedPackets, rx, 0.005) {
		t.Errorf("received %d packets, the server's interface received %d: more than 0.5%% apart", s.ReceivedPackets, rx)
	}
	if s.LostPackets != s.SentPackets-min(s.SentPackets, s.ReceivedPackets-s.Duplicates) {
		t.Errorf("lost %d of %d sent, %d received", s.LostPackets, s.SentPackets, s.ReceivedPackets)
	}
	// Frames of 64 bytes: 60 on the interface (no FCS).
	if b := after[1].rxBytes - before[1].rxBytes; !closeTo(b, rx*60, 0.01) {
		t.Errorf("lrb received %d bytes in %d packets, want 60 per packet", b, rx)
	}
	if len(res.Samples) == 0 {
		t.Error("no samples in the result")
	}
	sides := map[results.Side]bool{}
	for _, sm := range res.Samples {
		sides[sm.Side] = true
	}
	if !sides["client"] || !sides["server"] {
		t.Errorf("samples from %v, want client and server", sides)
	}
}

func TestUDPRateCap(t *testing.T) {
	l := newLab(t, &Server{})
	const pps = 20000
	d := 1500 * time.Millisecond
	cfg := l.config(udpSpec(d, wire.Rate{PPS: pps}))
	cfg.Spec.Warmup = wire.Seconds(200 * time.Millisecond)
	cfg.FrameSize = 128
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	limit := pps*d.Seconds() + max(4*float64(session.BatchFor(pps, udp.SendBatch)), pps*0.1)
	t.Logf("asked %d pps: sent %d packets in %.2fs = %.0f pps (%.2f%% of asked); received %.0f pps",
		pps, s.SentPackets, s.Seconds, s.SentPPS, s.SentPPS/pps*100, s.ReceivedPPS)
	t.Logf("limited by %s: %s", s.LimitedBy, s.LimitedWhy)
	if float64(s.SentPackets) > limit {
		t.Errorf("sent %d packets in %s at %d pps: more than the cap allows (%.0f)", s.SentPackets, d, pps, limit)
	}
	if s.SentPackets == 0 || s.ReceivedPackets == 0 {
		t.Errorf("nothing went: %+v", s.Totals)
	}
	if res.Summary.LimitedBy != "asked rate" && s.SentPPS >= 0.99*pps {
		t.Errorf("limited by %q with the rate met", res.Summary.LimitedBy)
	}
}

func TestUDPLossFromSmallBuffer(t *testing.T) {
	l := newLab(t, &Server{})
	before := snmp(t, l.b, "Udp", "RcvbufErrors")
	cfg := l.config(udpSpec(time.Second, wire.Rate{}))
	cfg.Spec.RecvBuf = 1 // the kernel rounds it up to its minimum
	cfg.FrameSize = 64
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	drops := snmp(t, l.b, "Udp", "RcvbufErrors") - before
	s := res.Summary
	t.Logf("sent %d, received %d, lost %d (%.1f%%); server RcvbufErrors +%d; limited by %s: %s",
		s.SentPackets, s.ReceivedPackets, s.LostPackets, s.LossRatio*100, drops, s.LimitedBy, s.LimitedWhy)
	if s.LostPackets == 0 || drops == 0 {
		t.Fatalf("no loss with a tiny receive buffer: lost %d, RcvbufErrors +%d", s.LostPackets, drops)
	}
	// Every packet the socket refused is one linerate counts lost (the
	// veth path itself may drop a few more).
	if s.LostPackets < drops-drops/200 {
		t.Errorf("lost %d < %d dropped by the receive buffer", s.LostPackets, drops)
	}
	if s.LostPackets > s.SentPackets {
		t.Errorf("lost %d of %d sent", s.LostPackets, s.SentPackets)
	}
}

// dropEveryNth installs, inside ns, an nftables rule that drops every nth
// UDP packet coming in (numgen inc mod n == 0).
func dropEveryNth(t *testing.T, ns *testenv.NetNS, n uint32) {
	t.Helper()
	dropOneIn(t, ns, n, unix.NFT_NG_INCREMENTAL)
}

func TestUDPLossFromDropRule(t *testing.T) {
	l := newLab(t, &Server{})
	dropEveryNth(t, l.b, 10)
	cfg := l.config(udpSpec(time.Second, wire.Rate{PPS: 50000}))
	cfg.FrameSize = 64
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	t.Logf("sent %d, received %d, lost %d (%.2f%%), limited by %s", s.SentPackets, s.ReceivedPackets, s.LostPackets, s.LossRatio*100, s.LimitedBy)
	if math.Abs(s.LossRatio-0.1) > 0.005 {
		t.Errorf("loss ratio %.4f with every 10th packet dropped, want 0.1 ± 0.005", s.LossRatio)
	}
	if s.Reordered != 0 || s.Duplicates != 0 {
		t.Errorf("reordered %d, duplicates %d on a veth pair", s.Reordered, s.Duplicates)
	}
	if s.LimitedBy != "path" {
		t.Errorf("limited by %q (%s), want network path", s.LimitedBy, s.LimitedWhy)
	}
}

func TestUDPReverseAndBidir(t *testing.T) {
	l := newLab(t, &Server{})
	for _, dir := range []wire.Direction{wire.Reverse, wire.Bidir} {
		t.Run(string(dir), func(t *testing.T) {
			sp := udpSpec(500*time.Millisecond, wire.Rate{PPS: 20000})
			sp.Direction, sp.Ports, sp.Threads = dir, 2, 2
			cfg := l.config(sp)
			cfg.FrameSize = 100
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			tr := res.Targets[0]
			if tr.Reverse == nil || tr.Reverse.ReceivedPackets == 0 {
				t.Fatalf("nothing came back: %+v", tr.Reverse)
			}
			if (dir == wire.Bidir) != (tr.Forward != nil) {
				t.Fatalf("forward %+v for %s", tr.Forward, dir)
			}
			if tr.Reverse.Seconds < 0.49 {
				t.Errorf("the server sent for %.2fs of 0.5s", tr.Reverse.Seconds)
			}
			if tr.Reverse.LossRatio > 0.01 {
				t.Errorf("reverse loss %.3f at 20 kpps", tr.Reverse.LossRatio)
			}
			want := 2 // ports × streams
			if dir == wire.Bidir {
				want = 4
			}
			if len(res.Streams) != want {
				t.Errorf("%d streams, want %d", len(res.Streams), want)
			}
		})
	}
}

// offloadsOff turns TSO and GSO off on iface inside ns, so that the
// interface and its qdisc see segments, as a wire would, not the large
// packets a veth otherwise carries.
func offloadsOff(t *testing.T, ns *testenv.NetNS, iface string) {
	t.Helper()
	if err := ns.Do(func() error {
		et, err := ethtool.NewLive()
		if err != nil {
			return err
		}
		defer et.Close()
		return et.SetFeatures(iface, map[string]bool{"tcp-segmentation-offload": false, "generic-segmentation-offload": false})
	}); err != nil {
		t.Fatalf("offloads off on %s: %v", iface, err)
	}
}

// firstSample is the first counter sample of one end of a run (side
// "client" or "server"): with a 1 s measured window, the window itself.
func firstSample(t *testing.T, res *results.Result, side results.Side) results.Sample {
	t.Helper()
	for _, s := range res.Samples {
		if s.Side == side {
			return s
		}
	}
	t.Fatalf("no %s sample in the result", side)
	return results.Sample{}
}

// packets is what an interface counted in a sample, received (rx) or sent.
func samplePackets(s results.Sample, iface string, rx bool) uint64 {
	d := s.NetDev[iface]
	if rx {
		return uint64(math.Round(d.RxPps * s.Seconds))
	}
	return uint64(math.Round(d.TxPps * s.Seconds))
}

// tcpBuffers is the most a TCP socket may queue inside ns, sending
// (tcp_wmem's maximum) plus receiving (tcp_rmem's): a bound on the bytes
// written and not yet read at any instant, apart from those on the wire.
func tcpBuffers(t *testing.T, ns *testenv.NetNS) uint64 {
	t.Helper()
	var sum uint64
	for _, f := range []string{"tcp_wmem", "tcp_rmem"} {
		var b []byte
		if err := ns.Do(func() error {
			var err error
			b, err = os.ReadFile("/proc/sys/net/ipv4/" + f)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		fs := strings.Fields(string(b))
		v, err := strconv.ParseUint(fs[len(fs)-1], 10, 64)
		if err != nil {
			t.Fatalf("%s %q: %v", f, b, err)
		}
		sum += v
	}
	return sum
}

// TestTCPSmallMSS: with --mss 88 every segment carries 76 bytes (88 less
// 12 of timestamps), and the segments of the measured window are the
// interfaces' packets of the window, on both ends: the warmup's (half as
// many) are not in them.
func TestTCPSmallMSS(t *testing.T) {
	l := newLab(t, &Server{})
	offloadsOff(t, l.a, "lra")
	before := ifStats(t, l.a, "lra")
	sp := wire.Spec{Proto: "tcp", Direction: wire.Forward, Duration: wire.Seconds(time.Second), Warmup: wire.Seconds(500 * time.Millisecond),
		Streams: 1, Ports: 1, Threads: 1, MSS: 88}
	res, err := Run(context.Background(), l.config(sp))
	if err != nil {
		t.Fatal(err)
	}
	after := ifStats(t, l.a, "lra")
	pk, by := after.txPk-before.txPk, after.txBytes-before.txBytes
	if len(res.Streams) != 1 || res.Streams[0].TCP == nil {
		t.Fatalf("streams %+v", res.Streams)
	}
	mss := res.Streams[0].TCP.SndMSS
	avg := float64(by) / float64(pk)
	// Ethernet 14 + IPv4 20 + TCP 20, and 12 bytes of timestamps when the
	// MSS left room for them (88 - 76).
	want := float64(mss) + 54 + float64(88-mss)
	s := res.Summary
	t.Logf("mss %d: %d packets, %d bytes, %.1f bytes per packet (want ~%.0f); goodput %.1f Mbit/s, %d segments sent, %d received",
		mss, pk, by, avg, want, s.ReceivedBPS/1e6, s.SentPackets, s.ReceivedPackets)
	if mss == 0 || mss > 88 {
		t.Fatalf("snd_mss %d with --mss 88", mss)
	}
	if math.Abs(avg-want) > 4 {
		t.Errorf("average packet %.1f bytes, want %.0f ± 4", avg, want)
	}
	// The window's segments against the interfaces over the window (the
	// first sample of each end covers it), and against its bytes: one
	// write is one segment. 5% for the edges of the samples (taken a
	// little after the window's marks on a busy machine) and segments sent
	// more than once (retransmits): the warmup would add 50%.
	tx := samplePackets(firstSample(t, res, "client"), "lra", false)
	rx := samplePackets(firstSample(t, res, "server"), "lrb", true)
	if !closeTo(s.SentPackets, tx+s.Retransmits, 0.05) {
		t.Errorf("%d segments sent in the window, lra sent %d packets in it (%d retransmits)", s.SentPackets, tx, s.Retransmits)
	}
	if !closeTo(s.ReceivedPackets, rx, 0.05) {
		t.Errorf("%d segments received in the window, lrb received %d packets in it", s.ReceivedPackets, rx)
	}
	// Bytes written are counted when the write returns, segments when the
	// stack sends them: the send queue between the two (up to tcp_wmem,
	// hundreds of kilobytes at this rate) moves the edges by more than the
	// samples do, so this check allows 10%.
	if segs := s.SentBytes / uint64(mss); !closeTo(s.SentPackets, segs+s.Retransmits, 0.10) {
		t.Errorf("%d segments sent in the window for %d bytes written in it (%d segments, %d retransmits)", s.SentPackets, s.SentBytes, segs, s.Retransmits)
	}
	if s.ReceivedBytes > s.SentBytes+tcpBuffers(t, l.a) {
		t.Errorf("received %d bytes in the window, more than the %d sent and all the buffers could hold", s.ReceivedBytes, s.SentBytes)
	}
}

func TestTCPStreams(t *testing.T) {
	l := newLab(t, &Server{})
	allow := tcpBuffers(t, l.a)
	for _, dir := range []wire.Direction{wire.Forward, wire.Reverse, wire.Bidir, "zerocopy"} {
		t.Run(string(dir), func(t *testing.T) {
			sp := wire.Spec{Proto: "tcp", Direction: dir, Duration: wire.Seconds(500 * time.Millisecond), Warmup: wire.Seconds(200 * time.Millisecond),
				Streams: 2, Ports: 1, Threads: 1}
			if dir == "zerocopy" {
				sp.Direction, sp.ZeroCopy = wire.Bidir, true
			}
			res, err := Run(context.Background(), l.config(sp))
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			t.Logf("%s: %.2f Gbit/s, %d retransmits", dir, s.ReceivedBPS/1e9, s.Retransmits)
			if s.ReceivedBytes == 0 || s.SentBytes == 0 {
				t.Fatalf("nothing moved: %+v", s.Totals)
			}
			for _, st := range res.Streams {
				// Each end counts its own window: they differ by what was
				// queued between them at the window's edges, at most what
				// the socket buffers hold.
				if st.ReceivedBytes > st.SentBytes+allow || st.SentBytes > st.ReceivedBytes+allow {
					t.Errorf("stream %d %s: sent %d bytes, received %d: further apart than the buffers (%d) allow",
						st.Stream, st.Direction, st.SentBytes, st.ReceivedBytes, allow)
				}
				if st.SentPackets == 0 || st.ReceivedPackets == 0 {
					t.Errorf("stream %d %s: %d segments sent, %d received", st.Stream, st.Direction, st.SentPackets, st.ReceivedPackets)
				}
				if st.TCP == nil || st.TCP.RTTMicros == 0 {
					t.Errorf("stream %d %s: no TCP_INFO", st.Stream, st.Direction)
				}
			}
		})
	}
}

// capLink caps iface's egress inside ns at bps bits per second with a
// token bucket of 32 KiB (segments pass one by one: offloads are off) and
// a queue of 10 ms more, and returns how many bytes the qdisc may hold.
func capLink(t *testing.T, ns *testenv.NetNS, iface string, bps uint64) uint64 {
	t.Helper()
	h := ns.Netlink(t)
	link, err := h.LinkByName(iface)
	if err != nil {
		t.Fatal(err)
	}
	rate := bps / 8
	const bucket = 32 << 10
	q := &netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
		Rate:       rate,
		Buffer:     netlink.Xmittime(rate, bucket),
		Limit:      uint32(bucket + rate/100),
	}
	if err := h.QdiscAdd(q); err != nil {
		t.Fatalf("tbf on %s: %v", iface, err)
	}
	return uint64(q.Limit)
}

// qdiscDrops is the packets iface's root qdisc in ns dropped so far.
func qdiscDrops(t *testing.T, ns *testenv.NetNS, iface string) uint64 {
	t.Helper()
	h := ns.Netlink(t)
	link, err := h.LinkByName(iface)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := h.QdiscList(link)
	if err != nil {
		t.Fatalf("qdiscs of %s: %v", iface, err)
	}
	for _, q := range qs {
		a := q.Attrs()
		if a.Parent == netlink.HANDLE_ROOT && a.Statistics != nil && a.Statistics.Queue != nil {
			return uint64(a.Statistics.Queue.Drops)
		}
	}
	t.Fatalf("no statistics of the root qdisc of %s", iface)
	return 0
}

// TestTCPCappedLink runs TCP through a link capped at 200 Mbit/s each way:
// what the receiver counts in the window is never more than the link
// carries in it, stays within the buffers of what the sender wrote in its
// window, and is (in segments) what the interfaces counted in the window.
func TestTCPCappedLink(t *testing.T) {
	l := newLab(t, &Server{})
	const capBPS = 200_000_000
	var queued uint64
	for _, e := range []struct {
		ns    *testenv.NetNS
		iface string
	}{{l.a, "lra"}, {l.b, "lrb"}} {
		offloadsOff(t, e.ns, e.iface)
		queued = capLink(t, e.ns, e.iface, capBPS)
	}
	allow := tcpBuffers(t, l.a)
	for _, dir := range []wire.Direction{wire.Forward, wire.Reverse, wire.Bidir} {
		t.Run(string(dir), func(t *testing.T) {
			sp := wire.Spec{Proto: "tcp", Direction: dir, Duration: wire.Seconds(time.Second), Warmup: wire.Seconds(time.Second),
				Streams: 1, Ports: 1, Threads: 1}
			drops0 := [2]uint64{qdiscDrops(t, l.a, "lra"), qdiscDrops(t, l.b, "lrb")}
			res, err := Run(context.Background(), l.config(sp))
			if err != nil {
				t.Fatal(err)
			}
			drops := map[string]uint64{"lra": qdiscDrops(t, l.a, "lra") - drops0[0], "lrb": qdiscDrops(t, l.b, "lrb") - drops0[1]}
			tr := res.Targets[0]
			check := func(name wire.Direction, d *results.Totals, sender, receiver results.Side, txIface, rxIface string) {
				if d == nil {
					t.Fatalf("no %s figures", name)
				}
				var mss uint32
				for _, st := range res.Streams {
					if st.Direction == name && st.TCP != nil {
						mss = st.TCP.SndMSS
					}
				}
				if mss == 0 {
					t.Fatalf("%s: no snd_mss", name)
				}
				// A segment of mss payload bytes is a frame of mss + 66
				// bytes at the qdisc: Ethernet 14, IPv4 20, TCP 20 and 12
				// of timestamps.
				goodput := capBPS * float64(mss) / float64(mss+66)
				tx := samplePackets(firstSample(t, res, sender), txIface, false)
				rx := samplePackets(firstSample(t, res, receiver), rxIface, true)
				t.Logf("%s: sent %d bytes (%.1f Mbit/s), received %d (%.1f Mbit/s) of %.1f the link carries; segments sent %d (%s tx %d), received %d (%s rx %d); %d retransmits",
					name, d.SentBytes, d.SentBPS/1e6, d.ReceivedBytes, d.ReceivedBPS/1e6, goodput/1e6,
					d.SentPackets, txIface, tx, d.ReceivedPackets, rxIface, rx, d.Retransmits)
				// 1% for the bucket and the receiver's backlog at the
				// window's start.
				if d.ReceivedBPS > goodput*1.01 {
					t.Errorf("%s: received %.2f Mbit/s in the window, more than the link carries (%.2f)", name, d.ReceivedBPS/1e6, goodput/1e6)
				}
				if d.ReceivedBytes > d.SentBytes+allow || d.SentBytes > d.ReceivedBytes+allow {
					t.Errorf("%s: sent %d bytes, received %d: further apart than the buffers (%d) allow", name, d.SentBytes, d.ReceivedBytes, allow)
				}
				if dir == wire.Bidir {
					return // each interface carries one direction's data and the other's acks
				}
				// TCP counts a segment each time it hands it to the qdisc,
				// the interface when it leaves the qdisc: they differ by
				// what the qdisc held at the window's edges, by what it
				// dropped (sent again), and by 25% for the edges of the
				// samples and TCP's small-queue throttling on a busy
				// machine. Counting the warmup would double the figure.
				slack := queued/uint64(mss+66) + tx*25/100
				if d.SentPackets+slack < tx || d.SentPackets > tx+slack+drops[txIface]+d.Retransmits {
					t.Errorf("%s: %d segments sent in the window, %s sent %d packets in it (its qdisc dropped %d, held up to %d; %d retransmits)",
						name, d.SentPackets, txIface, tx, drops[txIface], queued/uint64(mss+66), d.Retransmits)
				}
				if !closeTo(d.ReceivedPackets, rx, 0.05) {
					t.Errorf("%s: %d segments received in the window, %s received %d packets in it", name, d.ReceivedPackets, rxIface, rx)
				}
			}
			if dir != wire.Reverse {
				check(wire.Forward, tr.Forward, "client", "server", "lra", "lrb")
			}
			if dir != wire.Forward {
				check(wire.Reverse, tr.Reverse, "server", "client", "lrb", "lra")
			}
		})
	}
}

func TestBindNotLocal(t *testing.T) {
	l := newLab(t, &Server{})
	cfg := l.config(udpSpec(time.Second, wire.Rate{}))
	cfg.Bind = mustAddr("10.99.0.77")
	_, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "not on this host") {
		t.Fatalf("err = %v", err)
	}
}

func TestNothingListening(t *testing.T) {
	l := newLab(t, &Server{})
	cfg := l.config(udpSpec(time.Second, wire.Rate{}))
	cfg.Targets = []string{"10.99.0.2:1"}
	_, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "nothing listening") {
		t.Fatalf("err = %v", err)
	}
	cfg.Targets = []string{"10.99.0.3"}
	cfg.DialTimeout = 500 * time.Millisecond
	_, err = Run(context.Background(), cfg)
	if err == nil || !(strings.Contains(err.Error(), "unreachable") || strings.Contains(err.Error(), "no answer")) {
		t.Fatalf("err = %v", err)
	}
}

func TestFrameOverMTU(t *testing.T) {
	l := newLab(t, &Server{})
	cfg := l.config(udpSpec(time.Second, wire.Rate{}))
	cfg.FrameSize = 1600
	_, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "MTU") {
		t.Fatalf("err = %v", err)
	}
}

func TestInterruptedRunReturnsPartial(t *testing.T) {
	l := newLab(t, &Server{})
	ctx, cancel := context.WithCancel(context.Background())
	cfg := l.config(udpSpec(20*time.Second, wire.Rate{PPS: 10000}))
	cfg.FrameSize = 64
	cfg.OnInterval = func(results.IntervalStats) { cancel() }
	start := time.Now()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || time.Since(start) > 5*time.Second {
		t.Fatalf("interrupted %v after %s", res.Interrupted, time.Since(start))
	}
	if res.Summary.SentPackets == 0 || res.Summary.ReceivedPackets == 0 {
		t.Fatalf("partial result empty: %+v", res.Summary.Totals)
	}
	if res.Summary.LossRatio > 0.01 {
		t.Errorf("loss %.3f in a partial run: the server did not get the client's counts", res.Summary.LossRatio)
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestMultipleTargets(t *testing.T) {
	srv := &Server{}
	l := newLab(t, srv)
	// A second address on the server's interface, and a second listener of
	// the same server on it (serve --listen A --listen B).
	l.b.AddAddr(t, "lrb", "10.99.0.3/24")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var second string
	if err := l.b.Do(func() error {
		ln, err := net.Listen("tcp", "10.99.0.3:0")
		if err != nil {
			return err
		}
		second = ln.Addr().String()
		go func() { done <- srv.Serve(ctx, ln) }()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-done })
	cfg := l.config(udpSpec(700*time.Millisecond, wire.Rate{PPS: 10000}))
	cfg.Targets = append(cfg.Targets, second)
	cfg.FrameSize = 64
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Targets) != 2 {
		t.Fatalf("%d targets", len(res.Targets))
	}
	var sum uint64
	for i, tr := range res.Targets {
		t.Logf("target %s: sent %d received %d (%.0f pps)", tr.Target, tr.SentPackets, tr.ReceivedPackets, tr.ReceivedPPS)
		if tr.ReceivedPackets == 0 || tr.Forward == nil {
			t.Errorf("target %d received nothing", i)
		}
		sum += tr.ReceivedPackets
	}
	if res.Summary.ReceivedPackets != sum {
		t.Errorf("summary received %d, targets add up to %d", res.Summary.ReceivedPackets, sum)
	}
	if res.Targets[0].ServerID == "" || res.Targets[0].ServerID != res.Targets[1].ServerID {
		t.Errorf("server ids %q %q: one serve process", res.Targets[0].ServerID, res.Targets[1].ServerID)
	}
	// Each target gets the asked rate.
	if r := res.Summary.SentPPS; r > 2*10000*1.02 {
		t.Errorf("sent %.0f pps for 2 targets at 10 kpps", r)
	}
}

func TestRingEngine(t *testing.T) {
	l := newLab(t, &Server{})
	cfg := l.config(udpSpec(1200*time.Millisecond, wire.Rate{PPS: 20000}))
	cfg.Engine = "ring"
	cfg.FrameSize = 64
	cfg.Spec.Ports = 2
	cfg.Spec.Streams = 2 // from two source ports per destination port
	cfg.Spec.XDP = true
	before := ifStats(t, l.b, "lrb")
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Streams) != 4 {
		t.Errorf("%d streams, want 2 ports × 2", len(res.Streams))
	}
	for _, st := range res.Streams {
		if st.ReceivedPackets == 0 || st.ReceivedPackets != st.SentPackets {
			t.Errorf("stream %d: sent %d, received %d", st.Stream, st.SentPackets, st.ReceivedPackets)
		}
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "not by flow") }) {
		t.Errorf("notes %q: nothing says the ring's flows do not spread over a veth's queues", res.Notes)
	}
	// The interval lines count what the rings send while they run.
	if len(res.Intervals) == 0 || res.Intervals[0].SentPPS < 10000 {
		t.Errorf("intervals %+v: the first second sent under half the asked 20 kpps", res.Intervals)
	}
	rx := ifStats(t, l.b, "lrb").rxPk - before.rxPk
	s := res.Summary
	t.Logf("ring: sent %d, received %d, lrb rx %d, xdp %+v", s.SentPackets, s.ReceivedPackets, rx, res.Targets[0].XDP)
	if s.SentPackets == 0 || s.LostPackets > s.SentPackets/100 {
		t.Fatalf("sent %d, lost %d", s.SentPackets, s.LostPackets)
	}
	if !closeTo(s.ReceivedPackets, rx, 0.005) {
		t.Errorf("received %d, lrb received %d", s.ReceivedPackets, rx)
	}
	if x := res.Targets[0].XDP; x == nil || (x.Error == "" && !closeTo(x.Packets, s.ReceivedPackets, 0.01)) {
		t.Errorf("xdp %+v for %d received", x, s.ReceivedPackets)
	}
}
