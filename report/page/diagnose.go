package page

import (
	"fmt"
	"strings"

	"linerate/diagnose"
)

// diagView is a diagnosis: its findings, most severe first, as diagnose
// orders them.
type diagView struct {
	Source   string
	Summary  string
	Findings []findingView
	// NoSamples is set when only configuration was checked.
	NoSamples bool
	counts    map[diagnose.Severity]int
}

type findingView struct {
	Severity, Rule, Subject, Summary string
	Evidence                         []string
	Fixes                            []string
}

func newDiagView(d *diagnosis) *diagView {
	v := &diagView{Source: d.Source, NoSamples: d.Seconds <= 0, counts: map[diagnose.Severity]int{}}
	for _, f := range d.Findings {
		v.counts[f.Severity]++
		v.Findings = append(v.Findings, newFindingView(f))
	}
	if len(d.Findings) == 0 {
		v.Summary = fmt.Sprintf("no bottleneck found: %d rules checked over %.0f s of samples", d.Rules, d.Seconds)
	} else {
		v.Summary = fmt.Sprintf("%d findings (%d critical, %d warning, %d info) from %d rules over %.0f s of samples",
			len(d.Findings), v.counts[diagnose.Critical], v.counts[diagnose.Warning], v.counts[diagnose.Info], d.Rules, d.Seconds)
	}
	return v
}

// newFindingView lays out a finding with its fixes in words.
func newFindingView(f diagnose.Finding) findingView {
	fv := findingView{Severity: string(f.Severity), Rule: f.Rule, Subject: f.Subject, Summary: f.Summary, Evidence: f.Evidence}
	for _, fx := range f.Fixes {
		s := fmt.Sprintf("%s %s → %s", fx.Kind, fx.Target, fx.Value)
		if fx.Note != "" {
			s += " (" + fx.Note + ")"
		}
		fv.Fixes = append(fv.Fixes, s)
	}
	return fv
}

// SeverityClass is the CSS class of a severity.
func (f findingView) SeverityClass() string { return "sev-" + strings.ToLower(f.Severity) }

func (v *diagView) figures() []figure {
	n := func(f float64) string { return fmt.Sprintf("%.0f", f) }
	return []figure{
		{Name: "critical findings", Value: float64(v.counts[diagnose.Critical]), Format: n},
		{Name: "warnings", Value: float64(v.counts[diagnose.Warning]), Format: n},
		{Name: "findings", Value: float64(len(v.Findings)), Format: n},
	}
}
