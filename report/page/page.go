package page

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"

	"linerate/history"
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
	for i, r := range runs {
		s, err := newSection(r)
		if err != nil {
			return err
		}
		s.Anchor = fmt.Sprintf("run%d", i+1)
		d.Sections = append(d.Sections, s)
	}
	d.Title = "linerate report: " + runName(runs[0])
	if len(runs) > 1 {
		d.Title = fmt.Sprintf("linerate report: %d runs", len(runs))
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
