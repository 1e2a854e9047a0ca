package report

import (
	"strings"
	"testing"

	"linerate/results"
)

func TestBenchIntervalUnknown(t *testing.T) {
	var b strings.Builder
	BenchInterval(&b, results.IntervalStats{T: 4, SentPPS: 20000, SentBPS: 20.48e6, ReceivedUnknown: true}, false)
	line := b.String()
	recv := line[strings.Index(line, "recv"):]
	if strings.Contains(recv, "pps") || strings.Count(recv, "?") != 2 {
		t.Errorf("line with the received side unknown: %q, want recv ? ?", line)
	}
	if !strings.Contains(line, "sent  20.0kpps") {
		t.Errorf("line %q lost the known sent side", line)
	}
}
