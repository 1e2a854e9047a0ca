//go:build !small

package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"linerate/box"
	"linerate/internal/units"
	"linerate/plan"
	"linerate/results"
)

// PlanResult writes what a plan's run measured: per round each flow, each
// port against what it was expected to carry, the total against the
// ceiling, and each host's CPUs.
func PlanResult(w io.Writer, pl *plan.Plan, r *plan.Result) error {
	ew := &ceilErrWriter{w: w}
	for n, set := range r.Rounds {
		fmt.Fprintf(ew, "round %d of %d\n", n+1, len(r.Rounds))
		if !pl.OnlyRR() {
			planFlows(ew, pl, &set)
		}
		planRR(ew, pl, &set)
		if r.Expected != nil && !pl.OnlyRR() {
			planPorts(ew, pl, r.Expected, &set)
		}
		if !pl.OnlyRR() {
			planTotal(ew, pl, r.Expected, &set)
		}
		planHosts(ew, pl, &set)
		for _, l := range set.StartLines() {
			fmt.Fprintln(ew, l)
		}
		for _, n := range set.Notes {
			fmt.Fprintln(ew, "note:", n)
		}
		fmt.Fprintln(ew)
	}
	if len(r.Rounds) > 1 && pl.HasRR() {
		var tps []float64
		for i := range r.Rounds {
			t, _, _ := setTPS(&r.Rounds[i])
			tps = append(tps, t)
		}
		slices.Sort(tps)
		fmt.Fprintf(ew, "over %d rounds: transactions %s median, %s to %s\n", len(tps),
			units.Fixed.Unit(tps[len(tps)/2], "tps"), units.Fixed.Unit(tps[0], "tps"), units.Fixed.Unit(tps[len(tps)-1], "tps"))
	}
	if len(r.Rounds) > 1 && !pl.OnlyRR() {
		var bps []float64
		for _, s := range r.Rounds {
			bps = append(bps, s.Total.ReceivedBPS)
		}
		slices.Sort(bps)
		fmt.Fprintf(ew, "over %d rounds: total received %s median, %s to %s\n", len(bps),
			units.Fixed.Unit(bps[len(bps)/2], "b/s"), units.Fixed.Unit(bps[0], "b/s"), units.Fixed.Unit(bps[len(bps)-1], "b/s"))
	}
	for _, e := range r.Errors {
		fmt.Fprintln(ew, "error:", e)
	}
	for i, set := range r.Rounds {
		for j, f := range set.Flows {
			if f.Result == nil {
				continue // a failed flow's error is in its row
			}
			for _, e := range f.Result.Problems() {
				fmt.Fprintf(ew, "error: round %d, flow %d: %s\n", i+1, j+1, e)
			}
		}
	}
	if r.Interrupted {
		fmt.Fprintln(ew, "INTERRUPTED: the figures cover the part that ran")
	}
	return ew.err
}

// planTotal writes a round's bulk total against what was expected: the
// links' line rate and what the plan's bus leaves of it, and whether the
// bus held this round (a lab's ports are on none) or the total went past
// it.
func planTotal(w io.Writer, pl *plan.Plan, e *plan.Expectation, set *results.FlowSet) {
	t := set.Total
	got := plan.Goodput(&t)
	fmt.Fprintf(w, "total: received %s, goodput %s", units.Fixed.Unit(t.ReceivedPPS, "pps"), units.Fixed.Unit(got, "b/s"))
	if e != nil && e.Total.Known {
		fmt.Fprintf(w, " (expected at line rate %s", units.Bps(e.Total.GoodputBps))
		if e.Bus != nil && e.LimitedBps < e.Total.GoodputBps {
			fmt.Fprintf(w, "; %s after the bus", units.Bps(e.LimitedBps))
			fmt.Fprint(w, busNote(pl, e, pl.BusOf(e, set), got))
		}
		fmt.Fprint(w, ")")
	}
	fmt.Fprintln(w)
}

// busNote says what became of the bus's limit in a run that measured
// got: it does not apply (a port behind it is virtual: a lab's), or got
// is past it (the bus modelled is not the one the traffic crossed), or
// nothing.
func busNote(pl *plan.Plan, e *plan.Expectation, ev plan.BusEvidence, got float64) string {
	link := "the plan's bus"
	if e.Bus != nil {
		link = fmt.Sprintf("%s's PCIe %s link", e.Bus.Host, linkName(e.Bus.Bus.Link))
	}
	switch {
	case !ev.Applies():
		return fmt.Sprintf(", which does not apply here: %s is the plan's model, and %s", link, ev)
	case got > results.OverCeiling*e.LimitedBps:
		return fmt.Sprintf("; the goodput is %s of that: %s as the plan models it is not what this traffic crossed (the ports are not behind it, or the link is another)",
			units.Percent(got/e.LimitedBps, 0), link)
	}
	return ""
}

// PlanEnd writes what follows a plan's figures (and its matrix): what a
// matrix's tune plan changed and whether it was put back, and what the run
// cost the controller, with the widest spread of window starts.
func PlanEnd(w io.Writer, r *plan.Result) error {
	ew := &ceilErrWriter{w: w}
	if t := r.Tune; t != nil {
		fmt.Fprintf(ew, "tune plan %s", t.File)
		if t.Netns != "" {
			fmt.Fprintf(ew, " (netns %s)", t.Netns)
		}
		switch {
		case !t.Applied:
			fmt.Fprintln(ew, ": not applied")
		case t.RolledBack:
			fmt.Fprintf(ew, ": %d changes applied for the \"tune on\" half, rolled back after\n", len(t.Changes))
		default:
			fmt.Fprintf(ew, ": %d changes applied, NOT all rolled back\n", len(t.Changes))
		}
		for _, c := range t.Changes {
			fmt.Fprintf(ew, "  %s %s: %s → %s\n", c.Kind, c.Target, c.From, c.To)
		}
		for _, e := range t.Errors {
			fmt.Fprintln(ew, "error: tune:", e)
		}
	}
	if u := r.Controller; u != nil {
		fmt.Fprint(ew, u)
		if ms, ok := r.MaxStartSpreadMS(); ok {
			fmt.Fprintf(ew, "; windows opened within %.1f ms (the widest round)", ms)
		}
		fmt.Fprintln(ew)
	}
	return ew.err
}

