package search

import (
	"context"
	"math"
)

// Binary is the plain RFC 2544 search, for comparison: for each goal on
// its own, a final-duration trial at the maximum rate, then bisection of
// [MinRate, MaxRate] (in log space, the same widths as Run) until the
// interval is no wider than the precision, then a confirmation trial at
// the rate found.
func Binary(ctx context.Context, cfg Config, trial Trial) (Result, error) {
	if err := cfg.check(); err != nil {
		return Result{}, err
	}
	s := newSearcher(cfg, trial)
	final := s.final()
	for _, g := range cfg.Goals {
		lo, hi := cfg.MinRate, 0.0
		passed := false
		for rate := cfg.MaxRate; ; rate = math.Sqrt(lo * hi) {
			r, err := s.run(ctx, final, PurposeBisect, g.Name, rate)
			if err != nil {
				return s.res, err
			}
			if r.LossRatio() <= g.LossRatio {
				lo, passed = rate, true
			} else {
				hi = rate
			}
			if hi == 0 || width(lo, hi) <= cfg.Precision {
				break
			}
		}
		failed := !passed
		if passed {
			r, err := s.run(ctx, final, PurposeConfirm, g.Name, lo)
			if err != nil {
				return s.res, err
			}
			if r.LossRatio() > g.LossRatio {
				hi, failed = lo, true // the plain search has no way back
			}
		}
		s.res.Goals = append(s.res.Goals, s.goalResult(g, lo, hi, failed))
	}
	return s.res, nil
}
