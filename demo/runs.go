package demo

import (
	"errors"
	"io"
	"slices"
	"time"

	"linerate/history"
	"linerate/report"
	"linerate/report/page"
)

// The roles of the runs on the report page, in the order they appear
// there: the flood before tuning and after it side by side, then tune
// auto's report with its trials.
const (
	RoleBefore   = "before"
	RoleAfter    = "after"
	RoleTuneAuto = "tune-auto"
)

var pageOrder = []string{RoleBefore, RoleAfter, RoleTuneAuto}

// roleLabels start the headlines of the floods, which the history and the
// page show: `linerate runs` then says which is which.
var roleLabels = map[string]string{
	RoleBefore: "demo, before tuning",
	RoleAfter:  "demo, after tuning",
}

// SavedRun is one run the demo made, as the run history keeps it.
type SavedRun struct {
	// Role says what the run was in the demo: an experiment's name,
	// RoleBefore, RoleAfter or RoleTuneAuto.
	Role string `json:"role"`
	// ID is its id in the history; "" when it was not saved.
	ID       string `json:"id,omitempty"`
	Kind     string `json:"kind"`
	Headline string `json:"headline"`
}

// save makes a run of the history of result, of kind, made by command;
// saves it when the demo has a history, and keeps it for the report page
// when its role is one of pageOrder. A run that cannot be saved is a
// progress line, not a failure: the measurement was made and shown.
func (s *Session) save(role, kind string, command []string, result any) {
	r, err := report.NewRun(kind, command, result)
	if err != nil {
		s.Logf("  %s: not kept: %v", role, err)
		return
	}
	r.Time = time.Now().UTC()
	if label := roleLabels[role]; label != "" {
		r.Headline = label + ": " + r.Headline
	}
	if st := s.Config.History; st != nil {
		if id, err := st.Save(r); err != nil {
			s.Logf("  %s: not saved to the history: %v", role, err)
		} else {
			s.Logf("  saved as run %s (%s): %s", id, role, r.Headline)
		}
	}
	rep := s.Report
	rep.Runs = append(rep.Runs, SavedRun{Role: role, ID: r.ID, Kind: kind, Headline: r.Headline})
	if slices.Contains(pageOrder, role) {
		rep.page = append(rep.page, pageRun{role: role, run: r})
	}
}

// pageRuns are the runs of the report page in pageOrder.
func (r *Report) pageRuns() []*history.Run {
	runs := slices.Clone(r.page)
	slices.SortStableFunc(runs, func(a, b pageRun) int {
		return slices.Index(pageOrder, a.role) - slices.Index(pageOrder, b.role)
	})
	out := make([]*history.Run, len(runs))
	for i, p := range runs {
		out[i] = p.run
	}
	return out
}

// pageRun is a run of the report page and its role.
type pageRun struct {
	role string
	run  *history.Run
}

// HasPage says the demo made runs for the report page.
func (r *Report) HasPage() bool { return len(r.page) > 0 }

// ErrNoPage: the demo stopped before it made any run of the report page.
var ErrNoPage = errors.New("demo: no run for the report page (the demo stopped before the flood through the router)")

// WritePage writes the report page (report/page): the floods through the
// router before and after tuning side by side, then tune auto's report
// with each trial's rounds; one self-contained HTML page.
func (r *Report) WritePage(w io.Writer) error {
	runs := r.pageRuns()
	if len(runs) == 0 {
		return ErrNoPage
	}
	return page.Write(w, runs)
}
