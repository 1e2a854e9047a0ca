//go:build !small

package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"linerate/internal/usage"
	"linerate/plan"
	"linerate/tune"
)

// abTune is a matrix's tune plan (matrix: tune: FILE): read and planned
// against the system before anything runs, applied as one journalled
// transaction before the first "tune on" cell, and rolled back when the
// run ends, however it ends. It changes the system where linerate run
// runs, or the namespace the file names.
type abTune struct {
	stateDir string
	store    tune.Store
	sys      tune.System
	plan     *tune.Plan
	tx       *tune.Transaction
	rec      plan.TuneRun
}

// openABTune reads and plans pl's tune file; every item must be possible
// here. A mistake is the plan's file:line.
func openABTune(pl *plan.Plan, stateDir string) (*abTune, error) {
	m := pl.Matrix
	where := fmt.Sprintf("%s:%d: matrix: tune", pl.File, m.TuneLine)
	pf, err := readTuneFile(where, m.Tune, tune.ReadPlanFile)
	if err != nil {
		return nil, err
	}
	sys, err := tune.Open(pf.Netns)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	p, err := tune.PlanItems(sys, pf.Items, nil)
	if err != nil {
		sys.Close()
		return nil, usage.Errorf("%s: %s: %w", where, m.Tune, err)
	}
	return &abTune{stateDir: stateDir, store: tune.NewStore(stateDir), sys: sys, plan: p, rec: plan.TuneRun{File: m.Tune, Netns: pf.Netns}}, nil
}

// apply makes the plan's changes as one transaction, the journal on disk
// first; on failure nothing is left changed.
func (t *abTune) apply(ctx context.Context, progress io.Writer) error {
	unlock, err := t.store.Lock(tuneLockWait)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := t.store.DropStale(t.sys); err != nil {
		return err
	}
	tx, err := t.store.Begin(t.sys, t.plan)
	if err != nil {
		return err
	}
	for _, e := range tx.Record().Entries {
		t.rec.Changes = append(t.rec.Changes, plan.TuneChange{Kind: string(e.Kind), Target: e.Target, From: e.From, To: e.To})
	}
	if err := tx.Apply(ctx); err != nil {
		return err
	}
	t.tx, t.rec.Applied = tx, true
	fmt.Fprintf(progress, "tune: applied %d changes of %s (journalled: 'linerate tune rollback%s' undoes them if this run is killed)\n",
		len(t.rec.Changes), t.rec.File, stateDirFlag(t.stateDir))
	return nil
}

// close rolls back what apply changed, even when ctx has ended (Ctrl-C),
// and returns what the run did with the plan.
func (t *abTune) close(ctx context.Context, progress io.Writer) *plan.TuneRun {
	defer t.sys.Close()
	if t.tx == nil {
		return &t.rec
	}
	unlock, err := t.store.Lock(tuneLockWait)
	if err == nil {
		err = t.tx.Rollback(context.WithoutCancel(ctx))
		unlock()
	}
	if err != nil {
		t.rec.Errors = append(t.rec.Errors, fmt.Sprintf("rollback incomplete, the journal keeps what is left for 'linerate tune rollback': %v", err))
		fmt.Fprintf(progress, "tune: %s\n", t.rec.Errors[len(t.rec.Errors)-1])
		return &t.rec
	}
	t.rec.RolledBack = true
	fmt.Fprintf(progress, "tune: rolled back the %d changes of %s\n", len(t.rec.Changes), t.rec.File)
	return &t.rec
}

// requireRootFor refuses a run that would change the system without the
// rights to; look is the flag that only looks.
func requireRootFor(what, look string) error {
	if os.Geteuid() != 0 {
		return usage.Errorf("%s changes this host's settings: run it as root (or look first with %s)", what, look)
	}
	return nil
}
