package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

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
