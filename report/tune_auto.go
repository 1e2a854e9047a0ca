//go:build !small

package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"linerate/autotune"
	"linerate/internal/units"
	"linerate/results"
	"linerate/tune"
	"linerate/wire"
)

// TuneAuto prints what `tune auto` did for a person: the rig, the
// baseline, the findings, a before/after table with each change's
// measured effect and whether it was kept or rolled back (and why), and
// the end-to-end change of the goal metric.
func TuneAuto(w io.Writer, r *autotune.Report) error {
	ew := &autoErrWriter{w: w}
	w = ew
	fmt.Fprintf(w, "tune auto: %s\n", r.Rig)
	fmt.Fprintf(w, "tuning %s; goal %s (%s)\n", r.DUT, r.Goal, r.Metric)
	if line := AutoMethod(r); line != "" {
		fmt.Fprintln(w, line)
	}
	if r.Spec != nil {
		fmt.Fprintf(w, "each round: %s\n", autoSpec(r.Spec, r.FrameSize))
	}
	if len(r.Baseline) > 0 {
		fmt.Fprintf(w, "baseline: %s (%d round%s, spread %s)\n", RoundFigures(r.Before), len(r.Baseline), tunePlural(len(r.Baseline)),
			autoSpread(r.Baseline, r.Metric))
	}
	if r.Diagnosed && len(r.Findings) == 0 {
		fmt.Fprintln(w, "findings: none")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "finding: %s %s (%s): %s\n", f.Rule, f.Subject, f.Severity, f.Summary)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "skipped: %s: %s\n", s.Item, s.Reason)
	}
	if r.DryRun {
		return autoCandidates(w, ew, r)
	}
	if len(r.Trials) > 0 {
		fmt.Fprintln(w)
		if err := Trials(w, r, nil); err != nil {
			return err
		}
		fmt.Fprintln(w)
	} else if len(r.Baseline) > 0 {
		fmt.Fprintln(w, "nothing was tried: no candidate this system can take")
	}
	if len(r.Baseline) > 0 {
		fmt.Fprintf(w, "%s; all figures: %s → %s\n", BeforeAfter(r), RoundFigures(r.Before), RoundFigures(r.After))
		if r.Before.Proto == wire.UDP && results.LoadsDiffer(r.Before.SentPPS, r.After.SentPPS) {
			fmt.Fprintln(w, "note: before and after were offered different loads: their losses are not comparable")
		}
	}
	kept := r.Kept()
	switch {
	case len(kept) > 0:
		keep := ", keep across reboots with 'linerate tune persist'"
		if r.Netns != "" {
			keep = " (a namespace's changes go with it)"
		}
		fmt.Fprintf(w, "kept %d change%s on %s (journal %s): undo with 'linerate tune rollback'%s\n",
			len(kept), tunePlural(len(kept)), autoWhere(r.Netns), strings.Join(r.Records, ", "), keep)
	case len(r.Trials) > 0:
		fmt.Fprintln(w, "kept nothing: every change tried was put back, and the system is as it was")
	}
	if r.Interrupted {
		line := "interrupted: the change being tried, if any, was rolled back"
		if len(kept) > 0 {
			line += "; the kept ones stay applied"
		}
		fmt.Fprintln(w, line)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return ew.err
}

