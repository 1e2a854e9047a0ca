package report

import (
	"strings"
	"testing"

	"linerate/results"
	"linerate/wire"
)

// TestBenchTextSizes: a bench of the simple IMIX says so in its first line
// and counts each size on both ends; a single size gets neither.
func TestBenchTextSizes(t *testing.T) {
	sizes := []wire.SizePart{{Payload: 18, Weight: 7}, {Payload: 524, Weight: 4}, {Payload: 1472, Weight: 1}}
	r := &results.Result{
		Spec:      wire.Spec{Proto: wire.UDP, Direction: wire.Forward, Payload: 1472, Sizes: sizes, Ports: 1, Streams: 1, Threads: 1, Duration: wire.Seconds(2e9)},
		FrameSize: 1518, Engine: "ring",
		Targets: []results.TargetResult{{Target: "b:7557"}},
	}
	r.Summary.Sizes = []results.SizeTotals{
		{Frame: 64, Payload: 18, SentPackets: 7000, ReceivedPackets: 6993, LostPackets: 7, SentShare: 7.0 / 12, ReceivedShare: 0.5831},
		{Frame: 570, Payload: 524, SentPackets: 4000, ReceivedPackets: 4000, SentShare: 4.0 / 12, ReceivedShare: 0.3335},
		{Frame: 1518, Payload: 1472, SentPackets: 1000, ReceivedPackets: 1000, SentShare: 1.0 / 12, ReceivedShare: 0.0834},
	}
	var b strings.Builder
	BenchText(&b, r)
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{"frames imix (64:7,570:4,1518:1, frame bytes:weight)", "64 B", "58.33 %", "6993", "1518 B", "8.34 %"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the text", want)
		}
	}
	if strings.Contains(out, "1518-byte frames") {
		t.Error("a mix described as its largest frame")
	}
	r.Spec.Sizes, r.Summary.Sizes = nil, nil
	b.Reset()
	BenchText(&b, r)
	if out := b.String(); !strings.Contains(out, "1518-byte frames (1472-byte payload)") || strings.Contains(out, "share") {
		t.Errorf("one size:\n%s", out)
	}
}
