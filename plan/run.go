package plan

import (
	"context"
	"errors"
	"fmt"
	"io"

	"linerate/ceiling"
	"linerate/results"
	"linerate/tune"
)

// Runner runs a plan: its rounds one after the other, or a matrix's
// cells, each for the matrix's rounds, with the matrix's tune plan held
// applied over the "tune on" cells. It knows nothing of how a round
// reaches its hosts: Round does that (fleet, in `linerate run`).
type Runner struct {
	// Round runs one round of pl (the plan, or a cell's): every flow at
	// once. Its error is for a round that could not start; a flow that
	// failed once started is in the set.
	Round func(ctx context.Context, pl *Plan) (*results.FlowSet, error)
	// Tune is a matrix's tune plan (matrix: tune: FILE), planned against
	// the system before anything runs; nil without one.
	Tune *tune.Held
	// Undo says how the tune plan's changes are undone if the run is
	// killed: "'linerate tune rollback'".
	Undo string
	// Progress gets a line as each round starts, and what the tune plan
	// did.
	Progress io.Writer
	// Bus is the plan's bus, with which each matrix cell's ports and
	// ceiling are worked out (nil: no bus).
	Bus *ceiling.Bus
}

// Run runs pl into res: its rounds (Rounds, Errors), or with a matrix
// its cells (Matrix) and the tune plan's record (Tune). A round that
// fails stops its plan or cell, and the next cell runs; ctx ending stops
// the run where it is. With a tune plan, the run ends with it rolled
// back, whatever ended it. A plan none of whose rounds ran has nothing
// to show: its error (res.Err) is returned.
func (r *Runner) Run(ctx context.Context, pl *Plan, res *Result) error {
	if pl.Matrix != nil {
		res.Matrix, res.Tune = r.matrix(ctx, pl)
		return nil
	}
	res.Rounds, res.Errors = r.rounds(ctx, pl, "")
	if len(res.Rounds) == 0 && len(res.Errors) > 0 {
		return res.Err()
	}
	return nil
}

// rounds runs a plan's rounds, one after the other until one fails or
// ctx ends: the sets measured and the error that stopped it. what
// prefixes each round's line (the matrix's cell).
func (r *Runner) rounds(ctx context.Context, pl *Plan, what string) ([]results.FlowSet, []string) {
	var sets []results.FlowSet
	for round := 1; round <= pl.Rounds && ctx.Err() == nil; round++ {
		fmt.Fprintf(r.Progress, "%sround %d of %d: %d flows for %s after a %s warmup\n", what, round, pl.Rounds, len(pl.Flows), pl.Duration, pl.Warmup)
		set, err := r.Round(ctx, pl)
		if set != nil {
			set.AddConntrack()
			sets = append(sets, *set)
		}
		if err != nil {
			return sets, []string{err.Error()}
		}
	}
	return sets, nil
}

// matrix runs every cell of pl's matrix, each for the matrix's rounds
// (a round that fails goes in its cell's errors, and the next cell
// runs). The tune plan is applied before the first "tune on" cell and
// rolled back when the last cell ends or the run is interrupted; if it
// cannot be applied, those cells say so and do not run.
func (r *Runner) matrix(ctx context.Context, pl *Plan) ([]CellResult, *TuneRun) {
	var rec *TuneRun
	if r.Tune != nil {
		rec = &TuneRun{File: pl.Matrix.Tune, Netns: r.Tune.Plan().Netns}
	}
	var out []CellResult
	var tuneErr error
	cells := pl.Matrix.Cells()
	for i, c := range cells {
		if ctx.Err() != nil {
			break
		}
		cp := pl.CellPlan(c)
		cr := CellResult{Key: c.Key, Flows: c.Flows, Size: c.Size, MSS: c.MSS, Tune: c.Tune}
		if c.Rate != nil {
			cr.Rate = c.Rate.Text
		}
		if c.Tune == TuneOn && rec != nil && !r.Tune.Applied() && tuneErr == nil {
			tuneErr = r.applyTune(ctx, rec)
		}
		if c.Tune == TuneOn && tuneErr != nil {
			cr.Errors = []string{"the tune plan was not applied: " + tuneErr.Error()}
		} else {
			cr.Rounds, cr.Errors = r.rounds(ctx, cp, fmt.Sprintf("cell %d of %d (%s): ", i+1, len(cells), c.Key))
		}
		cr.Summarize()
		if ce, err := cp.ExpectCell(r.Bus); err == nil {
			cr.Measure(cp, ce)
		}
		out = append(out, cr)
	}
	if rec != nil {
		r.releaseTune(ctx, rec)
	}
	return out, rec
}

