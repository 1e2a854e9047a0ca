package search

import (
	"context"
	"fmt"
	"math"
	"time"
)

// measurement is one trial as the bounds see it.
type measurement struct {
	rate float64
	dur  time.Duration
	loss float64
	// bound is false for a trial that must not bound an interval: the
	// initial max-rate trial once a closer one was made.
	bound bool
}

type searcher struct {
	cfg   Config
	trial Trial
	db    []measurement
	res   Result
	// expand counts, per goal, the external steps of the current phase.
	expand map[string]int
}

// Run searches every goal of cfg together, calling trial for each trial.
func Run(ctx context.Context, cfg Config, trial Trial) (Result, error) {
	if err := cfg.check(); err != nil {
		return Result{}, err
	}
	s := newSearcher(cfg, trial)
	if err := s.initial(ctx); err != nil {
		return s.res, err
	}
	for i := 1; i <= s.final(); i++ {
		if err := s.phase(ctx, i); err != nil {
			return s.res, err
		}
	}
	if err := s.confirm(ctx); err != nil {
		return s.res, err
	}
	s.results()
	return s.res, nil
}

// newSearcher is a search of cfg (checked) by trial, its result saying
// how long the final trials run.
func newSearcher(cfg Config, trial Trial) *searcher {
	s := &searcher{cfg: cfg, trial: trial}
	s.res.FinalTrial, s.res.LongestTrial, s.res.Buffering = cfg.FinalTrial, cfg.LongestTrial, cfg.Buffering
	if cfg.Buffering == nil {
		s.res.LongestTrial = 0
	}
	return s
}

// final is the index of the final phase.
func (s *searcher) final() int { return s.cfg.Phases + 1 }

// duration is the trial duration of phase i: the initial one for the
// initial phase and the first intermediate, then geometrically longer up
// to the final one.
func (s *searcher) duration(i int) time.Duration {
	c := s.cfg
	switch {
	case i >= s.final():
		return c.FinalTrial
	case i <= 1:
		return c.InitialTrial
	}
	f := float64(c.FinalTrial) / float64(c.InitialTrial)
	return time.Duration(float64(c.InitialTrial) * math.Pow(f, float64(i-1)/float64(c.Phases)))
}

// widthGoal is the relative width phase i aims for: the precision in the
// final phase, doubled (in log space) for each phase before it.
func (s *searcher) widthGoal(i int) float64 {
	return doubled(s.cfg.Precision, s.final()-max(i, 1))
}

func (s *searcher) run(ctx context.Context, phase int, p Purpose, goal string, rate float64) (TrialResult, error) {
	if len(s.res.Trials) >= s.cfg.MaxTrials {
		return TrialResult{}, fmt.Errorf("%w after %d trials", ErrTooManyTrials, len(s.res.Trials))
	}
	if err := ctx.Err(); err != nil {
		return TrialResult{}, err
	}
	spec := TrialSpec{Rate: rate, Duration: s.duration(phase)}
	capped := false
	if b := s.cfg.Buffering; b != nil && spec.Duration == s.cfg.FinalTrial {
		spec.Duration, capped = b.Trial(rate, s.cfg.FinalTrial, s.cfg.LongestTrial)
	}
	r, err := s.trial(ctx, spec)
	if err != nil {
		return r, fmt.Errorf("trial at %.0f frames/s for %v: %w", rate, spec.Duration, err)
	}
	s.res.Trials = append(s.res.Trials, Record{Phase: phase, Purpose: p, Goal: goal, Spec: spec, Result: r, Loss: r.LossRatio(), Capped: capped})
	// A final-duration trial made longer for the buffering still counts
	// as one of the final duration: the phase's duration keys the bounds.
	s.db = append(s.db, measurement{rate: rate, dur: s.duration(phase), loss: r.LossRatio(), bound: true})
	return r, nil
}

// goalResult is goal g's result from its final-phase bounds, with the
// longest final trial its rate passed.
func (s *searcher) goalResult(g Goal, lo, hi float64, failed bool) GoalResult {
	res := GoalResult{Goal: g, Rate: lo, Upper: hi, Failed: failed}
	if failed {
		res.Rate = 0
		return res
	}
	for _, t := range s.res.Trials {
		if t.Spec.Duration >= s.cfg.FinalTrial && t.Spec.Rate == lo && t.Loss <= g.LossRatio && t.Spec.Duration >= res.Trial {
			res.Trial, res.Capped = t.Spec.Duration, t.Capped
		}
	}
	return res
}

// initial measures at the maximum rate, then at the forwarding rate it
// achieved (the maximum receive rate, MRR), then one width step from there
// towards where the lowest-loss goal's bound must lie.
func (s *searcher) initial(ctx context.Context) error {
	c := s.cfg
	first := c.Goals[0]
	r, err := s.run(ctx, 0, PurposeMax, "", c.MaxRate)
	if err != nil {
		return err
	}
	if r.LossRatio() <= first.LossRatio {
		return nil // every goal passes at the maximum
	}
	w := s.widthGoal(0)
	mrr := math.Max(c.MinRate, math.Min(stepDown(c.MaxRate, w), r.ForwardingRate(TrialSpec{Duration: s.duration(0)})))
	r, err = s.run(ctx, 0, PurposeMRR, "", mrr)
	if err != nil {
		return err
	}
	next := stepUp(mrr, w)
	if r.LossRatio() > first.LossRatio {
		next = math.Min(stepDown(mrr, w), r.ForwardingRate(TrialSpec{Duration: s.duration(0)}))
	}
	if next > c.MinRate && next < c.MaxRate {
		if _, err := s.run(ctx, 0, PurposeNarrow, "", next); err != nil {
			return err
		}
		// From here on, search outwards from the narrow trial rather than
		// bisect towards the maximum.
		s.db[0].bound = false
	}
	return nil
}

