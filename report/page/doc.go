// Package page renders saved runs as one self-contained HTML page: the
// `linerate report` command's output. A page holds its style sheet and
// its charts (inline SVG drawn here, no script) and refers to nothing
// outside itself, so it opens offline from a file and can be mailed.
//
// One run gets its own section by kind: a bench or a zero-loss search
// (headline figures, throughput and packet rate per second, loss,
// latency, per-CPU use of each end, interrupts, drop counters and the
// drop ledger, the search table), a diagnosis (the findings with their
// evidence and fixes), or a tune auto session (each trial's before and
// after against the noise band, and what was kept). Two or more runs are
// first set side by side with the changes of their headline figures.
//
// The package formats what it is given and reads nothing itself.
package page