func planFlows(w io.Writer, pl *plan.Plan, set *results.FlowSet) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "FLOW\tFROM\tTO\tWAY\tSENT\tRECEIVED\tLOST\tRETRANS\tRECV PPS\tRECV BIT/S\t")
	for i := range set.Flows {
		fr := &set.Flows[i]
		f := &pl.Flows[i]
		if f.RR != nil {
			continue // planRR's
		}
		to := strings.Join(fr.To, ",")
		if fr.Error != "" {
			fmt.Fprintf(tw, "%d\t%s\t%s\tfailed\t\t\t\t\t\t\t%s\n", f.Index, f.From, to, fr.Error)
			continue
		}
		fwd, rev := plan.FlowWays(fr)
		for _, way := range []struct {
			name string
			t    *results.Totals
		}{{"forward", fwd}, {"reverse", rev}} {
			if way.t == nil {
				continue
			}
			t := way.t
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t\n", f.Index, f.From, to, way.name,
				t.SentPackets, t.ReceivedPackets, t.LostPackets, t.Retransmits, units.Fixed.Format(t.ReceivedPPS), units.Fixed.Format(t.ReceivedBPS))
		}
	}
	tw.Flush()
}

// planPorts writes each port's measured traffic in and out beside what
// the plan expected of it.
func planPorts(w io.Writer, pl *plan.Plan, e *plan.Expectation, set *results.FlowSet) {
	fmt.Fprintln(w, "per port (goodput received: UDP payload, TCP data):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tPORT\tIN\tEXPECTED IN\tOUT\tEXPECTED OUT")
	got := pl.PortsOf(e, set)
	for j, p := range e.Ports {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Host, p.PortName(), measured(got[j].In, p.In), oneWay(p.In), measured(got[j].Out, p.Out), oneWay(p.Out))
	}
	tw.Flush()
}

// planHosts writes each host's CPUs over the round: a sender's from its
// flows' client samples, a receiver's from their server samples, a host
// under sample: from its own, and this host's.
func planHosts(w io.Writer, pl *plan.Plan, set *results.FlowSet) {
	for _, h := range pl.Hosts {
		var rates []box.Rates
		for i := range set.Flows {
			r := set.Flows[i].Result
			if r == nil || len(rates) > 0 {
				continue
			}
			f := &pl.Flows[i]
			for _, s := range r.Samples {
				if (f.From == h.Name && s.Side == results.SideClient) || (f.To == h.Name && s.Side == results.SideServer) {
					rates = append(rates, s.Rates)
				}
			}
		}
		for _, s := range set.Samples {
			if s.Host == h.Name {
				rates = append(rates, s.Rates)
			}
		}
		if line := cpuSummary(rates); line != "" {
			fmt.Fprintf(w, "%s (%s): %s\n", h.Name, strings.Join(pl.Roles(h.Name), "+"), line)
		}
		if use, ok := results.Conntrack(h.Name, rates); ok && pl.HasRR() && use.Peak > 0 {
			conntrackLine(w, use)
		}
	}
	var self []box.Rates
	for _, s := range set.Samples {
		if s.Side == results.SideDUT && s.Host == "" {
			self = append(self, s.Rates)
		}
	}
	if line := cpuSummary(self); line != "" {
		fmt.Fprintf(w, "this host: %s\n", line)
	}
}

// measured writes a port's measured goodput, "-" where nothing went and
// nothing was expected.
func measured(bps float64, want plan.Traffic) string {
	if bps == 0 && want.Known && want.PPS == 0 {
		return "-"
	}
	return units.Fixed.Unit(bps, "b/s")
}

// planRR writes a plan round's transaction flows: each one's
// transactions, their rate and round trip, and what was lost, then their
// total rate. It writes nothing for a plan without one.
func planRR(w io.Writer, pl *plan.Plan, set *results.FlowSet) {
	if !pl.HasRR() {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "FLOW\tFROM\tTO\tTEST\tTRANSACTIONS\tTPS\tP50\tP99\tP99.9\tLOST\t")
	for i := range set.Flows {
		fr, f := &set.Flows[i], &pl.Flows[i]
		if f.RR == nil {
			continue
		}
		to := strings.Join(fr.To, ",")
		if fr.Error != "" || fr.Result == nil || fr.Result.RR == nil {
			fmt.Fprintf(tw, "%d\t%s\t%s\tfailed\t\t\t\t\t\t\t%s\n", f.Index, f.From, to, fr.Error)
			continue
		}
		rr := fr.Result.RR
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t\n", f.Index, f.From, to, RRKind(fr.Result.Spec), rr.Transactions,
			units.Fixed.Unit(rr.TPS, "tps"), Micros(rr.Latency.P50), Micros(rr.Latency.P99), Micros(rr.Latency.P999), rr.Lost())
	}
	tw.Flush()
	if total, _, ok := setTPS(set); ok {
		fmt.Fprintf(w, "transactions: %s in all\n", units.Fixed.Unit(total, "tps"))
	}
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