// bounds are, for goal g among trials of duration d, the slowest rate that
// failed (hi) and the fastest that passed below it (lo); 0 when none.
// Taking the slowest failure makes a noisy device's bounds conservative.
func (s *searcher) bounds(g Goal, d time.Duration) (lo, hi float64) {
	for _, m := range s.db {
		if m.bound && m.dur == d && m.loss > g.LossRatio && (hi == 0 || m.rate < hi) {
			hi = m.rate
		}
	}
	for _, m := range s.db {
		if m.bound && m.dur == d && m.loss <= g.LossRatio && (hi == 0 || m.rate < hi) && m.rate > lo {
			lo = m.rate
		}
	}
	return lo, hi
}

// phase runs phase i until every goal has both bounds at this phase's
// duration, no wider than its width goal (or the goal passes at the
// maximum, or fails at the minimum).
func (s *searcher) phase(ctx context.Context, i int) error {
	s.expand = map[string]int{}
	for {
		rate, p, goal, ok := s.next(i)
		if !ok {
			return nil
		}
		if _, err := s.run(ctx, i, p, goal, rate); err != nil {
			return err
		}
	}
}

// next picks the next trial of phase i: for the first goal not done yet,
// a bound of the previous phase to re-measure at this phase's duration
// (or their middle), an external step when a bound is missing, or a
// bisection when the interval is too wide.
func (s *searcher) next(i int) (float64, Purpose, string, bool) {
	c := s.cfg
	d, pd := s.duration(i), s.duration(i-1)
	w := s.widthGoal(i)
	for _, g := range c.Goals {
		lo, hi := s.bounds(g, d)
		plo, phi := s.bounds(g, pd)
		if pd == d {
			plo, phi = 0, 0
		}
		switch {
		case hi > 0 && hi <= c.MinRate:
			continue // fails even at the minimum
		case lo >= c.MaxRate:
			continue // passes at the maximum
		case lo > 0 && hi > 0:
			if width(lo, hi) <= w {
				continue
			}
			return math.Sqrt(lo * hi), PurposeBisect, g.Name, true
		case lo == 0 && hi == 0:
			switch {
			case plo >= c.MaxRate && i < s.final():
				// Passed at the maximum already: only the final duration
				// can tell more.
				continue
			case plo > 0 && phi > 0 && width(plo, phi) > w:
				// One measurement in the middle of the previous interval,
				// at most twice this phase's width, and one re-measured
				// bound end this phase.
				return math.Sqrt(plo * phi), PurposeBisect, g.Name, true
			case plo > 0:
				return plo, PurposeRemeasure, g.Name, true
			case phi > 0:
				return phi, PurposeRemeasure, g.Name, true
			}
			return c.MaxRate, PurposeExternal, g.Name, true
		case hi == 0: // lo only: find where it fails
			if phi > lo {
				return phi, PurposeRemeasure, g.Name, true
			}
			return math.Min(c.MaxRate, stepUp(lo, s.external(g, w))), PurposeExternal, g.Name, true
		default: // hi only: find where it passes
			if plo > 0 && plo < hi {
				return plo, PurposeRemeasure, g.Name, true
			}
			return math.Max(c.MinRate, stepDown(hi, s.external(g, w))), PurposeExternal, g.Name, true
		}
	}
	return 0, "", "", false
}

// external is the width of goal g's next external step: the phase's
// width goal, times Expansion for each step already taken, at most 1/2.
func (s *searcher) external(g Goal, w float64) float64 {
	n := s.expand[g.Name]
	s.expand[g.Name] = n + 1
	return math.Min(0.5, w*math.Pow(s.cfg.Expansion, float64(n)))
}

// confirm runs one more final-duration trial at each goal's rate. A rate
// that fails its confirmation becomes an upper bound and the final phase
// resumes below it.
func (s *searcher) confirm(ctx context.Context) error {
	d := s.cfg.FinalTrial
	for {
		redo := false
		for _, g := range s.cfg.Goals {
			lo, _ := s.bounds(g, d)
			if lo == 0 || s.passes(g, lo, d) >= 2 {
				continue
			}
			r, err := s.run(ctx, s.final(), PurposeConfirm, g.Name, lo)
			if err != nil {
				return err
			}
			if r.LossRatio() > g.LossRatio {
				redo = true
				break
			}
		}
		if !redo {
			return nil
		}
		if err := s.phase(ctx, s.final()); err != nil {
			return err
		}
	}
}

// passes counts the trials of duration d at rate that met goal g.
func (s *searcher) passes(g Goal, rate float64, d time.Duration) int {
	n := 0
	for _, m := range s.db {
		if m.dur == d && m.rate == rate && m.loss <= g.LossRatio {
			n++
		}
	}
	return n
}

func (s *searcher) results() {
	for _, g := range s.cfg.Goals {
		lo, hi := s.bounds(g, s.cfg.FinalTrial)
		s.res.Goals = append(s.res.Goals, s.goalResult(g, lo, hi, lo == 0))
	}
}
