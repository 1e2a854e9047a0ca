package page

import (
	"testing"

	"linerate/autotune"
	"linerate/history"
	"linerate/report"
	"linerate/tune"
)

// TestTuneAutoPairs: a tune auto run judged on interleaved pairs shows
// each trial's pairs, the gain's interval and the pairs it took, the
// undecided outcome, and draws the rounds without and with each change.
func TestTuneAutoPairs(t *testing.T) {
	round := func(pps float64) autotune.Round {
		return autotune.Round{Proto: "udp", ReceivedPPS: pps, ReceivedPackets: uint64(pps)}
	}
	rep := &autotune.Report{Schema: autotune.Schema, Goal: autotune.GoalThroughput, Metric: autotune.MetricRxPPS,
		Rounds: 3, MaxRounds: 8, Confidence: 0.9833, MinGain: 0.02,
		Baseline: []autotune.Round{round(100e3), round(101e3), round(99e3)}, Before: round(100e3), After: round(100e3),
		Trials: []autotune.Trial{{
			Candidate: autotune.Candidate{Item: tune.Item{Kind: "rps", Target: "lan/rx-0", Value: "1"}, Source: "--try",
				Changes: []tune.Change{{Kind: "rps", Target: "lan/rx-0", From: "none", To: "1"}}},
			Rounds:  []autotune.Round{round(120e3), round(90e3), round(130e3)},
			Without: []autotune.Round{round(100e3), round(95e3), round(100e3)},
			Verdict: autotune.Verdict{Decision: autotune.Unclear, Before: 100e3, After: 120e3, Change: 0.13, Gain: 0.13,
				GainLow: -0.2, GainHigh: 0.6, Confidence: 0.9833, Pairs: 3},
			Outcome: autotune.Undecided, Why: "undecided after 3 pairs", Restored: true}}}
	run, err := report.NewRun(history.KindTuneAuto, []string{"linerate", "tune", "auto"}, rep)
	if err != nil {
		t.Fatal(err)
	}
	page := render(t, run)
	checkOffline(t, page)
	contains(t, page, "pairs of adjacent rounds, without and with it", "-20.0 % to +60.0 %, 3 pairs", "undecided (rolled back)", "100.0 kpps without, 120.0 kpps with",
		"without the change", "with the change", "98.3 % interval")
	if charts(page) != 1 {
		t.Errorf("%d charts, want the rounds' chart", charts(page))
	}
}
