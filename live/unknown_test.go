package live

import (
	"bytes"
	"strings"
	"testing"

	"linerate/results"
)

// TestUnknownIntervalNotZero: a bench second no server report measured is
// shown as unknown in the text and left out of /metrics, never as 0.
func TestUnknownIntervalNotZero(t *testing.T) {
	s := Snapshot{Bench: &results.IntervalStats{T: 5, SentPPS: 20000, SentBPS: 2e7, ReceivedUnknown: true}}
	var b bytes.Buffer
	if err := WriteText(&b, s, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "received ? pps ? bit/s") {
		t.Errorf("text shows the unknown side as:\n%s", b.String())
	}
	b.Reset()
	if err := WriteMetrics(&b, s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "linerate_bench_received_packets_per_second") ||
		!strings.Contains(b.String(), "linerate_bench_sent_packets_per_second") {
		t.Errorf("metrics:\n%s", b.String())
	}
}
