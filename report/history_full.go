//go:build !small

package report

import (
	"fmt"
	"io"

	"linerate/autotune"
	"linerate/history"
	"linerate/internal/units"
	"linerate/plan"
	"linerate/results"
)

// The history's views of plans and tune auto, the kinds of run only the
// full build makes (the small build leaves out run and tune auto, and with
// these views the plan and autotune packages and what they link).
func init() {
	moreKinds = append(moreKinds,
		runKind{kind: history.KindPlan, new: func() any { return new(plan.Result) },
			headline: func(result any) (string, bool) {
				r, ok := result.(*plan.Result)
				if !ok {
					return "", false
				}
				switch {
				case len(r.Matrix) > 0:
					return matrixHeadline(r), true
				case len(r.Rounds) == 0:
					return r.Plan + ": no round ran", true
				}
				return fmt.Sprintf("%s: %s", r.Plan, flowsHeadline(&r.Rounds[len(r.Rounds)-1])), true
			},
			figures: func(result any) ([]Figure, bool) {
				r, ok := result.(*plan.Result)
				if !ok || len(r.Rounds) == 0 {
					return nil, ok
				}
				return Figures(&r.Rounds[len(r.Rounds)-1]), true
			},
			offered: func(result any) (results.Offered, bool, bool) {
				r, ok := result.(*plan.Result)
				if !ok || len(r.Rounds) == 0 {
					return results.Offered{}, false, ok
				}
				o, has := offeredOf(&r.Rounds[len(r.Rounds)-1])
				return o, has, true
			},
			compare: func(w io.Writer, a, b *history.Run, ra, rb any) (bool, error) {
				ma, okA := ra.(*plan.Result)
				mb, okB := rb.(*plan.Result)
				if !okA || !okB || ma.Matrix == nil || mb.Matrix == nil {
					return false, nil
				}
				fmt.Fprintf(w, "A  %s  %s\nB  %s  %s\n\n", runName(a), ma.Plan, runName(b), mb.Plan)
				return true, MatrixCompare(w, ma.Matrix, mb.Matrix)
			},
		},
		runKind{kind: history.KindTuneAuto, new: func() any { return new(autotune.Report) },
			headline: func(result any) (string, bool) {
				r, ok := result.(*autotune.Report)
				if !ok {
					return "", false
				}
				return tuneHeadline(r), true
			},
			figures: func(result any) ([]Figure, bool) {
				r, ok := result.(*autotune.Report)
				if !ok {
					return nil, false
				}
				// The spread of the rounds the figure is the median of:
				// the last kept change's, not the baseline's.
				var rounds []float64
				for _, rd := range r.AfterRounds() {
					if v, ok := rd.Value(r.Metric); ok {
						rounds = append(rounds, v)
					}
				}
				v, _ := r.After.Value(r.Metric)
				return []Figure{{Name: r.Metric.String() + " after tuning", Value: v, Higher: r.Metric.HigherIsBetter(), PerSecond: rounds,
					format: func(v float64) string { return r.Metric.Format(v) }}}, true
			},
		})
}

// matrixHeadline is a matrix run's line: its cells and their rounds, the
// highest and lowest cell by mean received rate.
func matrixHeadline(r *plan.Result) string {
	var hi, lo *plan.CellResult
	ran := 0
	for i := range r.Matrix {
		c := &r.Matrix[i]
		if len(c.Rounds) == 0 {
			continue
		}
		ran++
		if hi == nil || c.Received.Mean > hi.Received.Mean {
			hi = c
		}
		if lo == nil || c.Received.Mean < lo.Received.Mean {
			lo = c
		}
	}
	s := fmt.Sprintf("%s: matrix, %d of %d cells ran", r.Plan, ran, len(r.Matrix))
	if hi == nil {
		return s
	}
	s += fmt.Sprintf(": highest %s %s", hi.Key, units.Fixed.Unit(hi.Received.Mean, "b/s"))
	if lo != hi {
		s += fmt.Sprintf(", lowest %s %s", lo.Key, units.Fixed.Unit(lo.Received.Mean, "b/s"))
	}
	return s
}

func tuneHeadline(r *autotune.Report) string {
	b, _ := r.Before.Value(r.Metric)
	a, _ := r.After.Value(r.Metric)
	return fmt.Sprintf("%s: %s → %s, %d of %d changes kept", r.Metric, r.Metric.Format(b),
		r.Metric.Format(a), len(r.Kept()), len(r.Trials))
}
