// Package results owns what a test found out and how it is judged: the
// Result of a bench run and its totals, per target, stream and second,
// both ends' samples and drop counters; what a server counted
// (ServerResult); third-party flows run at once (FlowSet); the verdict on
// what limited a run, its CPU cost and the drop ledger's assembly.
//
// Everything that reads a result (report, report/page, diagnose, live,
// plan, history) imports this package and not the traffic engine, which
// produces results. The JSON form of Result is documented in docs/bench.md.
package results
