package report

import (
	"fmt"
	"io"
	"time"

	"linerate/internal/units"
	"linerate/results"
	"linerate/search"
)

// BenchSearch writes a zero-loss search's result: the table per frame
// size, the latency steps, and per size where the loss begins (the drop
// ledger of the slowest trial that lost frames).
func BenchSearch(w io.Writer, r *results.Result) error {
	ew := &ceilErrWriter{w: w}
	sizes := make([]search.SizeResult, len(r.Search))
	for i, s := range r.Search {
		sizes[i] = s.SizeResult
	}
	if r.Interrupted {
		fmt.Fprintln(ew, "INTERRUPTED: the sizes searched so far")
	}
	if err := Search(ew, sizes); err != nil {
		return err
	}
	for _, s := range r.Search {
		if line := trialLengths(s.SizeResult); line != "" {
			fmt.Fprintf(ew, "trials: %s B: %s\n", s.Size, line)
		}
		for _, n := range s.Notes {
			fmt.Fprintf(ew, "note: %s B: %s\n", s.Size, n)
		}
		if len(s.Trials) > 0 && s.Trials[0].Purpose == search.PurposeMax && s.NDRPPS >= s.Trials[0].Spec.Rate {
			fmt.Fprintf(ew, "note: %s B: no loss at the fastest rate tried (%s pps: the sender's most or just over the path's ceiling): the device may forward more\n",
				s.Size, units.Count(s.Trials[0].Spec.Rate))
		}
	}
	for _, s := range r.Search {
		for _, l := range s.Latency {
			lat := "no probe came back"
			if x := l.Result.Latency; x != nil {
				lat = fmt.Sprintf("p50 %s  p90 %s  p99 %s  max %s", x.P50, x.P90, x.P99, x.Max)
			}
			fmt.Fprintf(ew, "latency %s B at %s pps: %s\n", s.Size, units.Count(l.Spec.Rate), lat)
		}
	}
	for _, s := range r.Search {
		if s.Ledger == nil {
			continue
		}
		fmt.Fprintf(ew, "%s B, at %s pps (loss begins): ", s.Size, units.Count(s.LossBeginsPPS))
		if err := Ledger(ew, *s.Ledger); err != nil {
			return err
		}
	}
	for _, e := range r.Problems() {
		fmt.Fprintln(ew, "error:", e)
	}
	return ew.err
}

// trialLengths says how long the final trials of s ran and why: over the
// path's ceiling, long enough to overflow the path's buffering, and what
// the NDR and PDR rest on. "" for a search of no final trial.
func trialLengths(s search.SizeResult) string {
	if s.FinalTrial <= 0 {
		return ""
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	line := "final " + ms(s.FinalTrial)
	switch b := s.Buffering; {
	case b != nil:
		line += fmt.Sprintf(", over the ceiling of %s up to %s, so that they fill the path's buffering of %s frames (%s) %s times over",
			units.Count(b.CeilingFPS)+" fps", ms(s.LongestTrial), units.Count(b.Frames), b.What, units.Count(search.BufferMargin))
	case s.CeilingPPS > 0:
		line += fmt.Sprintf("; the path's buffering ahead of its ceiling of %s is not known: a rate over it may pass while a queue takes its excess",
			units.Count(s.CeilingPPS)+" fps")
	}
	for _, g := range []struct {
		name   string
		d      time.Duration
		capped bool
	}{{"NDR", s.NDRTrial, s.NDRCapped}, {"PDR", s.PDRTrial, s.PDRCapped}} {
		if g.d <= 0 {
			continue
		}
		line += fmt.Sprintf("; the %s rests on %s", g.name, ms(g.d))
		if g.capped {
			line += " (capped: too short to overflow the buffering)"
		}
	}
	return line
}
