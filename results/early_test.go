package results

import (
	"strings"
	"testing"

	"linerate/wire"
)

// TestFarEndDiedVerdict: a run whose receiver died mid-run, with its
// direction's loss not counted, gets no limit but what happened: the
// reason and when, and no packet counted lost in the summary; a run
// stopped early for another reason, with all its loss counted, is judged
// as any other run.
func TestFarEndDiedVerdict(t *testing.T) {
	run := func(unknown bool) *Result {
		res := &Result{Spec: wire.Spec{Proto: wire.UDP, Direction: wire.Forward, Rate: wire.Rate{PPS: 20000}}, FrameSize: 128,
			StoppedEarly: &StoppedEarly{Reason: "wan: the server's control connection closed mid-run (the server died?): EOF", At: 4, Detected: 4.9}}
		fwd := Totals{Seconds: 3, SentPackets: 78000, ReceivedPackets: 60000, LostPackets: 18000, SentBytes: 78000 * 86, ReceivedBytes: 60000 * 86}
		if unknown {
			fwd.LossNotCounted()
		}
		fwd.rates()
		tr := TargetResult{Target: "wan", Forward: &fwd}
		tr.Totals.Add(fwd)
		res.Targets = []TargetResult{tr}
		res.Summary.Totals.Add(tr.Totals)
		Verdict(res, []ThreadCPU{{Role: "udp-send", Busy: 0.1}})
		return res
	}
	res := run(true)
	s := res.Summary
	if s.LostPackets != 0 || s.LossRatio != 0 || !s.LossUnknown {
		t.Errorf("summary lost %d (%v), unknown %v; want none counted, unknown", s.LostPackets, s.LossRatio, s.LossUnknown)
	}
	if s.LimitedBy != LimitUnknown || !strings.Contains(s.LimitedWhy, "died or failed") || !strings.Contains(s.LimitedWhy, "4.0 s") || !strings.Contains(s.LimitedWhy, "4.9 s") {
		t.Errorf("verdict %q: %q; want none drawn, naming the death and its moment", s.LimitedBy, s.LimitedWhy)
	}
	// With its loss all counted, the run is judged as any other: here,
	// with neither end sampled, a verdict that says what it could not see,
	// not the far end's death.
	if got := run(false).Summary; strings.Contains(got.LimitedWhy, "died or failed") || got.LostPackets != 18000 {
		t.Errorf("a run whose loss was all counted was judged as a death: lost %d, %q", got.LostPackets, got.LimitedWhy)
	}
}

// TestLossRatioLeavesUncountedOut: a sum of two targets, one whose
// receiver died (its loss not counted), takes its loss ratio over the
// packets whose loss was counted only.
func TestLossRatioLeavesUncountedOut(t *testing.T) {
	live := Totals{Seconds: 3, SentPackets: 1000, ReceivedPackets: 900, LostPackets: 100}
	dead := Totals{Seconds: 3, SentPackets: 3000, ReceivedPackets: 2000}
	dead.LossNotCounted()
	var sum Totals
	sum.Add(live)
	sum.Add(dead)
	if sum.LostPackets != 100 || sum.LossRatio != 0.1 || !sum.LossUnknown {
		t.Errorf("sum: lost %d, ratio %v, unknown %v; want 100, 0.1 (of the counted 1000), unknown", sum.LostPackets, sum.LossRatio, sum.LossUnknown)
	}
}
