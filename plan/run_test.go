package plan

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"linerate/results"
	"linerate/tune"
)

// roundsOf is a Round that answers each call with the next of outs: a
// set whose one flow ran (or failed, "flow: ..."), or an error that kept
// the round from starting.
func roundsOf(outs ...string) (func(context.Context, *Plan) (*results.FlowSet, error), *[]string) {
	var ran []string
	return func(_ context.Context, pl *Plan) (*results.FlowSet, error) {
		out := outs[len(ran)%len(outs)]
		ran = append(ran, strings.Join(pl.Sample, ","))
		switch {
		case strings.HasPrefix(out, "error: "):
			return nil, errors.New(strings.TrimPrefix(out, "error: "))
		case strings.HasPrefix(out, "flow: "):
			return &results.FlowSet{Flows: []results.FlowRun{{From: "a", Error: strings.TrimPrefix(out, "flow: ")}}}, nil
		}
		return &results.FlowSet{Flows: []results.FlowRun{{From: "a", Result: &results.Result{}}}}, nil
	}, &ran
}

// errNone marks a run none of whose rounds ran: Run returns its error.
var errNone = errors.New("no round ran")

func TestRunnerRounds(t *testing.T) {
	pl, err := Parse("p.yaml", []byte(matrixHosts))
	if err != nil {
		t.Fatal(err)
	}
	pl.Rounds = 3
	for _, c := range []struct {
		outs   []string
		rounds int
		runErr error
		err    string
	}{
		{[]string{"ok"}, 3, nil, ""},
		{[]string{"ok", "error: b unreachable"}, 1, nil, "b unreachable"},
		{[]string{"ok", "flow: refused"}, 3, nil, "every flow failed: refused"},
		{[]string{"error: b unreachable"}, 0, errNone, ""},
	} {
		round, _ := roundsOf(c.outs...)
		var progress bytes.Buffer
		res := &Result{}
		err := (&Runner{Round: round, Progress: &progress}).Run(context.Background(), pl, res)
		var re *RunError
		if (c.runErr == nil) != (err == nil) || (err != nil && (!errors.As(err, &re) || err.Error() != "b unreachable")) || len(res.Rounds) != c.rounds {
			t.Errorf("%q: %d rounds, %v; want %d, %v", c.outs, len(res.Rounds), err, c.rounds, c.runErr)
			continue
		}
		if c.runErr != nil {
			continue
		}
		if got := res.Err(); (got == nil) != (c.err == "") || (got != nil && got.Error() != c.err) {
			t.Errorf("%q: Err() = %v, want %q", c.outs, got, c.err)
		}
		if !strings.Contains(progress.String(), "round 1 of 3: 3 flows") {
			t.Errorf("%q: progress %q", c.outs, progress.String())
		}
	}
	// A failed flow is a *results.FlowsError, a round that could not
	// start a *RunError.
	var fe *results.FlowsError
	var re *RunError
	if !errors.As((&Result{Rounds: []results.FlowSet{{Flows: []results.FlowRun{{Error: "x"}}}}}).Err(), &fe) ||
		!errors.As((&Result{Errors: []string{"x"}}).Err(), &re) {
		t.Error("Err's types")
	}
}

// A matrix with a tune plan: the "off" cells run as the system is, the
// plan is applied before the first "on" cell and rolled back at the end;
// a cell whose round fails says so and the next runs.
func TestRunnerMatrixTune(t *testing.T) {
	pl, err := Parse("m.yaml", []byte(matrixHosts+"matrix: {sets: [[a-box], [bee]], rounds: 1, tune: tuned.json}\n"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	backlog := filepath.Join(root, "proc/sys/net/core/netdev_max_backlog")
	if err := os.MkdirAll(filepath.Dir(backlog), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(backlog, []byte("1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func() string { b, _ := os.ReadFile(backlog); return strings.TrimSpace(string(b)) }
	sys := tune.NewDir(root)
	tp, err := tune.PlanItems(sys, []tune.Item{{Kind: "sysctl", Target: "net.core.netdev_max_backlog", Value: "8192"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	held := tune.Hold(tune.NewStore(t.TempDir()), sys, tp, time.Second)
	var during []string
	base, _ := roundsOf("ok", "error: bee unreachable")
	round := func(ctx context.Context, cp *Plan) (*results.FlowSet, error) {
		during = append(during, read())
		return base(ctx, cp)
	}
	var progress bytes.Buffer
	res := &Result{}
	if err := (&Runner{Round: round, Tune: held, Undo: "'linerate tune rollback'", Progress: &progress}).Run(context.Background(), pl, res); err != nil {
		t.Fatal(err)
	}
	if strings.Join(during, ",") != "1000,1000,8192,8192" || read() != "1000" {
		t.Errorf("the sysctl during the four cells %q, after %s; want off, off, on, on and put back", during, read())
	}
	tr := res.Tune
	if tr == nil || !tr.Applied || !tr.RolledBack || len(tr.Changes) != 1 || tr.Changes[0].To != "8192" || tr.File != pl.Matrix.Tune {
		t.Errorf("tune record %+v", tr)
	}
	if len(res.Matrix) != 4 || len(res.Matrix[1].Errors) != 1 || len(res.Matrix[2].Rounds) != 1 {
		t.Fatalf("cells %+v", res.Matrix)
	}
	var re *RunError
	if err := res.Err(); !errors.As(err, &re) || re.Cell != res.Matrix[1].Key || err.Error() != "cell "+re.Cell+": bee unreachable" {
		t.Errorf("Err() = %v, want the second cell's", err)
	}
	for _, want := range []string{"tune: applied 1 changes of " + pl.Matrix.Tune + " (journalled: 'linerate tune rollback' undoes them", "tune: rolled back the 1 changes of " + pl.Matrix.Tune} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
}
