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
