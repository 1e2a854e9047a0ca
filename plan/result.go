package plan

import "linerate/results"

// Result is what running a plan measured: each round's flows as their
// agents measured them (traffic.FlowSet, in Plan.Flows order), with what
// the plan expected.
type Result struct {
	Schema   int    `json:"schema"`
	Linerate string `json:"linerate_version"`
	// Plan is the plan's file as given.
	Plan     string            `json:"plan"`
	Expected *Expectation      `json:"expected,omitempty"`
	Rounds   []results.FlowSet `json:"rounds"`
	// Matrix holds each cell of a plan with a matrix: (then Rounds is
	// empty), in the order the matrix makes them.
	Matrix      []CellResult `json:"matrix,omitempty"`
	Interrupted bool         `json:"interrupted"`
	Errors      []string     `json:"errors,omitempty"`
}
