package page

import (
	"fmt"
	"html/template"
	"math"

	"linerate/autotune"
	"linerate/internal/units"
	"linerate/report"
	"linerate/wire"
)

// autoView is a tune auto session: the baseline, each trial's rounds
// against the noise band, what was kept, and before against after.
type autoView struct {
	rep       *autotune.Report
	Rig, DUT  string
	Goal      string
	Each      string
	Baseline  string
	Findings  []findingView
	Skipped   []string
	Trials    []trialRow
	Chart     template.HTML
	Before    []string
	After     []string
	BeforeAft string
	Kept      string
	Notes     []string
	DryRun    bool
	// Candidates are a dry run's candidates.
	Candidates  []string
	Interrupted bool
}

type trialRow struct {
	Change, FromTo, Source   string
	Rounds                   []string
	Before, After, Change100 string
	// Interval is the gain's interval and the pairs it took (a report
	// from before interleaved pairs: its noise band).
	Interval     string
	Outcome, Why string
	Kept         bool
}

func newAutoView(r *autotune.Report) *autoView {
	v := &autoView{rep: r, Rig: r.Rig, DUT: r.DUT, DryRun: r.DryRun, Notes: r.Notes, Interrupted: r.Interrupted}
	v.Goal = fmt.Sprintf("%s (%s, median of %d rounds; a change is kept when it gains more than %s and more than the rounds' spread)",
		r.Goal, r.Metric, r.Rounds, units.Percent(r.MinGain, 0))
	if m := report.AutoMethod(r); m != "" {
		v.Goal = fmt.Sprintf("%s (%s); %s", r.Goal, r.Metric, m)
	}
	if r.Spec != nil {
		v.Each = roundSpec(r.Spec, r.FrameSize)
	}
	if len(r.Baseline) > 0 {
		var rounds []string
		for _, b := range r.Baseline {
			val, _ := b.Value(r.Metric)
			rounds = append(rounds, r.Metric.Format(val))
		}
		v.Baseline = fmt.Sprintf("%s (rounds: %v)", report.RoundFigures(r.Before), rounds)
	}
	for _, f := range r.Findings {
		v.Findings = append(v.Findings, newFindingView(f))
	}
	for _, s := range r.Skipped {
		v.Skipped = append(v.Skipped, fmt.Sprintf("%s %s: %s", s.Item.Kind, s.Item.Target, s.Reason))
	}
	for _, c := range r.Candidates {
		v.Candidates = append(v.Candidates, fmt.Sprintf("%s %s (%s)", changeName(c), fromTo(c), c.Source))
	}
	for _, t := range r.Trials {
		row := trialRow{Change: changeName(t.Candidate), FromTo: fromTo(t.Candidate), Source: t.Source, Outcome: outcome(t.Outcome),
			Why: t.Why, Kept: t.Outcome == autotune.Kept}
		for i, rd := range t.Rounds {
			val, _ := rd.Value(r.Metric)
			pair := r.Metric.Format(val)
			if i < len(t.Without) {
				without, _ := t.Without[i].Value(r.Metric)
				pair = fmt.Sprintf("%s without, %s with", r.Metric.Format(without), pair)
			}
			row.Rounds = append(row.Rounds, pair)
		}
		f := report.TrialFigures(r.Metric, t)
		row.Before, row.After, row.Change100, row.Interval = f.Without, f.With, f.Gain, f.Interval
		if f.Pairs != "-" {
			row.Interval += ", " + f.Pairs + " pairs"
		} else if t.Verdict.Noise > 0 && len(t.Rounds) > 0 {
			row.Interval = "± " + units.Percent(t.Verdict.Noise, 1)
		}
		if t.Outcome != autotune.Kept && t.Restored {
			row.Why += "; restored, read back"
		}
		v.Trials = append(v.Trials, row)
	}
	if len(r.Baseline) > 0 {
		b, _ := r.Before.Value(r.Metric)
		a, _ := r.After.Value(r.Metric)
		v.BeforeAft = fmt.Sprintf("%s → %s", r.Metric.Format(b), r.Metric.Format(a))
		if b != 0 {
			v.BeforeAft += fmt.Sprintf(" (%s)", units.SignedPercent((a-b)/b, 1))
		}
		v.Before, v.After = roundRows(r.Before), roundRows(r.After)
	}
	kept := r.Kept()
	switch {
	case len(kept) > 0:
		v.Kept = fmt.Sprintf("kept %d change(s) (journal %v): undo with 'linerate tune rollback'", len(kept), r.Records)
	case len(r.Trials) > 0:
		v.Kept = "kept nothing: every change tried was put back"
	}
	v.chart()
	return v
}

