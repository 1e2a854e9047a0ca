package page

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"linerate/autotune"
	"linerate/diagnose"
	"linerate/history"
	"linerate/internal/jsonbudget"
	"linerate/plan"
	"linerate/results"
)

// section is one run's part of the page: what every run has, and the
// view of its kind.
type section struct {
	Anchor string
	// ID is the run's history id ("" for a result read from a file).
	ID      string
	Name    string
	Kind    string
	When    string
	Host    string
	Kernel  string
	Version string
	Command string
	// Headline is the run's one-line figure as the history keeps it.
	Headline string
	// Figures are the headline figures compared across runs.
	Figures []figure

	Bench *benchView
	Diag  *diagView
	Auto  *autoView
	// Matrix is a plan run as a matrix.
	Matrix *matrixView
	// Raw is a run of a kind the page does not chart (a plan): its
	// result as indented JSON.
	Raw string
}

// figure is one headline figure.
type figure struct {
	Name  string
	Value float64
	// Format writes the value with its unit.
	Format func(float64) string
	// Higher says a higher value is better (false: lower is better).
	Higher bool
	// Points, when set, writes a change as a difference in the figure's
	// own terms rather than relative: a loss going from 0.1 % to 0.3 % is
	// "+0.2 points", not "+200 %".
	Points func(float64) string
	// Offered marks the run's offered load: neither better nor worse;
	// loss is judged only between runs offered the same load.
	Offered bool
	// Load is the run's offered load in words, beside its loss.
	Load string
}

// Text is the figure with its unit.
func (f figure) Text() string { return f.Format(f.Value) }

// diagnosis is diagnose --json's output (cmd/linerate's diagnosis).
type diagnosis struct {
	Source   string             `json:"source"`
	Seconds  float64            `json:"sampled_seconds"`
	Rules    int                `json:"rules"`
	Findings []diagnose.Finding `json:"findings"`
}

// newSection decodes a run's result by its kind and builds its view.
func newSection(r *history.Run) (*section, error) {
	s := &section{ID: r.ID, Name: runName(r), Kind: r.Kind, Host: r.Host, Kernel: r.Kernel, Version: r.Version,
		Command: strings.Join(r.Command, " "), Headline: r.Headline}
	if !r.Time.IsZero() {
		s.When = r.Time.Format("2006-01-02 15:04:05 MST")
	}
	bad := func(err error) error {
		return fmt.Errorf("run %s: a %s result that does not decode: %w", s.Name, r.Kind, err)
	}
	switch r.Kind {
	case history.KindBench, history.KindSearch:
		var res results.Result
		if err := jsonbudget.Unmarshal(r.Result, &res); err != nil {
			return nil, bad(err)
		}
		s.Bench = newBenchView(&res)
		s.Figures = s.Bench.figures()
		if s.When == "" && !res.Time.IsZero() {
			s.When = res.Time.Format("2006-01-02 15:04:05 MST")
		}
		if s.Version == "" {
			s.Version = res.Linerate
		}
	case history.KindDiagnose:
		var d diagnosis
		if err := jsonbudget.Unmarshal(r.Result, &d); err != nil {
			return nil, bad(err)
		}
		s.Diag = newDiagView(&d)
		s.Figures = s.Diag.figures()
	case history.KindTuneAuto:
		var a autotune.Report
		if err := jsonbudget.Unmarshal(r.Result, &a); err != nil {
			return nil, bad(err)
		}
		s.Auto = newAutoView(&a)
		s.Figures = s.Auto.figures()
	case history.KindPlan:
		// A plan without a matrix is one bench section per flow
		// (flowRuns); one with a matrix is this.
		var pr plan.Result
		if err := jsonbudget.Unmarshal(r.Result, &pr); err != nil {
			return nil, bad(err)
		}
		s.Matrix = newMatrixView(&pr)
	default:
		var b bytes.Buffer
		if err := json.Indent(&b, r.Result, "", "  "); err != nil {
			return nil, bad(err)
		}
		s.Raw = b.String()
	}
	return s, nil
}
