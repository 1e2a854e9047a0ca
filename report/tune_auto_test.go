package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"linerate/autotune"
	"linerate/diagnose"
	"linerate/tune"
	"linerate/wire"
)

func autoReport() *autotune.Report {
	round := func(pps, loss, cpu float64) autotune.Round {
		return autotune.Round{Proto: "udp", Seconds: 5, ReceivedPPS: pps, ReceivedPackets: uint64(pps * 5), LossRatio: loss,
			CPUSeconds: cpu * pps * 5 / 1e6, CPUPerMpkt: cpu, CPUSampled: true}
	}
	sp := wire.Spec{Proto: "udp", Direction: wire.Forward, Duration: wire.Seconds(5 * time.Second),
		Warmup: wire.Seconds(time.Second)}
	return &autotune.Report{
		Schema: autotune.Schema, Diagnosed: true, Rig: "lab demo: lan → router → wan (10.231.2.2:7557)", DUT: "router (netns lr-demo-router)",
		Netns: "lr-demo-router", Goal: autotune.GoalThroughput, Metric: autotune.MetricRxPPS, Rounds: 3, MaxRounds: 8, Confidence: 0.9833, MinGain: 0.02,
		Spec: &sp, FrameSize: 64,
		Baseline: []autotune.Round{round(100e3, 0.4, 10), round(101e3, 0.4, 10), round(99e3, 0.4, 10)},
		Before:   round(100e3, 0.4, 10), After: round(150e3, 0.1, 7),
		Findings: []diagnose.Finding{{Rule: "rps-off", Subject: "lan", Severity: diagnose.Critical, Summary: "lan has one rx queue and RPS is off"}},
		Skipped:  []tune.Skip{{Item: tune.Item{Kind: "sysctl", Target: "net.core.rps_sock_flow_entries", Value: "32768"}, Reason: "global, not in the namespace"}},
		Trials: []autotune.Trial{
			{Candidate: autotune.Candidate{Item: tune.Item{Kind: "rps", Target: "lan/rx-0", Value: "1"}, Source: "diagnose rps-off",
				Changes: []tune.Change{{Kind: "rps", Target: "lan/rx-0", From: "none", To: "1"}}},
				Rounds:  []autotune.Round{round(150e3, 0.1, 7), round(150e3, 0.1, 7), round(150e3, 0.1, 7)},
				Without: []autotune.Round{round(100e3, 0.4, 10), round(100e3, 0.4, 10), round(100e3, 0.4, 10)},
				Verdict: autotune.Verdict{Keep: true, Decision: autotune.Better, Before: 100e3, After: 150e3, Change: 0.5, Gain: 0.5,
					GainLow: 0.455, GainHigh: 0.557, Confidence: 0.9833, Pairs: 3, Noise: 0.051},
				Outcome: autotune.Kept, Why: "+50.0 % (interval +45.5 % to +55.7 % at 98.3 %, 3 pairs): clear of the 2.0 % threshold", Record: "20260101T000000.000000001-7"},
			{Candidate: autotune.Candidate{Item: tune.Item{Kind: "rps-flow", Target: "lan/rx-0", Value: "4096"}, Source: "diagnose rps-off",
				Changes: []tune.Change{{Kind: "rps-flow", Target: "lan/rx-0", From: "0", To: "4096"}}},
				Rounds:  []autotune.Round{round(149e3, 0.1, 7), round(149e3, 0.1, 7), round(149e3, 0.1, 7), round(149e3, 0.1, 7)},
				Without: []autotune.Round{round(150e3, 0.1, 7), round(150e3, 0.1, 7), round(150e3, 0.1, 7), round(150e3, 0.1, 7)},
				Verdict: autotune.Verdict{Decision: autotune.Unclear, Before: 150e3, After: 149e3, Change: -1.0 / 150, Gain: -1.0 / 150,
					GainLow: -0.03, GainHigh: 0.025, Confidence: 0.9833, Pairs: 8, Noise: 0.0275},
				Outcome: autotune.Undecided, Why: "undecided after 8 pairs (16 rounds, the most --max-rounds allows): -0.7 % (interval -3.0 % to +2.5 % at 98.3 %, 8 pairs): straddles the 2.0 % threshold", Restored: true},
			{Candidate: autotune.Candidate{Item: tune.Item{Kind: "mtu", Target: "lan", Value: "9000"}, Source: "--try",
				Changes: []tune.Change{{Kind: "mtu", Target: "lan", From: "1500", To: "9000"}}},
				Rounds: []autotune.Round{}, Outcome: autotune.Refused, Why: "the system refused it: invalid argument", Restored: true},
		},
		Records: []string{"20260101T000000.000000001-7"},
		Notes:   []string{"CPU figures are the whole machine's"},
	}
}