// chart draws the goal metric of every round in order: the baseline's,
// then each trial's pairs, the rounds without the change and those with
// it as two lines.
func (v *autoView) chart() {
	r := v.rep
	var x, without, with []float64
	add := func(rd autotune.Round, changed bool) {
		val, _ := rd.Value(r.Metric)
		x = append(x, float64(len(x)+1))
		if changed {
			without, with = append(without, math.NaN()), append(with, val)
		} else {
			without, with = append(without, val), append(with, math.NaN())
		}
	}
	for _, b := range r.Baseline {
		add(b, false)
	}
	for _, t := range r.Trials {
		for i, rd := range t.Rounds {
			// Pair i: with the change first in odd pairs (i even).
			if i < len(t.Without) && i%2 == 1 {
				add(t.Without[i], false)
			}
			add(rd, true)
			if i < len(t.Without) && i%2 == 0 {
				add(t.Without[i], false)
			}
		}
	}
	if len(x) == 0 {
		return
	}
	v.Chart = chart{Title: "the goal metric (" + r.Metric.String() + ") of every round in order: the baseline's, then each trial's pairs, without and with its change",
		X: x, XFormat: func(f float64) string { return fmt.Sprintf("#%.0f", f) },
		Series: []series{{Name: "without the change", Color: "#999999", Y: without}, {Name: "with the change", Color: colour(0), Y: with}}}.Render()
}

func (v *autoView) figures() []figure {
	r := v.rep
	if len(r.Baseline) == 0 {
		return nil
	}
	out := []figure{
		{Name: "received (after)", Value: r.After.ReceivedPPS, Format: autotune.MetricRxPPS.Format, Higher: true},
		{Name: "received bits (after)", Value: r.After.ReceivedBPS, Format: autotune.MetricRxBPS.Format, Higher: true},
		{Name: "loss (after)", Value: r.After.LossRatio, Format: autotune.MetricLoss.Format, Points: lossPoints},
	}
	if r.After.CPUSampled {
		out = append(out, figure{Name: "CPU per Mpkt (after)", Value: r.After.CPUPerMpkt, Format: autotune.MetricCPUPerMpkt.Format})
	}
	return out
}

func changeName(c autotune.Candidate) string { return report.TuneChangeName(c.Changes, c.Item) }

func fromTo(c autotune.Candidate) string {
	if len(c.Changes) == 0 {
		return "-"
	}
	return c.Changes[0].From + " → " + c.Changes[0].To
}

func outcome(o string) string { return autotune.TrialOutcomeWord(o) }

// roundRows are a round's figures, one per line of a before/after table.
func roundRows(rd autotune.Round) []string {
	out := []string{autotune.MetricRxPPS.Format(rd.ReceivedPPS), autotune.MetricRxBPS.Format(rd.ReceivedBPS),
		autotune.MetricLoss.Format(rd.LossRatio), "-"}
	if val, ok := rd.Value(autotune.MetricCPUPerMpkt); ok {
		out[3] = autotune.MetricCPUPerMpkt.Format(val)
	}
	return out
}

// roundSpec describes a round's bench.
func roundSpec(sp *wire.Spec, frame int) string {
	what := sp.Proto.String() + " " + sp.Direction.String()
	if sp.Proto == wire.UDP && frame > 0 {
		what += fmt.Sprintf(", %d-byte frames", frame)
	}
	rate := "as fast as possible"
	if !sp.Rate.Unlimited() {
		rate = "at " + sp.Rate.String()
	}
	return fmt.Sprintf("%s, %s, %s measured after %s of warm-up", what, rate, sp.Duration.D(), sp.Warmup.D())
}
