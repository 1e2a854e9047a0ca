// Package search finds a device's throughput as RFC 2544 defines it (the
// fastest rate at which no frame is lost, NDR) and the partial-drop rate
// (the fastest rate losing at most a given ratio, PDR), both in one
// search, with a final confirmation trial at each rate found.
//
// The method follows FD.io CSIT's Multiple Loss Ratio search (MLRsearch,
// IETF draft-ietf-bmwg-mlrsearch; CSIT report, "MLRsearch tests"): an
// initial phase starts from the forwarding rate measured at the maximum
// rate instead of from the whole range; intermediate phases use short
// trials and coarse widths, each the start of the next, longer and finer
// one; a phase whose bounds are missing searches outwards (external
// search, widening each step) before it bisects; and every trial serves
// every loss ratio at once. docs/search.md describes it and compares it
// with a plain binary search.
//
// Nothing here sends a packet: the caller's Trial does, and the search
// only decides at which rate and for how long. Tests drive it with
// simulated devices.
package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// Goal is one rate to find: the fastest at which at most LossRatio of
// the frames sent are lost.
type Goal struct {
	// Name is "ndr" or "pdr".
	Name      string  `json:"name"`
	LossRatio float64 `json:"loss_ratio"`
}

// NDR is RFC 2544 throughput: no loss at all.
var NDR = Goal{Name: "ndr"}

// PDR is a partial drop rate losing at most ratio (CSIT uses 0.005).
func PDR(ratio float64) Goal { return Goal{Name: "pdr", LossRatio: ratio} }

// TrialSpec is one trial to run: send at Rate frames per second for
// Duration.
type TrialSpec struct {
	Rate     float64       `json:"rate_pps"`
	Duration time.Duration `json:"duration"`
}

// TrialResult is what a trial counted.
type TrialResult struct {
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	// Seconds is how long the trial sent; 0 means the spec's duration.
	Seconds float64 `json:"seconds,omitempty"`
	// Latency is set by trials that measure it (Latency steps).
	Latency *Latency `json:"latency,omitempty"`
}

// LossRatio is the share of frames sent that were not received.
func (r TrialResult) LossRatio() float64 {
	if r.Sent == 0 {
		return 1
	}
	if r.Received >= r.Sent {
		return 0
	}
	return float64(r.Sent-r.Received) / float64(r.Sent)
}

// ForwardingRate is frames received per second.
func (r TrialResult) ForwardingRate(spec TrialSpec) float64 {
	s := r.Seconds
	if s <= 0 {
		s = spec.Duration.Seconds()
	}
	if s <= 0 {
		return 0
	}
	return float64(r.Received) / s
}

// Latency is the round trip of probes during a trial.
type Latency struct {
	P50 time.Duration `json:"p50"`
	P90 time.Duration `json:"p90"`
	P99 time.Duration `json:"p99"`
	Max time.Duration `json:"max"`
}

// Trial runs one trial. It must send at spec.Rate for spec.Duration (the
// search accounts time by the spec, not a clock) and count.
type Trial func(ctx context.Context, spec TrialSpec) (TrialResult, error)

// Config is a search.
type Config struct {
	// Goals are searched together; at least one.
	Goals []Goal
	// MinRate and MaxRate bound the search, in frames per second. MaxRate
	// is the fastest the path could carry (its ceiling); MinRate the
	// slowest worth reporting.
	MinRate, MaxRate float64
	// Precision is the final relative width: the rate found lies within
	// this share below the first failing rate ((hi − lo)/hi ≤ Precision).
	Precision float64
	// FinalTrial is the duration of the trials that decide; InitialTrial
	// that of the first phase (FinalTrial/10, at least 100 ms, when 0).
	FinalTrial, InitialTrial time.Duration
	// Phases is the number of intermediate phases between the initial
	// and the final one (2 when 0; -1 for none).
	Phases int
	// Expansion multiplies the width of each further external search step
	// (4 when 0).
	Expansion float64
	// MaxTrials stops a search that has not converged (200 when 0).
	MaxTrials int
	// Buffering, when known, is what the path holds ahead of its
	// ceiling: a final trial over the ceiling runs long enough to overflow
	// it (Buffering.Trial), up to LongestTrial (10 × FinalTrial when 0).
	Buffering    *Buffering
	LongestTrial time.Duration
}

// Record is one trial the search ran.
type Record struct {
	// Phase is 0 for the initial phase, then 1, 2, ...; the last is the
	// final phase, and confirmation trials are marked by Purpose.
	Phase   int         `json:"phase"`
	Purpose Purpose     `json:"purpose"`
	Goal    string      `json:"goal,omitempty"`
	Spec    TrialSpec   `json:"spec"`
	Result  TrialResult `json:"result"`
	Loss    float64     `json:"loss_ratio"`
	// Capped marks a final trial over the ceiling that the longest trial
	// allowed cut short of what the path's buffering asked.
	Capped bool `json:"capped,omitempty"`
}

// Purpose says why a trial was run.
type Purpose string

