package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"linerate/internal/units"
	"linerate/results"
	"linerate/wire"
)

// rrulFlows prints an RRUL test's streams, up first, each with its mark.
func rrulFlows(w io.Writer, r *results.RRUL) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stream\tdirection\tmark\tgoodput\tretrans\trtt\t")
	for _, f := range r.Flows {
		rtt := "-"
		if f.RTTMs > 0 {
			rtt = fmt.Sprintf("%.2fms", f.RTTMs)
		}
		fmt.Fprintf(tw, "%d/%d\t%s\t%s (%d)\t%s\t%d\t%s\t\n", f.Target, f.Stream, RRULDirection(f.Direction), f.Mark, f.DSCP,
			units.Fixed.Unit(f.GoodputBPS, "b/s"), f.Retransmits, rtt)
	}
	tw.Flush()
}

// rrulSummary prints the latency the load induced and the goodput each
// way: flent's RRUL figure in two lines.
func rrulSummary(w io.Writer, r *results.RRUL) {
	fmt.Fprintf(w, "rrul      latency idle %s, under load %s: induced %s\n", rrulLatency(r.LatencyIdle), rrulLatency(r.LatencyLoad), RRULInduced(r))
	fmt.Fprintf(w, "          goodput up %s, down %s, %d streams each way\n", units.Fixed.Unit(r.UpBPS, "b/s"), units.Fixed.Unit(r.DownBPS, "b/s"), len(r.Flows)/2)
}

func rrulLatency(l *results.Latency) string {
	if l == nil || l.Received == 0 {
		return "unknown (no probe answered)"
	}
	return fmt.Sprintf("p50 %.3fms p95 %.3fms", l.P50, l.P95)
}

// RRULInduced is the latency an RRUL test's load added, in words: its
// median and 95th percentile less those idle.
func RRULInduced(r *results.RRUL) string {
	if r.InducedP50 == nil || r.InducedP95 == nil {
		return "unknown"
	}
	return fmt.Sprintf("%+.3fms at p50, %+.3fms at p95", *r.InducedP50, *r.InducedP95)
}

// RRULDirection names a direction of an RRUL test as flent does: up is
// client to server.
func RRULDirection(d wire.Direction) string {
	if d == wire.Forward {
		return "up"
	}
	return "down"
}
