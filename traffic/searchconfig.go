package traffic

import (
	"time"

	"linerate/ceiling"
	"linerate/internal/units"
	"linerate/internal/usage"
	"linerate/search"
)

// SearchConfig is a zero-loss search (`bench udp --search`): per frame
// size, the fastest rate with no loss (NDR) and, if asked, with at most a
// loss ratio (PDR), each trial one UDP test against the targets
// (docs/search.md).
type SearchConfig struct {
	Goals []search.Goal `json:"goals"`
	// Sizes are the frame sizes, one search each: a size, or a mix of
	// sizes sent interleaved in its ratio (imix).
	Sizes []ceiling.Mix `json:"sizes"`
	// Precision is the relative width of the final interval.
	Precision float64 `json:"precision"`
	// Trial is the duration of the final trials.
	Trial time.Duration `json:"trial_ns"`
	// MaxTrial is the longest a final trial over the path's ceiling runs
	// so that the path's buffering cannot hide its loss
	// (search.Buffering); 10 × Trial when 0.
	MaxTrial time.Duration `json:"max_trial_ns,omitempty"`
	// Latency runs the latency steps at 10, 50 and 90 % of the PDR (or the
	// NDR when no PDR is searched), with latency probes.
	Latency bool `json:"latency,omitempty"`
	// Progress, if set, gets one line per trial: the search is long.
	Progress func(line string) `json:"-"`
}

// Check says what is wrong with the search's settings, naming the field
// (a *usage.FieldError: Goals, Sizes, Precision, Trial, MaxTrial or Loss). A
// percentage it echoes is written as units.Percent writes one ("0 %").
func (c *SearchConfig) Check() error {
	switch {
	case len(c.Goals) == 0:
		return usage.Field("Goals", "is missing: give ndr, pdr or ndr,pdr")
	case len(c.Sizes) == 0:
		return usage.Field("Sizes", "is missing: give a frame size")
	case !(c.Precision > 0 && c.Precision < 0.5):
		return usage.Field("Precision", "%s: want more than 0 and less than 50 %%", units.Percent(c.Precision, -1))
	case c.Trial < 100*time.Millisecond:
		return usage.Field("Trial", "%s: want at least 100ms", c.Trial)
	case c.MaxTrial != 0 && c.MaxTrial < c.Trial:
		return usage.Field("MaxTrial", "%s: want at least the final trial's %s", c.MaxTrial, c.Trial)
	}
	for _, g := range c.Goals {
		if !(g.LossRatio >= 0 && g.LossRatio < 0.5) {
			return usage.Field("Loss", "%s: want at least 0 and less than 50 %%", units.Percent(g.LossRatio, -1))
		}
	}
	return nil
}

// longest is the longest a final trial may run: MaxTrial, or 10 × Trial
// when it is 0.
func (c *SearchConfig) longest() time.Duration {
	if c.MaxTrial > 0 {
		return max(c.MaxTrial, c.Trial)
	}
	return 10 * c.Trial
}
