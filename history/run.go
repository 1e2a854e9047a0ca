// Package history owns the run history: every result linerate measures
// (bench, a zero-loss search, a plan, diagnose, tune auto) is kept as one
// gzip-compressed JSON file per run in a directory, with an index file that
// lists them so `linerate runs` need not open every file. docs/history.md
// says why files and not a database.
//
// The package knows nothing of what a result holds: a Run carries the
// result as raw JSON with its kind, and the commands and renderers that
// know the kind decode it.
package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Schema is the version of the Run envelope this linerate writes and the
// newest it reads.
const Schema = 1

// The kinds of run.
const (
	KindBench    = "bench"     // results.Result of bench udp|tcp
	KindSearch   = "search"    // results.Result of bench udp --search
	KindPlan     = "plan"      // the result of linerate run PLAN.yaml
	KindDiagnose = "diagnose"  // diagnose --json's report
	KindTuneAuto = "tune-auto" // autotune.Report
	KindFlows    = "flows"     // results.FlowSet of bench --from (third-party flows)
)

// Entry is what the history says of a run besides its result: a line of
// the index.
type Entry struct {
	Schema int       `json:"schema"`
	ID     string    `json:"id"`
	Kind   string    `json:"kind"`
	Time   time.Time `json:"time"`
	// Command is the command line as typed (argv).
	Command []string `json:"command"`
	Host    string   `json:"host"`
	Kernel  string   `json:"kernel,omitempty"`
	Version string   `json:"linerate_version"`
	// Machine is the box's identity (source.MachineID: derived from
	// /etc/machine-id, not the ID itself).
	Machine string `json:"machine_id,omitempty"`
	// Headline is the one-line figure `linerate runs` shows.
	Headline string `json:"headline"`
}

// Run is one saved result and where it came from: its entry (the JSON
// fields at the same level) and the command's whole JSON result.
type Run struct {
	Entry
	Result json.RawMessage `json:"result"`
}

// NewerError is a run written by a newer linerate than this one.
type NewerError struct {
	Where  string
	Schema int
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("%s: written by a newer linerate (run schema %d; this one reads up to %d): upgrade linerate to read it", e.Where, e.Schema, Schema)
}

// ErrAmbiguous is an id prefix that more than one run starts with; the
// error that wraps it names two of them.
var ErrAmbiguous = errors.New("give more of the id")

// NotFoundError is an id the history does not hold.
type NotFoundError struct {
	ID  string
	Dir string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("run %q: not in the history at %s ('linerate runs' lists them)", e.ID, e.Dir)
}
