package page

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"linerate/box"
	"linerate/ceiling"
	"linerate/history"
	"linerate/ledger"
	"linerate/results"
	"linerate/wire"
)

// longRun is a synthetic but realistic 10-minute bench: 600 intervals, both
// ends sampled every second with 4 CPUs, a dozen IRQs and 2 NICs, latency,
// drops and a ledger.
func longRun(b testing.TB, cpus int) *history.Run {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	const secs = 600
	t0 := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	noisy := func(v float64) float64 { return v * (1 + 0.05*(rng.Float64()-0.5)) }
	r := &results.Result{Schema: results.ResultSchema, Linerate: "dev", Time: t0, FrameSize: 64, Engine: "ring",
		Spec: wire.Spec{Proto: "udp", Direction: wire.Forward, Duration: wire.Seconds(secs * time.Second),
			Warmup: wire.Seconds(time.Second), Payload: 18, Streams: 1, Ports: 4, Threads: 4}}
	lat := &results.Latency{Sent: 60000, Received: 59990, Min: 0.04, P50: 0.2, P90: 1.1, P99: 4.5, Max: 30}
	r.Summary = results.Summary{LimitedBy: "receiver", LimitedWhy: "the receiver's softirq CPU was saturated",
		PathCeiling: &ceiling.PathLimit{Host: "server", Iface: "eth1", By: "link", What: "1G link", RateBps: 1e9, FPS: 1488095, L2Bps: 761904761, LineBps: 1e9},
		LatencyIdle: &results.Latency{Sent: 50, Received: 50, Min: 0.03, P50: 0.05, P90: 0.07, P99: 0.1, Max: 0.1}, LatencyLoad: lat}
	r.Summary.Seconds, r.Summary.SentPackets, r.Summary.ReceivedPackets = secs, 1.2e6*secs, 1.1e6*secs
	r.Summary.LostPackets = r.Summary.SentPackets - r.Summary.ReceivedPackets
	r.Summary.LossRatio = float64(r.Summary.LostPackets) / float64(r.Summary.SentPackets)
	r.Summary.SentPPS, r.Summary.ReceivedPPS, r.Summary.SentBPS, r.Summary.ReceivedBPS = 1.2e6, 1.1e6, 1.2e6*512, 1.1e6*512
	fwd := r.Summary.Totals
	r.Targets = []results.TargetResult{{Target: "10.0.0.2:7557", Address: "10.0.0.2:7557", Totals: fwd, Forward: &fwd, LatencyLoad: lat}}
	for i := range secs + 1 {
		iv := results.IntervalStats{T: float64(i + 1), Warmup: i == 0, SentPPS: noisy(1.2e6), ReceivedPPS: noisy(1.1e6)}
		iv.SentBPS, iv.ReceivedBPS = iv.SentPPS*512, iv.ReceivedPPS*512
		r.Intervals = append(r.Intervals, iv)
	}
	irqs := []string{"LOC", "RES", "CAL", "TLB", "NMI", "24", "25", "26", "27", "28", "29", "30"}
	for _, side := range []results.Side{"client", "server"} {
		target := -1
		if side == "server" {
			target = 0
		}
		for i := range secs {
			rt := box.Rates{Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i+1) * time.Second), Seconds: 1,
				Interrupts: map[string][]float64{}, SoftIRQs: map[string][]float64{}, NetDev: map[string]box.NetDevRate{},
				UDP: map[string]float64{"InDatagrams": noisy(1.1e6), "RcvbufErrors": noisy(1e5)}}
			for c := range cpus {
				u := box.CPUUse{ID: c, User: noisy(10), System: noisy(20), IRQ: noisy(2), SoftIRQ: noisy(30 + 10*float64(c))}
				u.Busy = u.User + u.System + u.IRQ + u.SoftIRQ
				u.Idle = 100 - u.Busy
				rt.CPU = append(rt.CPU, u)
				rt.Softnet = append(rt.Softnet, box.SoftnetRate{CPU: c, Processed: noisy(2.7e5), Dropped: math.Max(0, noisy(10)-9), TimeSqueeze: noisy(50)})
			}
			for k, l := range irqs {
				per := make([]float64, cpus)
				for c := range per {
					per[c] = noisy(1000 / float64(k+c+1))
				}
				rt.Interrupts[l] = per
			}
			for _, s := range []string{"NET_RX", "NET_TX", "TIMER", "SCHED", "RCU"} {
				per := make([]float64, cpus)
				for c := range per {
					per[c] = noisy(5e4 / float64(c+1))
				}
				rt.SoftIRQs[s] = per
			}
			for _, n := range []string{"eth0", "eth1"} {
				rt.NetDev[n] = box.NetDevRate{RxPps: noisy(1.1e6), TxPps: noisy(1.2e6), RxBps: noisy(5.6e8), TxBps: noisy(6.1e8), RxDrops: noisy(1e4)}
			}
			r.Samples = append(r.Samples, results.Sample{Side: side, Target: target, Rates: rt})
		}
		r.Drops = append(r.Drops, results.EndDrops{Side: side, Target: target, Ifaces: []string{"eth0", "eth1"}, Delta: &box.Drops{
			Seconds: secs, SNMP: map[string]map[string]uint64{"Udp": {"RcvbufErrors": 6e7, "InErrors": 6e7}}}})
	}
	r.Ledger = &ledger.Ledger{Sent: r.Summary.SentPackets, Received: r.Summary.ReceivedPackets, Lost: r.Summary.LostPackets,
		Entries: []ledger.Entry{{Host: "server", Side: ledger.Receiver, Place: ledger.SocketBuffer, Packets: r.Summary.LostPackets,
			Evidence: []string{fmt.Sprintf("Udp RcvbufErrors %d", r.Summary.LostPackets)}}}}
	data, err := json.Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	return &history.Run{Entry: history.Entry{Schema: history.Schema, ID: "20261125-140000-abcd", Kind: history.KindBench, Time: t0,
		Command: []string{"linerate", "bench", "udp", "--to", "10.0.0.2", "--duration", "10m"}, Host: "box"}, Result: data}
}