// autoCandidates prints a dry run's candidates.
func autoCandidates(w io.Writer, ew *autoErrWriter, r *autotune.Report) error {
	if len(r.Candidates) == 0 {
		fmt.Fprintln(w, "dry run: no candidate this system can take")
		return ew.err
	}
	fmt.Fprintf(w, "\ndry run: %d candidate%s, nothing applied\n", len(r.Candidates), tunePlural(len(r.Candidates)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANGE\tFROM → TO\tSOURCE")
	for _, c := range r.Candidates {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", TuneChangeName(c.Changes, c.Item), autoFromTo(c.Changes, c.Item), c.Source)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return ew.err
}

// AutoMethod says how tune auto judged each change, in one line: the
// pairs, the interval and the thresholds. "" for a report from before
// interleaved pairs (no max_rounds).
func AutoMethod(r *autotune.Report) string {
	if r.MaxRounds == 0 {
		return ""
	}
	return fmt.Sprintf("each change measured in pairs of adjacent rounds, without and with it (with first in odd pairs), "+
		"judged after %d pairs and each one more up to %d; kept when the gain's %s interval (Student's t on the pairs' ratios) "+
		"lies above %s, rolled back when it lies below, undecided (rolled back) when it still straddles %s at %d pairs",
		max(r.Rounds, 3), r.MaxRounds, units.Percent(r.Confidence, 1), units.Percent(r.MinGain, 1),
		units.Percent(r.MinGain, 1), r.MaxRounds)
}

// TrialCells are a trial's figures as a table shows them, "-" where it
// has none: the medians without and with the change, the estimated gain,
// its interval and the pairs it took.
type TrialCells struct {
	Without, With, Gain, Interval, Pairs string
}

// TrialFigures are a trial's cells on metric m.
func TrialFigures(m autotune.Metric, t autotune.Trial) TrialCells {
	c := TrialCells{"-", "-", "-", "-", "-"}
	v := t.Verdict
	if len(t.Rounds) == 0 || v.Before == 0 {
		return c
	}
	c.Without, c.With = m.Format(v.Before), m.Format(v.After)
	c.Gain = units.SignedPercent(v.Gain, 1)
	if v.Pairs > 1 {
		c.Interval = v.IntervalText()
	}
	if v.Pairs > 0 {
		c.Pairs = fmt.Sprint(v.Pairs)
	}
	return c
}

// TuneChangeName names a trial's change: the kind and target of its first
// change, and how many more an item such as "eth1/rx-*" made.
func TuneChangeName(cs []tune.Change, it tune.Item) string {
	if len(cs) == 0 {
		return it.Kind.String() + " " + it.Target
	}
	s := cs[0].Kind.String() + " " + cs[0].Target
	if len(cs) > 1 {
		s += fmt.Sprintf(" (+%d more)", len(cs)-1)
	}
	return s
}

// Trials prints tune auto's trials as one table, a row each: the change,
// its values from and to, why it was tried, the goal metric without and
// with it (TrialFigures: medians of its pairs' rounds), the gain, its
// interval and the pairs it took, the outcome and why. tried words a trial's source; nil writes a diagnose rule's
// fix as the rule's name and any other source as it is.
func Trials(w io.Writer, r *autotune.Report, tried func(source string) string) error {
	if tried == nil {
		tried = func(s string) string { return strings.TrimPrefix(s, "diagnose ") }
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANGE\tFROM → TO\tTRIED FOR\tWITHOUT\tWITH\tGAIN\tINTERVAL\tPAIRS\tRESULT\tWHY")
	for _, t := range r.Trials {
		f := TrialFigures(r.Metric, t)
		why := t.Why
		if t.Outcome != autotune.Kept && t.Restored {
			why += "; restored, read back"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", TuneChangeName(t.Changes, t.Item), autoFromTo(t.Changes, t.Item),
			tried(t.Source), f.Without, f.With, f.Gain, f.Interval, f.Pairs, TuneOutcome(t.Outcome), why)
	}
	return tw.Flush()
}

// BeforeAfter is the goal metric's first baseline against its last, in
// words: "before → after: 98.8 kpps → 211.2 kpps (+113.9 %)".
func BeforeAfter(r *autotune.Report) string {
	b, _ := r.Before.Value(r.Metric)
	a, _ := r.After.Value(r.Metric)
	line := fmt.Sprintf("before → after: %s → %s", r.Metric.Format(b), r.Metric.Format(a))
	if b != 0 {
		line += " (" + units.SignedPercent((a-b)/b, 1) + ")"
	}
	return line
}

// autoFromTo is a trial's first change from and to; a trial that made
// none shows the value it asked for.
func autoFromTo(cs []tune.Change, it tune.Item) string {
	switch {
	case len(cs) > 0:
		return tuneShort(cs[0].From) + " → " + tuneShort(cs[0].To)
	case it.Value != "":
		return "→ " + tuneShort(it.Value)
	}
	return "-"
}

// TuneOutcome words a trial's outcome ("kept", "rolled back", ...).
func TuneOutcome(o string) string { return autotune.TrialOutcomeWord(o) }

func autoWhere(netns string) string {
	if netns == "" {
		return "this host"
	}
	return "netns " + netns
}

// RoundFigures is a round's (or a median's) figures on one line.
func RoundFigures(r autotune.Round) string {
	s := autotune.MetricRxPPS.Format(r.ReceivedPPS) + " received"
	if r.Proto == wire.TCP {
		s = autotune.MetricRxBPS.Format(r.ReceivedBPS) + " received"
	} else {
		s += ", loss " + autotune.MetricLoss.Format(r.LossRatio)
		if r.SentPPS > 0 {
			s += " of " + autotune.MetricRxPPS.Format(r.SentPPS) + " sent"
		}
	}
	if v, ok := r.Value(autotune.MetricCPUPerMpkt); ok {
		s += ", CPU " + autotune.MetricCPUPerMpkt.Format(v)
	}
	return s
}

// autoSpread is the relative range of a metric over rounds.
func autoSpread(rs []autotune.Round, metric autotune.Metric) string {
	var lo, hi, sum float64
	n := 0
	for _, r := range rs {
		v, ok := r.Value(metric)
		if !ok {
			continue
		}
		if n == 0 || v < lo {
			lo = v
		}
		if n == 0 || v > hi {
			hi = v
		}
		sum += v
		n++
	}
	if n < 2 || sum == 0 {
		return "-"
	}
	return units.Percent((hi-lo)/(sum/float64(n)), 1)
}

// autoSpec describes a round's bench in words.
func autoSpec(sp *wire.Spec, frame int) string {
	what := sp.Proto.String() + " " + sp.Direction.String()
	if sp.Proto == wire.UDP && frame > 0 {
		what += fmt.Sprintf(", %d-byte frames", frame)
	}
	rate := "as fast as possible"
	switch {
	case sp.Rate.PPS > 0:
		rate = "at " + autotune.MetricRxPPS.Format(sp.Rate.PPS)
	case sp.Rate.BPS > 0:
		rate = "at " + autotune.MetricRxBPS.Format(sp.Rate.BPS)
	}
	return fmt.Sprintf("%s, %s, %s measured after %s of warmup", what, rate,
		sp.Duration.D().Round(time.Millisecond), sp.Warmup.D().Round(time.Millisecond))
}

// autoErrWriter keeps the first write error, so the printer writes freely
// and reports it once.
type autoErrWriter struct {
	w   io.Writer
	err error
}

func (e *autoErrWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
