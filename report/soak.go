package report

import (
	"fmt"
	"io"
	"time"

	"linerate/internal/units"
	"linerate/results"
)

// SoakText writes what bench --soak saw: how long the box held its rate,
// what throttled it and how hot it was then, the rate before and after,
// and whether it came back. Nothing for a run without a soak.
func SoakText(w io.Writer, s *results.Soak) {
	if s == nil {
		return
	}
	ran := time.Duration(0)
	hottest := results.SoakZone{}
	for _, x := range s.Samples {
		ran = time.Duration(x.T * float64(time.Second))
		if z, ok := x.Hottest(); ok && z.Celsius > hottest.Celsius {
			hottest = z
		}
	}
	t := s.Throttle
	if t == nil {
		fmt.Fprintf(w, "\nsoak: no throttle in %s", ran.Round(time.Second))
		if hottest.Name != "" {
			fmt.Fprintf(w, "; hottest %s at %.1f °C", zoneName(hottest), hottest.Celsius)
		}
		fmt.Fprintln(w)
		return
	}
	at := time.Duration(t.At * float64(time.Second)).Round(time.Second)
	fmt.Fprintf(w, "\nsoak: throttled after %s: %s\n", at, t.Why)
	if t.Zone != "" {
		fmt.Fprintf(w, "  %s at %.1f °C then", t.Zone, t.Celsius)
		if t.KHzBefore > 0 && t.KHzAfter > 0 {
			fmt.Fprintf(w, "; slowest CPU %d MHz before, %d MHz after", t.KHzBefore/1000, t.KHzAfter/1000)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  rate before %s", units.Rate(t.BPSBefore, "bit/s"))
	switch {
	case t.AfterUnknown:
		fmt.Fprintln(w, ", after: unknown (the soak ended at the throttle)")
	case t.Recovered:
		fmt.Fprintf(w, ", after %s (%s of before): recovered\n", units.Rate(t.BPSAfter, "bit/s"), units.Percent(ratio(t.BPSAfter, t.BPSBefore), 0))
	default:
		fmt.Fprintf(w, ", after %s (%s of before): not recovered\n", units.Rate(t.BPSAfter, "bit/s"), units.Percent(ratio(t.BPSAfter, t.BPSBefore), 0))
	}
}

func zoneName(z results.SoakZone) string {
	if z.Type == "" {
		return z.Name
	}
	return z.Name + " (" + z.Type + ")"
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
