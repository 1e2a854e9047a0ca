package results

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"linerate/box"
	"linerate/wire"
)

// TestHistogramQuantiles compares the histogram's percentiles with exact
// ones over durations spread from nanoseconds to seconds: each within its
// bucket's 1/64, min and max exact.
func TestHistogramQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h, a, b Histogram
	var all []time.Duration
	for i := range 100000 {
		d := time.Duration(r.ExpFloat64() * float64(time.Duration(1)<<(i%30)))
		all = append(all, d)
		h.Add(d)
		if i%2 == 0 {
			a.Add(d)
		} else {
			b.Add(d)
		}
	}
	a.Merge(&b)
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := all[int(q*float64(len(all))+0.999999)-1]
		got := h.Quantile(q)
		if diff := float64(got - exact); diff > float64(exact)/32+1 || -diff > float64(exact)/32+1 {
			t.Errorf("q%.3f: %s, exact %s", q, got, exact)
		}
		if a.Quantile(q) != got {
			t.Errorf("q%.3f: merged halves give %s, the whole %s", q, a.Quantile(q), got)
		}
	}
	l := h.Latency()
	if l.Min != float64(all[0])/1e3 || l.Max != float64(all[len(all)-1])/1e3 {
		t.Errorf("min %v max %v, want %v %v", l.Min, l.Max, all[0], all[len(all)-1])
	}
	if !(l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Errorf("out of order: %+v", l)
	}
	var empty Histogram
	if empty.Latency() != (RRLatency{}) || empty.Quantile(0.5) != 0 {
		t.Error("an empty histogram has figures")
	}
}

// TestBucketsCover checks every bucket's middle falls in that bucket.
func TestBucketsCover(t *testing.T) {
	for i := range 64 * histSub {
		v := bucketValue(i)
		if v < 0 {
			break // past int64
		}
		if bucket(v) != i {
			t.Fatalf("bucket %d: middle %d falls in %d", i, v, bucket(v))
		}
	}
}

func TestConntrackUse(t *testing.T) {
	samples := []box.Rates{
		{},
		{Conntrack: &box.ConntrackRate{Start: 10, Entries: 90, Max: 100}},
		{Conntrack: &box.ConntrackRate{Start: 90, Entries: 100, Max: 100, EarlyDrop: 3}},
		{Conntrack: &box.ConntrackRate{Start: 100, Entries: 80, Max: 100, Drop: 2}},
	}
	use, ok := Conntrack("router", samples)
	want := ConntrackUse{Host: "router", Start: 10, Peak: 100, End: 80, Max: 100, Drop: 2, EarlyDrop: 3}
	if !ok || use != want || !use.Full() {
		t.Errorf("got %+v %v, want %+v", use, ok, want)
	}
	if _, ok := Conntrack("x", samples[:1]); ok {
		t.Error("conntrack from samples without it")
	}
	if (ConntrackUse{Peak: 50, Max: 100}).Full() {
		t.Error("half a table is full")
	}
}

// TestSummarizeRR: a transaction test's summary is its transactions, each
// a packet, and says what set the rate; none completed, it cannot tell.
func TestSummarizeRR(t *testing.T) {
	res := &Result{Spec: wire.Spec{Streams: 2, RR: &wire.RR{Request: 100, Response: 1000}},
		RR:      &RR{Seconds: 4, Transactions: 8000, Answered: 8005, Timeouts: 10, Errors: 2, Latency: RRLatency{Mean: 1000}},
		Targets: []TargetResult{{ServerID: "s1"}},
		Samples: []Sample{{Side: SideServer, Target: 0, Rates: box.Rates{Seconds: 4, CPU: []box.CPUUse{{Busy: 50}}, Process: &box.ProcessUse{Busy: 40.025}}}}}
	SummarizeRR(res, []box.Rates{{Seconds: 4, CPU: []box.CPUUse{{Busy: 50}}, Process: &box.ProcessUse{Busy: 25}}}, "")
	s := res.Summary
	if s.Seconds != 4 || s.SentPackets != 8012 || s.ReceivedPackets != 8000 || s.LostPackets != 12 || s.ReceivedPPS != 2000 ||
		s.SentBytes != 800000 || s.ReceivedBytes != 8000000 || s.ReceivedBPS != 16e6 {
		t.Errorf("summary %+v", s.Totals)
	}
	if p := s.ProcessCPUSeconds.Client; p == nil || *p != 1 {
		t.Errorf("client process CPU %v, want 1", p)
	}
	// Per million transactions completed (8000), not per packet of the
	// summary's sent and received; none per gigabit.
	if p := s.ProcessCPUSecondsPerMpkt.Client; p == nil || *p != 125 || s.ProcessCPUSecondsPerGbit.Client != nil {
		t.Errorf("client process per M transactions %v, per Gbit %v; want 125 and none", p, s.ProcessCPUSecondsPerGbit.Client)
	}
	if p := s.ProcessCPUSecondsPerMpkt.Server; p == nil || *p != 200 {
		t.Errorf("server process per M transactions answered %v, want 200", p)
	}
	if s.LimitedBy != LimitRoundTrip || !strings.Contains(s.LimitedWhy, "(2)") {
		t.Errorf("limited by %q: %s", s.LimitedBy, s.LimitedWhy)
	}
	res.RR = &RR{Seconds: 4, Timeouts: 3}
	SummarizeRR(res, nil, "")
	if s := res.Summary; s.LimitedBy != LimitUnknown || s.LostPackets != 3 || s.ReceivedPackets != 0 || s.LossRatio != 1 {
		t.Errorf("nothing completed: %+v", s)
	}
}

// TestFlowSetLeavesTransactionsOut: a set's packet total does not add a
// transaction flow's summary (transactions) to a UDP flow's packets.
func TestFlowSetLeavesTransactionsOut(t *testing.T) {
	udp := &Result{Summary: Summary{Totals: Totals{Seconds: 2, SentPackets: 100, ReceivedPackets: 100}}}
	rr := &Result{RR: &RR{Seconds: 2, Transactions: 50}, Spec: wire.Spec{RR: &wire.RR{Request: 1, Response: 1}}}
	SummarizeRR(rr, nil, "")
	fs := &FlowSet{Flows: []FlowRun{{Result: udp}, {Result: rr}}}
	fs.Sum()
	if fs.Total.ReceivedPackets != 100 || fs.Total.SentPackets != 100 {
		t.Errorf("total %+v, want the UDP flow's 100 packets alone", fs.Total)
	}
}