// applyTune applies the tune plan and records it; on failure nothing is
// left changed.
func (r *Runner) applyTune(ctx context.Context, rec *TuneRun) error {
	changes, err := r.Tune.Apply(ctx)
	for _, c := range changes {
		rec.Changes = append(rec.Changes, TuneChange{Kind: string(c.Kind), Target: c.Target, From: c.From, To: c.To})
	}
	if err != nil {
		rec.Errors = append(rec.Errors, err.Error())
		fmt.Fprintf(r.Progress, "tune: %s: not applied: %v\n", rec.File, err)
		return err
	}
	rec.Applied = true
	fmt.Fprintf(r.Progress, "tune: applied %d changes of %s (journalled: %s undoes them if this run is killed)\n", len(rec.Changes), rec.File, r.Undo)
	return nil
}

// releaseTune rolls back what applyTune changed, even when ctx has ended
// (Ctrl-C), and records it.
func (r *Runner) releaseTune(ctx context.Context, rec *TuneRun) {
	if !r.Tune.Applied() {
		return
	}
	if err := r.Tune.Release(ctx); err != nil {
		rec.Errors = append(rec.Errors, fmt.Sprintf("rollback incomplete, the journal keeps what is left for 'linerate tune rollback': %v", err))
		fmt.Fprintf(r.Progress, "tune: %s\n", rec.Errors[len(rec.Errors)-1])
		return
	}
	rec.RolledBack = true
	fmt.Fprintf(r.Progress, "tune: rolled back the %d changes of %s\n", len(rec.Changes), rec.File)
}

// RunError is a plan's run that failed, for its exit code: where (a
// matrix's cell, the tune plan) and the first error recorded there, as
// the result keeps it. A flow that failed in a round is a
// *results.FlowsError; errors.As finds either.
type RunError struct {
	// Cell is the matrix cell's key; "" outside a cell.
	Cell string
	// Tune is the tune plan's file when the failure is its own.
	Tune string
	// Err is what failed.
	Err error
}

func (e *RunError) Error() string {
	switch {
	case e.Tune != "":
		return fmt.Sprintf("tune plan %s: %v", e.Tune, e.Err)
	case e.Cell != "":
		return fmt.Sprintf("cell %s: %v", e.Cell, e.Err)
	}
	return e.Err.Error()
}

func (e *RunError) Unwrap() error { return e.Err }

// Err is the first failure of the run, nil when there was none: the
// error that stopped its rounds, a failed flow in a round
// (results.FlowSet.Err), the tune plan's error, a cell's error, or a
// failed flow in a cell's round, in that order.
func (r *Result) Err() error {
	if len(r.Errors) > 0 {
		return &RunError{Err: errors.New(r.Errors[0])}
	}
	for i := range r.Rounds {
		if err := r.Rounds[i].Err(); err != nil {
			return err
		}
	}
	if t := r.Tune; t != nil && len(t.Errors) > 0 {
		return &RunError{Tune: t.File, Err: errors.New(t.Errors[0])}
	}
	for _, c := range r.Matrix {
		if len(c.Errors) > 0 {
			return &RunError{Cell: c.Key, Err: errors.New(c.Errors[0])}
		}
		for i := range c.Rounds {
			if err := c.Rounds[i].Err(); err != nil {
				return err
			}
		}
	}
	return nil
}
