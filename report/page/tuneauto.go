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
	Noise                    string
	Outcome, Why             string
	Kept                     bool
}

func newAutoView(r *autotune.Report) *autoView {
	v := &autoView{rep: r, Rig: r.Rig, DUT: r.DUT, DryRun: r.DryRun, Notes: r.Notes, Interrupted: r.Interrupted}
	v.Goal = fmt.Sprintf("%s (%s, median of %d rounds; a change is kept when it gains more than %s and more than the rounds' spread)",
		r.Goal, r.Metric, r.Rounds, units.Percent(r.MinGain, 0))
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
			Why: t.Why, Kept: t.Outcome == autotune.Kept, Before: "-", After: "-", Change100: "-", Noise: "-"}
		for _, rd := range t.Rounds {
			val, _ := rd.Value(r.Metric)
			row.Rounds = append(row.Rounds, r.Metric.Format(val))
		}
		if len(t.Rounds) > 0 && t.Verdict.Before != 0 {
			row.Before = r.Metric.Format(t.Verdict.Before)
			row.After = r.Metric.Format(t.Verdict.After)
			row.Change100 = units.SignedPercent(t.Verdict.Change, 1)
			row.Noise = fmt.Sprintf("± %s", units.Percent(t.Verdict.Noise, 1))
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
// then each trial's, with each trial's noise band around its baseline.
func (v *autoView) chart() {
	r := v.rep
	var x, y []float64
	var bandLo, bandHi []float64
	add := func(rd autotune.Round, lo, hi float64) {
		val, _ := rd.Value(r.Metric)
		x = append(x, float64(len(x)+1))
		y = append(y, val)
		bandLo, bandHi = append(bandLo, lo), append(bandHi, hi)
	}
	for _, b := range r.Baseline {
		add(b, math.NaN(), math.NaN())
	}
	for _, t := range r.Trials {
		base := t.Verdict.Before
		for _, rd := range t.Rounds {
			if base != 0 {
				add(rd, base*(1-t.Verdict.Noise), base*(1+t.Verdict.Noise))
			} else {
				add(rd, math.NaN(), math.NaN())
			}
		}
	}
	if len(y) == 0 {
		return
	}
	v.Chart = chart{Title: "the goal metric (" + r.Metric.String() + ") of every round in order: baseline first, then each trial's, against its baseline's noise band",
		X: x, XFormat: func(f float64) string { return fmt.Sprintf("#%.0f", f) },
		Series: []series{{Name: r.Metric.String(), Color: colour(0), Y: y}, {Name: "noise band low", Color: "#999999", Y: bandLo},
			{Name: "noise band high", Color: "#999999", Y: bandHi}}}.Render()
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

func outcome(o string) string {
	if o == autotune.RolledBack {
		return "rolled back"
	}
	return o
}

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
