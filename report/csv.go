package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"linerate/history"
	"linerate/plan"
	"linerate/results"
)

// The CSV outputs (--csv on bench, run and runs): a header row, then one
// row per result, numbers unformatted (bit/s, packets, ratios 0 to 1).

// totalsHeader are the columns every CSV of measured traffic ends with.
var totalsHeader = []string{"seconds", "sent_packets", "received_packets", "lost_packets", "loss_ratio",
	"retransmits", "sent_pps", "received_pps", "sent_bps", "received_bps"}

func totalsRow(t *results.Totals) []string {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	lost, ratio := u(t.LostPackets), f(t.LossRatio)
	if t.LossUnknown {
		lost, ratio = "", "" // not counted: a far end stopped counting
	}
	return []string{f(t.Seconds), u(t.SentPackets), u(t.ReceivedPackets), lost, ratio,
		u(t.Retransmits), f(t.SentPPS), f(t.ReceivedPPS), f(t.SentBPS), f(t.ReceivedBPS)}
}

// BenchCSV writes a bench result as CSV: one row per target and direction
// (forward: the client sent; reverse: the target sent). A forward row ends
// with the packets each receive queue of the server's interface took,
// queue 0 first, separated by spaces (empty when not counted).
func BenchCSV(w io.Writer, r *results.Result) error {
	cw := csv.NewWriter(w)
	cw.Write(append(append([]string{"target", "address", "direction"}, totalsHeader...), "rx_queue_packets"))
	for _, t := range r.Targets {
		for _, d := range []struct {
			name string
			t    *results.Totals
		}{{"forward", t.Forward}, {"reverse", t.Reverse}} {
			if d.t == nil {
				continue
			}
			var queues []string
			if q := t.RxQueues; q != nil && d.name == "forward" {
				for _, p := range q.Packets {
					queues = append(queues, strconv.FormatUint(p, 10))
				}
			}
			cw.Write(append(append([]string{t.Target, t.Address, d.name}, totalsRow(d.t)...), strings.Join(queues, " ")))
		}
	}
	cw.Flush()
	return cw.Error()
}

// PlanCSV writes a plan's run as CSV: one row per cell, round and flow
// (cell empty for a plan without a matrix); a flow that failed has its
// error and no figures.
func PlanCSV(w io.Writer, pl *plan.Plan, r *plan.Result) error {
	cw := csv.NewWriter(w)
	cw.Write(append([]string{"cell", "round", "flow", "from", "to", "error"}, totalsHeader...))
	rows := func(cell string, cp *plan.Plan, sets []results.FlowSet) {
		for n, set := range sets {
			for i, f := range set.Flows {
				name := strconv.Itoa(i + 1)
				if i < len(cp.Flows) {
					name = cp.Flows[i].Name
				}
				row := []string{cell, strconv.Itoa(n + 1), name, f.From, strings.Join(f.To, " "), f.Error}
				if f.Result != nil {
					row = append(row, totalsRow(&f.Result.Summary.Totals)...)
				}
				cw.Write(row)
			}
		}
	}
	if pl.Matrix == nil {
		rows("", pl, r.Rounds)
	}
	cells := map[string]plan.Cell{}
	if pl.Matrix != nil {
		for _, c := range pl.Matrix.Cells() {
			cells[c.Key] = c
		}
	}
	for _, c := range r.Matrix {
		rows(c.Key, pl.CellPlan(cells[c.Key]), c.Rounds)
	}
	cw.Flush()
	return cw.Error()
}

// RunsCSV writes the history's list as CSV: one row per run.
func RunsCSV(w io.Writer, entries []history.Entry) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"id", "time", "kind", "host", "kernel", "linerate_version", "command", "headline"})
	for _, e := range entries {
		cw.Write([]string{e.ID, e.Time.UTC().Format("2006-01-02T15:04:05Z"), e.Kind, e.Host, e.Kernel, e.Version,
			strings.Join(e.Command, " "), e.Headline})
	}
	cw.Flush()
	return cw.Error()
}