// The purposes.
const (
	PurposeMax       Purpose = "max-rate"   // the first trial, at MaxRate
	PurposeMRR       Purpose = "mrr"        // at the forwarding rate measured at MaxRate
	PurposeNarrow    Purpose = "narrow"     // one width step from the MRR trial
	PurposeRemeasure Purpose = "re-measure" // a bound of the previous phase, at this phase's duration
	PurposeExternal  Purpose = "external"   // searching outwards for a missing bound
	PurposeBisect    Purpose = "bisect"     // halving the interval
	PurposeConfirm   Purpose = "confirm"    // the final confirmation at the rate found
	PurposeLatency   Purpose = "latency"    // a latency step at a share of the PDR
)

// GoalResult is the rate found for a goal.
type GoalResult struct {
	Goal Goal `json:"goal"`
	// Rate is the fastest rate that met the goal in a final-duration
	// trial and in its confirmation, frames per second; 0 when even
	// MinRate did not (Failed).
	Rate float64 `json:"rate_pps"`
	// Upper is the slowest final-duration rate that failed the goal: where
	// the loss begins. 0 when MaxRate passed.
	Upper  float64 `json:"upper_pps,omitempty"`
	Failed bool    `json:"failed,omitempty"`
	// Trial is the longest final trial at Rate that met the goal: what the
	// rate rests on. Capped says it was cut to the longest trial allowed
	// while the buffering wanted more: a rate over the ceiling up to
	// Buffering.Hides(Trial, the goal's loss) could pass it.
	Trial  time.Duration `json:"trial_ns,omitempty"`
	Capped bool          `json:"capped,omitempty"`
}

// Result is a finished search.
type Result struct {
	Goals  []GoalResult `json:"goals"`
	Trials []Record     `json:"trials"`
	// FinalTrial is the final trials' duration at or below the ceiling;
	// LongestTrial the most a final trial over it may run; Buffering what
	// set their length (nil: not known, every final trial ran FinalTrial).
	FinalTrial   time.Duration `json:"final_trial_ns"`
	LongestTrial time.Duration `json:"longest_trial_ns,omitempty"`
	Buffering    *Buffering    `json:"buffering,omitempty"`
}

// Goal returns the result of the goal named name.
func (r Result) Goal(name string) (GoalResult, bool) {
	for _, g := range r.Goals {
		if g.Goal.Name == name {
			return g, true
		}
	}
	return GoalResult{}, false
}

// TrialSeconds is the time spent in trials.
func (r Result) TrialSeconds() float64 {
	var s float64
	for _, t := range r.Trials {
		s += t.Spec.Duration.Seconds()
	}
	return s
}

// ErrTooManyTrials is returned when the search did not converge within
// MaxTrials (a device whose loss does not grow with the rate).
var ErrTooManyTrials = errors.New("search did not converge")

func (c *Config) check() error {
	switch {
	case len(c.Goals) == 0:
		return fmt.Errorf("search: no goal")
	case !(c.MinRate > 0) || !(c.MaxRate > c.MinRate) || math.IsInf(c.MaxRate, 0):
		return fmt.Errorf("search: rates %g to %g frames/s: want 0 < min < max", c.MinRate, c.MaxRate)
	case !(c.Precision > 0 && c.Precision < 0.5):
		return fmt.Errorf("search: precision %g: want more than 0 and less than 0.5", c.Precision)
	case c.FinalTrial <= 0:
		return fmt.Errorf("search: final trial duration %v", c.FinalTrial)
	}
	for _, g := range c.Goals {
		if !(g.LossRatio >= 0 && g.LossRatio < 1) {
			return fmt.Errorf("search: goal %s: loss ratio %g", g.Name, g.LossRatio)
		}
	}
	if c.InitialTrial <= 0 {
		c.InitialTrial = max(c.FinalTrial/10, 100*time.Millisecond)
	}
	c.InitialTrial = min(c.InitialTrial, c.FinalTrial)
	if c.Phases == 0 {
		c.Phases = 2
	}
	if c.Phases < 0 {
		c.Phases = 0
	}
	if c.Expansion <= 1 {
		c.Expansion = 4
	}
	if c.MaxTrials <= 0 {
		c.MaxTrials = 200
	}
	if c.LongestTrial <= 0 {
		c.LongestTrial = 10 * c.FinalTrial
	}
	c.LongestTrial = max(c.LongestTrial, c.FinalTrial)
	sort.SliceStable(c.Goals, func(i, j int) bool { return c.Goals[i].LossRatio < c.Goals[j].LossRatio })
	return nil
}

// Relative widths. The width of an interval [lo, hi] is 1 − lo/hi, so
// that it does not depend on the unit, and bisection halves it in log
// space.

func stepDown(r, w float64) float64 { return r * (1 - w) }
func stepUp(r, w float64) float64   { return r / (1 - w) }
func width(lo, hi float64) float64  { return 1 - lo/hi }

// doubled is the width whose log is twice w's: two intervals of width w
// side by side.
func doubled(w float64, times int) float64 { return 1 - math.Pow(1-w, math.Pow(2, float64(times))) }
