package page

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	"linerate/history"
	"linerate/internal/jsonbudget"
	"linerate/plan"
	"linerate/results"
)

//go:embed page.css
var css string

//go:embed page.html
var pageHTML string

var tmpl = template.Must(template.New("page").Parse(pageHTML))

// doc is what the template renders.
type doc struct {
	Title    string
	CSS      template.CSS
	Compare  *comparison
	Sections []*section
}

// Write renders runs as one HTML page on w. Each run's result is decoded
// by its kind; a run whose result cannot be decoded is an error naming
// it.
func Write(w io.Writer, runs []*history.Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("report: no run to render")
	}
	d := doc{CSS: template.CSS(css)}
	var expanded []*history.Run
	for _, r := range runs {
		rs, err := flowRuns(r)
		if err != nil {
			return err
		}
		expanded = append(expanded, rs...)
	}
	for i, r := range expanded {
		s, err := newSection(r)
		if err != nil {
			return err
		}
		s.Anchor = fmt.Sprintf("run%d", i+1)
		d.Sections = append(d.Sections, s)
	}
	d.Title = "linerate report: " + runName(runs[0])
	if len(expanded) > 1 {
		d.Title = fmt.Sprintf("linerate report: %d runs", len(expanded))
		d.Compare = compare(d.Sections)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, d); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// runName is how a run is named on the page: its id, else its kind and
// time.
func runName(r *history.Run) string {
	if r.ID != "" {
		return r.ID
	}
	if r.Time.IsZero() {
		return r.Kind
	}
	return r.Kind + " " + r.Time.Format("2006-01-02 15:04:05")
}

// flowRuns is a run of third-party flows (bench --from) as one bench run
// per flow, each named after its flow, with the samples of the hosts in
// the middle (side "dut", one end per host) on the first; any other run
// is itself.
func flowRuns(r *history.Run) ([]*history.Run, error) {
	var sets []results.FlowSet
	var controller []string // a plan's: on its first flow
	switch r.Kind {
	case history.KindFlows:
		var fs results.FlowSet
		if err := jsonbudget.Unmarshal(r.Result, &fs); err != nil {
			return nil, fmt.Errorf("run %s: a flows result that does not decode: %w", runName(r), err)
		}
		sets = []results.FlowSet{fs}
	case history.KindPlan:
		var pr plan.Result
		if err := jsonbudget.Unmarshal(r.Result, &pr); err != nil {
			return nil, fmt.Errorf("run %s: a plan result that does not decode: %w", runName(r), err)
		}
		if pr.Matrix != nil {
			return []*history.Run{r}, nil
		}
		sets = pr.Rounds
		if u := pr.Controller; u != nil {
			controller = []string{u.String()}
		}
	default:
		return []*history.Run{r}, nil
	}
	var out []*history.Run
	for n, fs := range sets {
		prefix := ""
		if len(sets) > 1 {
			prefix = fmt.Sprintf("round %d ", n+1)
		}
		var extra []string
		if n == 0 {
			extra = controller
		}
		rs, err := setRuns(r, &fs, prefix, extra)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("run %s: no flow of it has a result", runName(r))
	}
	return out, nil
}

// setRuns is one bench run per flow of a set; the first carries the set's
// samples, how its flows started (FlowSet.StartLines), its notes and
// extra.
func setRuns(r *history.Run, fs *results.FlowSet, prefix string, extra []string) ([]*history.Run, error) {
	var out []*history.Run
	for i, f := range fs.Flows {
		if f.Result == nil {
			continue
		}
		res := *f.Result
		if len(out) == 0 {
			res.Notes = slices.Concat(res.Notes, fs.StartLines(), fs.Notes, extra)
			for _, s := range fs.Samples {
				if s.Host != "" {
					s.Side = results.Side("dut " + s.Host)
				} else {
					s.Side = "dut (this host)"
				}
				res.Samples = append(res.Samples, s)
			}
		}
		data, err := json.Marshal(&res)
		if err != nil {
			return nil, err
		}
		one := *r
		one.Kind, one.Result = history.KindBench, data
		one.Headline = fmt.Sprintf("%sflow %d: %s → %s", prefix, i+1, f.From, strings.Join(f.To, ", "))
		if one.ID != "" {
			one.ID = fmt.Sprintf("%s %sflow %d", r.ID, prefix, i+1)
		}
		out = append(out, &one)
	}
	return out, nil
}
