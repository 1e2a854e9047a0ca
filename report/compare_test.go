package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"linerate/autotune"
	"linerate/history"
	"linerate/results"
	"linerate/wire"
)

// benchRun is a saved UDP bench that sent sent pps and lost loss of it.
func benchRun(t *testing.T, id string, sent, loss float64) *history.Run {
	t.Helper()
	r := &results.Result{Schema: results.ResultSchema, Spec: wire.Spec{Proto: wire.UDP, Direction: wire.Forward}}
	s := &r.Summary
	s.Seconds, s.SentPPS, s.ReceivedPPS, s.LossRatio = 10, sent, sent*(1-loss), loss
	for i := range 5 {
		r.Intervals = append(r.Intervals, results.IntervalStats{T: float64(i + 1), SentPPS: sent, ReceivedPPS: sent * (1 - loss) * (1 + 0.001*float64(i))})
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return &history.Run{Entry: history.Entry{Schema: history.Schema, ID: id, Kind: history.KindBench, Time: time.Unix(0, 0)}, Result: b}
}

func line(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return l
		}
	}
	return ""
}

// The demo's side by side: the sender sent twice as much after tuning.
func TestCompareOfferedLoads(t *testing.T) {
	var b strings.Builder
	if err := Compare(&b, benchRun(t, "before", 100e3, 0), benchRun(t, "after", 200e3, 0.1445)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log(out)
	if !strings.Contains(out, "offered different loads") || !strings.Contains(out, "100.0 kpps sent (as fast as possible)") {
		t.Errorf("no note that the loads differ:\n%s", out)
	}
	if l := line(out, "offered load"); !strings.Contains(l, "offered loads differ") {
		t.Errorf("offered load line %q", l)
	}
	if l := line(out, "loss"); !strings.Contains(l, "not judged: offered loads differ") || strings.Contains(l, "worse") {
		t.Errorf("loss judged across different loads: %q", l)
	}

	b.Reset()
	if err := Compare(&b, benchRun(t, "before", 100e3, 0), benchRun(t, "after", 102e3, 0.1445)); err != nil {
		t.Fatal(err)
	}
	out = b.String()
	if strings.Contains(out, "offered different loads") || !strings.Contains(line(out, "offered load"), "same offered load") {
		t.Errorf("2 %% apart called different loads:\n%s", out)
	}
	if l := line(out, "loss"); strings.Contains(l, "not judged") {
		t.Errorf("loss at the same load not judged: %q", l)
	}
}

// tuneRun is a saved tune auto run whose baseline rounds are base and
// whose one change, kept, was measured in rounds with.
func tuneRun(t *testing.T, id string, base, with []float64) *history.Run {
	t.Helper()
	round := func(pps float64) autotune.Round { return autotune.Round{Proto: wire.UDP, ReceivedPPS: pps} }
	rep := &autotune.Report{Schema: autotune.Schema, Goal: autotune.GoalThroughput, Metric: autotune.MetricRxPPS}
	for _, v := range base {
		rep.Baseline = append(rep.Baseline, round(v))
	}
	tr := autotune.Trial{Outcome: autotune.Kept}
	for _, v := range with {
		tr.Rounds = append(tr.Rounds, round(v))
	}
	rep.Trials = []autotune.Trial{tr}
	rep.Before, rep.After = round(base[len(base)/2]), round(with[len(with)/2])
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return &history.Run{Entry: history.Entry{Schema: history.Schema, ID: id, Kind: history.KindTuneAuto, Time: time.Unix(0, 0)}, Result: b}
}

// Two tune auto runs that kept the same change: A's rounds with it were
// 563.9 to 675.6 kpps (a 17 % spread), B's median 607.7. The figure
// compared is the median after tuning, so its noise is the spread of the
// rounds after tuning, not of the baseline's (quiet here).
func TestCompareTuneAutoNoise(t *testing.T) {
	a := tuneRun(t, "a", []float64{400e3, 401e3, 402e3}, []float64{563.9e3, 646.4e3, 675.6e3})
	b := tuneRun(t, "b", []float64{400e3, 400.5e3, 401e3}, []float64{590e3, 607.7e3, 640e3})
	var out strings.Builder
	if err := Compare(&out, a, b); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	l := line(out.String(), "received_pps after tuning")
	if !strings.Contains(l, "within the noise") || !strings.Contains(l, "±17.3 %") {
		t.Errorf("the same tuning twice: %q, want within the noise of A's rounds after tuning (±17.3 %%)", l)
	}
}
