package results

import (
	"errors"
	"testing"
)

func TestFlowSetErr(t *testing.T) {
	ok := FlowRun{From: "a", Result: &Result{}}
	bad := FlowRun{From: "b", Error: "flow 2 b → c: refused"}
	inResult := FlowRun{From: "c", Result: &Result{Errors: []string{"c: server died"}}}
	for _, c := range []struct {
		name     string
		flows    []FlowRun
		want     string // "" for no error
		failed   int
		firstErr string
	}{
		{"none failed", []FlowRun{ok, ok}, "", 0, ""},
		{"one of two", []FlowRun{ok, bad}, "1 of 2 flows failed: flow 2 b → c: refused", 1, "flow 2 b → c: refused"},
		{"every one", []FlowRun{bad, bad}, "every flow failed: flow 2 b → c: refused", 2, "flow 2 b → c: refused"},
		{"an error inside a result counts", []FlowRun{ok, inResult}, "1 of 2 flows failed: c: server died", 1, "c: server died"},
	} {
		err := (&FlowSet{Flows: c.flows}).Err()
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v, want none", c.name, err)
			}
			continue
		}
		var fe *FlowsError
		if !errors.As(err, &fe) || err.Error() != c.want || fe.Failed != c.failed || fe.Of != len(c.flows) || fe.First != c.firstErr {
			t.Errorf("%s: %v (%+v), want %q", c.name, err, fe, c.want)
		}
	}
}
