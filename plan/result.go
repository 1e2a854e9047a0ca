package plan

import (
	"fmt"

	"linerate/results"
)

// Result is what running a plan measured: each round's flows as their
// agents measured them (results.FlowSet, in Plan.Flows order), with what
// the plan expected.
type Result struct {
	Schema   int    `json:"schema"`
	Linerate string `json:"linerate_version"`
	// Plan is the plan's file as given.
	Plan string `json:"plan"`
	// Expansions say what each host given as dns:// or dns+srv:// stood
	// for in this run.
	Expansions []Expansion       `json:"expansions,omitempty"`
	Expected   *Expectation      `json:"expected,omitempty"`
	Rounds     []results.FlowSet `json:"rounds"`
	// Matrix holds each cell of a plan with a matrix: (then Rounds is
	// empty), in the order the matrix makes them.
	Matrix []CellResult `json:"matrix,omitempty"`
	// Tune is what a matrix's tune plan changed, and its rollback.
	Tune *TuneRun `json:"tune,omitempty"`
	// Controller is what the run cost the process that coordinated it.
	Controller  *Usage   `json:"controller,omitempty"`
	Interrupted bool     `json:"interrupted"`
	Errors      []string `json:"errors,omitempty"`
}

// TuneRun is a matrix's tune plan as the run applied it: the changes it
// made before the "tune on" half and whether they were all put back
// after.
type TuneRun struct {
	// File is the tune plan file; Netns the namespace it changed ("":
	// where the controller runs).
	File    string       `json:"file"`
	Netns   string       `json:"netns,omitempty"`
	Changes []TuneChange `json:"changes"`
	// Applied says the "tune on" half ran with the changes in place;
	// RolledBack that every one was restored after.
	Applied    bool     `json:"applied"`
	RolledBack bool     `json:"rolled_back"`
	Errors     []string `json:"errors,omitempty"`
}

// TuneChange is one change of a tune plan: a setting's old and new value.
type TuneChange struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
	From   string `json:"from"`
	To     string `json:"to"`
}

// Usage is the resources a process used: its CPU time in user and kernel
// mode (getrusage(2) of itself) and its peak resident memory since its
// exec (VmHWM).
type Usage struct {
	UserSeconds float64 `json:"user_seconds"`
	SysSeconds  float64 `json:"sys_seconds"`
	MaxRSSBytes int64   `json:"max_rss_bytes"`
}

// String is the cost in words, as the text and the page give it.
func (u Usage) String() string {
	return fmt.Sprintf("controller: %.2f s user, %.2f s system CPU, %.1f MB max resident", u.UserSeconds, u.SysSeconds, float64(u.MaxRSSBytes)/1e6)
}

// MaxStartSpreadMS is the widest spread of window starts over every round
// the plan ran (its matrix's cells' included); ok is false when no round
// has one.
func (r *Result) MaxStartSpreadMS() (ms float64, ok bool) {
	each := func(sets []results.FlowSet) {
		for _, s := range sets {
			if s.StartSpreadMS != nil {
				ms, ok = max(ms, *s.StartSpreadMS), true
			}
		}
	}
	each(r.Rounds)
	for _, c := range r.Matrix {
		each(c.Rounds)
	}
	return ms, ok
}
