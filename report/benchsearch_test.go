package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"linerate/ledger"
	"linerate/results"
	"linerate/search"
)

func TestBenchSearch(t *testing.T) {
	led := &ledger.Ledger{Sent: 8297, Received: 8269, Lost: 28, Entries: []ledger.Entry{
		{Host: "client", Side: ledger.Sender, Place: ledger.SenderQdisc, Packets: 28, Evidence: []string{"tbf 1: on lra: 28 dropped"}}}}
	r := &results.Result{Search: []results.SizeSearch{
		{SizeResult: search.SizeResult{Size: "1518", FrameBytes: 1518, NDRPPS: 8223, NDRBps: 8223 * 1518 * 8, LossBeginsPPS: 8306, CeilingPPS: 8256,
			FinalTrial: 2 * time.Second, LongestTrial: 20 * time.Second, NDRTrial: 2 * time.Second, PDRTrial: 20 * time.Second, PDRCapped: true,
			Buffering: &search.Buffering{Frames: 255.7, CeilingFPS: 8256, What: "tbf 1: on lra in client: queue 256,072 B + bucket 131,072 B"},
			Trials:    []search.Record{{Purpose: search.PurposeMax, Spec: search.TrialSpec{Rate: 9081, Duration: 100 * time.Millisecond}}},
			Latency:   []search.Record{{Purpose: search.PurposeLatency, Spec: search.TrialSpec{Rate: 822}, Result: search.TrialResult{Latency: &search.Latency{P50: 90 * time.Microsecond}}}}},
			Ledger: led},
		{SizeResult: search.SizeResult{Size: "64", FrameBytes: 64, NDRPPS: 300000, CeilingPPS: 1488095, FinalTrial: time.Second,
			Trials: []search.Record{{Purpose: search.PurposeMax, Spec: search.TrialSpec{Rate: 300000}}}},
			Notes: []string{"the trial at 150k pps for 1s (try 1 of 3): client's lra was down (set down) from 0.2 s to 0.4 s (0.2 s): its loss was the cut's, so it ran again"}},
	}}
	var b bytes.Buffer
	if err := BenchSearch(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{"8,223", "99.6 %", "latency 1518 B at 822 pps: p50 90µs", "1518 B, at 8,306 pps (loss begins): where the 28 lost packets died",
		"sender-qdisc", "note: 64 B: no loss at the fastest rate tried",
		"note: 64 B: the trial at 150k pps for 1s (try 1 of 3): client's lra was down",
		"trials: 1518 B: final 2s, over the ceiling of 8,256 fps up to 20s, so that they fill the path's buffering of 255 frames (tbf 1: on lra in client: queue 256,072 B + bucket 131,072 B) 2 times over; the NDR rests on 2s; the PDR rests on 20s (capped: too short to overflow the buffering)",
		"trials: 64 B: final 1s; the path's buffering ahead of its ceiling of 1,488,095 fps is not known"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "note: 1518 B") {
		t.Error("a note on 1518 B, which lost frames at its fastest rate")
	}
}
