package fleet

import (
	"strings"
	"testing"
	"time"

	"linerate/results"
	"linerate/wire"
)

func TestFailed(t *testing.T) {
	ok := results.FlowRun{From: "a", Result: &results.Result{}}
	bad := results.FlowRun{From: "b", Error: "flow 2 b → c: refused"}
	inResult := results.FlowRun{From: "c", Result: &results.Result{Errors: []string{"c: server died"}}}
	for _, c := range []struct {
		name  string
		flows []results.FlowRun
		want  string // "" for no error
	}{
		{"none failed", []results.FlowRun{ok, ok}, ""},
		{"one of two", []results.FlowRun{ok, bad}, "1 of 2 flows failed: flow 2 b → c: refused"},
		{"every one", []results.FlowRun{bad, bad}, "every flow failed: flow 2 b → c: refused"},
		{"an error inside a result counts", []results.FlowRun{ok, inResult}, "1 of 2 flows failed: c: server died"},
	} {
		err := Failed(&results.FlowSet{Flows: c.flows})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want none", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestLead(t *testing.T) {
	sp := wire.Spec{Warmup: wire.Seconds(time.Second)}
	if got := Lead(sp, 3*time.Second); got != time.Second {
		t.Errorf("no probes: lead %s, want the warmup", got)
	}
	sp.ProbeInterval = wire.Seconds(100 * time.Millisecond)
	if got := Lead(sp, 3*time.Second); got != 4*time.Second {
		t.Errorf("with probes: lead %s, want idle + warmup", got)
	}
}

func TestStartSpread(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	res := func(at time.Duration, warmup time.Duration) *results.Result {
		return &results.Result{Time: t0.Add(at), Spec: wire.Spec{Warmup: wire.Seconds(warmup)}}
	}
	set := &results.FlowSet{Flows: []results.FlowRun{
		{Result: res(0, time.Second)},
		{Error: "flow 2: refused"}, // no result: not counted
		{Result: res(30*time.Millisecond, time.Second)},
		{Result: res(-5*time.Millisecond, time.Second)},
		// A shorter warmup opens the window earlier.
		{Result: res(1000*time.Millisecond, 0)},
	}}
	d, ok := startSpread(set)
	if !ok || d != 35*time.Millisecond {
		t.Errorf("spread %s %v, want 35ms", d, ok)
	}
	if _, ok := startSpread(&results.FlowSet{Flows: set.Flows[:2]}); ok {
		t.Errorf("one flow with a result has a spread")
	}
}