// countingWriter counts what is written.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkTenMinutes renders the 10-minute run: the time per page (decode
// included) and the page's size.
func BenchmarkTenMinutes(b *testing.B) { benchPage(b, longRun(b, 4)) }

// BenchmarkTenMinutes64CPUs is the run on a box of 64 CPUs.
func BenchmarkTenMinutes64CPUs(b *testing.B) { benchPage(b, longRun(b, 64)) }

// BenchmarkTenMinutesTwice is the same run twice, side by side.
func BenchmarkTenMinutesTwice(b *testing.B) {
	run := longRun(b, 4)
	benchPage(b, run, run)
}

// benchPage renders runs on one page per iteration and reports the page's
// size and the runs' results'.
func benchPage(b *testing.B, runs ...*history.Run) {
	var size int64
	for b.Loop() {
		var w countingWriter
		if err := Write(&w, runs); err != nil {
			b.Fatal(err)
		}
		size = w.n
	}
	var result int
	for _, r := range runs {
		result += len(r.Result)
	}
	b.ReportMetric(float64(size), "page-bytes")
	b.ReportMetric(float64(result), "result-bytes")
}

// A long run's charts are downsampled: no line has more than maxPoints
// points, and the page stays small, also for a box of 64 CPUs.
func TestLongRunDownsampled(t *testing.T) {
	for _, cpus := range []int{4, 64} {
		page := render(t, longRun(t, cpus))
		checkOffline(t, page)
		if len(page) > 5<<20 {
			t.Errorf("%d CPUs: the page of a 10-minute run is %d bytes", cpus, len(page))
		}
		for _, m := range regexp.MustCompile(`points="([^"]*)"`).FindAllStringSubmatch(page, -1) {
			// An area has its top and its base.
			if n := len(strings.Fields(m[1])); n > 2*maxPoints {
				t.Fatalf("%d CPUs: a shape of %d points", cpus, n)
			}
		}
		contains(t, page, "1.1M pps", "73.9 % of the ceiling", "socket-buffer", fmt.Sprintf("server 10.0.0.2:7557 cpu%d", cpus-1))
		if cpus > maxCPULines {
			contains(t, page, fmt.Sprintf("the other %d CPUs", cpus-maxCPULines))
		}
	}
}

// TestLossUnknownShown: a result whose far end died mid-run, its loss not
// counted, shows "unknown" on the loss card and in its target's row, never
// a loss of 0 %.
func TestLossUnknownShown(t *testing.T) {
	fwd := results.Totals{Seconds: 3, SentPackets: 60000, ReceivedPackets: 60000}
	fwd.LossNotCounted()
	r := &results.Result{Spec: wire.Spec{Proto: wire.UDP, Direction: wire.Forward},
		Targets: []results.TargetResult{{Target: "wan", Forward: &fwd, Totals: fwd}}}
	r.Summary.Totals = fwd
	v := newBenchView(r)
	var loss *card
	for i := range v.Cards {
		if v.Cards[i].Label == "loss" {
			loss = &v.Cards[i]
		}
	}
	if loss == nil || loss.Value != "unknown" || !loss.Bad {
		t.Errorf("loss card %+v, want unknown", loss)
	}
	if len(v.Targets) != 1 || v.Targets[0].Loss != "unknown" || v.Targets[0].Lost != "unknown" {
		t.Errorf("target rows %+v, want the loss unknown", v.Targets)
	}
}
