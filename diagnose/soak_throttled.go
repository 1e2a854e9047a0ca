package diagnose

import (
	"fmt"
	"time"

	"linerate/internal/units"
	"linerate/results"
)

// soakThrottled: a bench --soak saw this box throttle under load: how
// long it held its rate, how hot it was, what its clock and rate fell to,
// and whether the rate came back. Seed 002: a passively cooled CM4 routes
// gigabit both ways for a few minutes before it reaches 80 °C and
// throttles.
type soakThrottled struct{}

func (soakThrottled) ID() string { return "soak-throttled" }
func (soakThrottled) Explain() string {
	return "a soak (bench --soak) saw the box throttle under load: time to throttle, temperature, rate before and after"
}

func (soakThrottled) Check(ev *Evidence) []Finding {
	if ev.Soak == nil || ev.Soak.Throttle == nil {
		return nil
	}
	t := ev.Soak.Throttle
	at := time.Duration(t.At * float64(time.Second)).Round(time.Second)
	f := Finding{Severity: Warning, Subject: "box",
		Summary:  fmt.Sprintf("the box throttled after %s of load", at),
		Evidence: []string{"first throttle at " + at.String() + ": " + t.Why}}
	if t.Zone != "" {
		f.Summary += fmt.Sprintf(" at %.1f °C (%s)", t.Celsius, t.Zone)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s = %.1f °C then", t.Zone, t.Celsius))
	}
	if t.KHzBefore > 0 && t.KHzAfter > 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("slowest CPU clock %d MHz before, %d MHz after", t.KHzBefore/1000, t.KHzAfter/1000))
	}
	before := units.Rate(t.BPSBefore, "bit/s")
	switch {
	case t.AfterUnknown:
		f.Evidence = append(f.Evidence, "rate before "+before+"; the soak ended before a second after the throttle was measured")
	default:
		share := 0.0
		if t.BPSBefore > 0 {
			share = t.BPSAfter / t.BPSBefore
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("rate before %s, after %s (%s of before)", before, units.Rate(t.BPSAfter, "bit/s"), units.Percent(share, 0)))
		if t.Recovered {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the rate recovered: its last seconds ran at %s of the rate before or more", units.Percent(results.RecoveredShare, 0)))
		} else {
			f.Summary += fmt.Sprintf(": the rate fell to %s of what it was and did not recover", units.Percent(share, 0))
			f.Severity = Critical
		}
	}
	f.Evidence = append(f.Evidence, "cool it (a heatsink with a fan) or hold the rate below what heats it; re-run the soak to compare")
	return []Finding{f}
}
