package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"linerate/history"
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
