package live

import (
	"bytes"
	"strings"
	"testing"

	"linerate/results"
)

// TestUnknownIntervalNotZero: a bench second no server report measured is
// shown as unknown in the text and adds nothing to /metrics' received
// counter, never a copy of the last rate.
func TestUnknownIntervalNotZero(t *testing.T) {
	s := Snapshot{Bench: &results.IntervalStats{T: 5, SentPPS: 20000, SentBPS: 2e7, ReceivedUnknown: true}}
	var b bytes.Buffer
	if err := WriteText(&b, s, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "received ? pps ? bit/s") {
		t.Errorf("text shows the unknown side as:\n%s", b.String())
	}
	// /metrics holds counters: the unknown second adds nothing to what
	// was received, while what was sent, measured, goes on counting.
	var tot Totals
	tot.addBench(results.IntervalStats{T: 4, SentPPS: 20000, ReceivedPPS: 20000})
	tot.addBench(*s.Bench)
	s.Totals = &tot
	b.Reset()
	if err := WriteMetrics(&b, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "linerate_bench_received_packets_total 80000\n") ||
		!strings.Contains(b.String(), "linerate_bench_sent_packets_total 100000\n") {
		t.Errorf("metrics:\n%s", b.String())
	}
}