func TestTuneAutoText(t *testing.T) {
	var b bytes.Buffer
	if err := TuneAuto(&b, autoReport()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"tune auto: lab demo: lan → router → wan (10.231.2.2:7557)\n",
		"tuning router (netns lr-demo-router); goal throughput (received_pps)\n",
		"judged after 3 pairs and each one more up to 8; kept when the gain's 98.3 % interval (Student's t on the pairs' ratios) lies above 2.0 %",
		"WITHOUT", "INTERVAL", "PAIRS",
		"+45.5 % to +55.7 %",
		"undecided (rolled back)",
		"each round: udp forward, 64-byte frames, as fast as possible, 5s measured after 1s of warmup\n",
		"baseline: 100.0 kpps received, loss 40.00 %, CPU 10 s/Mpkt (3 rounds, spread 2.0 %)\n",
		"finding: rps-off lan (critical): lan has one rx queue and RPS is off\n",
		"skipped: sysctl:net.core.rps_sock_flow_entries=32768: global, not in the namespace\n",
		"CHANGE",
		"rps lan/rx-0",
		"none → 1",
		"+50.0 %",
		"kept",
		"rolled back",
		"-0.7 %",
		"restored, read back",
		"mtu lan",
		"refused",
		"before → after: 100.0 kpps → 150.0 kpps (+50.0 %); all figures:",
		"kept 1 change on netns lr-demo-router (journal 20260101T000000.000000001-7): undo with 'linerate tune rollback'",
		"note: CPU figures are the whole machine's\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// One trial table, the demo's too: why each change was tried is a
	// column of it.
	if !regexp.MustCompile(`(?m)^CHANGE +FROM → TO +TRIED FOR +WITHOUT +WITH +GAIN +INTERVAL +PAIRS +RESULT +WHY$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^rps lan/rx-0 +none → 1 +rps-off +100\.0 kpps`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^mtu lan +1500 → 9000 +--try +- `).MatchString(out) {
		t.Errorf("the trial table lacks its TRIED FOR column:\n%s", out)
	}
	// The table's columns line up: every row of it has its WITHOUT column
	// where the header has it.
	lines := strings.Split(out, "\n")
	var col int
	for _, l := range lines {
		if strings.HasPrefix(l, "CHANGE") {
			col = strings.Index(l, "WITHOUT")
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "rps lan/rx-0") && strings.Index(l, "100.0 kpps") != col {
			t.Errorf("row %q: WITHOUT not at column %d", l, col)
		}
	}
}

func TestTuneAutoDryRunAndInterrupted(t *testing.T) {
	r := autoReport()
	r.DryRun, r.Trials, r.Records = true, nil, nil
	r.Candidates = []autotune.Candidate{{Item: tune.Item{Kind: "rps", Target: "lan/rx-*", Value: "1"}, Source: "--try",
		Changes: []tune.Change{{Kind: "rps", Target: "lan/rx-0", From: "none", To: "1"}, {Kind: "rps", Target: "lan/rx-1", From: "none", To: "1"}}}}
	var b bytes.Buffer
	if err := TuneAuto(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dry run: 1 candidate, nothing applied", "rps lan/rx-0 (+1 more)", "--try"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, b.String())
		}
	}

	r = autoReport()
	r.Interrupted = true
	r.Trials = r.Trials[:1]
	b.Reset()
	if err := TuneAuto(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "interrupted: the change being tried, if any, was rolled back; the kept ones stay applied") {
		t.Errorf("interrupted output:\n%s", b.String())
	}
}

// TestTuneAutoJSON: the JSON form carries the schema, the goal and each
// trial's verdict under stable names.
func TestTuneAutoJSON(t *testing.T) {
	var b bytes.Buffer
	if err := JSON(&b, autoReport()); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	trials, _ := doc["trials"].([]any)
	if doc["schema"] != float64(1) || doc["goal"] != "throughput" || doc["metric"] != "received_pps" || len(trials) != 3 {
		t.Fatalf("json: %s", b.String())
	}
	first := trials[0].(map[string]any)
	v := first["verdict"].(map[string]any)
	if first["outcome"] != "kept" || first["record"] == "" || v["change"] != 0.5 || first["item"].(map[string]any)["kind"] != "rps" {
		t.Errorf("first trial: %v", first)
	}
}
