package report

import (
	"strings"
	"testing"

	"linerate/results"
	"linerate/wire"
)

// TestBenchTextRRUL: an RRUL result prints its streams with their marks,
// the latency idle, under load and induced, and the goodput each way.
func TestBenchTextRRUL(t *testing.T) {
	res := &results.Result{Spec: wire.Spec{Proto: wire.TCP, Direction: wire.Bidir, Streams: 2, StreamDSCP: []int{0, 46}}}
	res.Streams = []results.StreamResult{
		{Stream: 0, Direction: wire.Forward, Totals: results.Totals{ReceivedBPS: 40e6}, TCP: &results.TCPStat{RTTMicros: 12500}},
		{Stream: 1, Direction: wire.Forward, Totals: results.Totals{ReceivedBPS: 50e6}},
		{Stream: 0, Direction: wire.Reverse, Totals: results.Totals{ReceivedBPS: 45e6, Retransmits: 7}},
		{Stream: 1, Direction: wire.Reverse, Totals: results.Totals{ReceivedBPS: 46e6}},
	}
	res.Summary.LatencyIdle = &results.Latency{Sent: 10, Received: 10, P50: 0.2, P95: 0.3}
	res.Summary.LatencyLoad = &results.Latency{Sent: 50, Received: 50, P50: 20.2, P95: 30.3}
	res.RRUL = results.NewRRUL(res, nil)
	var b strings.Builder
	BenchText(&b, res)
	out := b.String()
	for _, want := range []string{"mark", "BE (0)", "EF (46)", "12.50ms", "up", "down",
		"idle p50 0.200ms p95 0.300ms, under load p50 20.200ms p95 30.300ms: induced +20.000ms at p50, +30.000ms at p95",
		"goodput up 90.00Mb/s, down 91.00Mb/s, 2 streams each way"} {
		if !strings.Contains(out, want) {
			t.Errorf("the text lacks %q:\n%s", want, out)
		}
	}
	res.Summary.LatencyIdle = nil
	res.RRUL = results.NewRRUL(res, nil)
	b.Reset()
	BenchText(&b, res)
	if !strings.Contains(b.String(), "idle unknown (no probe answered)") || !strings.Contains(b.String(), "induced unknown") {
		t.Errorf("without idle probes:\n%s", b.String())
	}
}
