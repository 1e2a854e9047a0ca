package fleet

import (
	"testing"
	"time"

	"linerate/results"
	"linerate/wire"
)

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
