package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"linerate/box"
	"linerate/internal/units"
	"linerate/results"
	"linerate/wire"
)

// FlowSetText writes the result of third-party flows (bench --from): each
// flow as bench prints it, under a line naming it, then their total and
// the device in the middle's CPUs.
func FlowSetText(w io.Writer, fs *results.FlowSet) {
	for i, f := range fs.Flows {
		fmt.Fprintf(w, "flow %d: %s → %s\n", i+1, f.From, strings.Join(f.To, ", "))
		switch {
		case f.Result != nil && len(f.Result.Search) > 0:
			BenchSearch(w, f.Result)
		case f.Result != nil:
			BenchText(w, f.Result)
		}
		if f.Error != "" {
			fmt.Fprintf(w, "  failed: %s\n", f.Error)
		}
		fmt.Fprintln(w)
	}
	t := fs.Total
	fmt.Fprintf(w, "total of %d flows: sent %s %s, received %s %s", len(fs.Flows),
		units.Fixed.Unit(t.SentPPS, "pps"), units.Fixed.Unit(t.SentBPS, "b/s"), units.Fixed.Unit(t.ReceivedPPS, "pps"), units.Fixed.Unit(t.ReceivedBPS, "b/s"))
	if fs.Spec.Proto == wire.UDP {
		lost, loss := lostCells(&t, lossPct(t.LossRatio))
		fmt.Fprintf(w, ", lost %s (%s)", lost, loss)
	} else if t.Retransmits > 0 {
		fmt.Fprintf(w, ", %d retransmits", t.Retransmits)
	}
	fmt.Fprintln(w)
	if line := dutLine(fs.Samples); line != "" {
		fmt.Fprintln(w, line)
	}
	for _, l := range fs.StartLines() {
		fmt.Fprintln(w, l)
	}
	for _, n := range fs.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	if fs.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: the figures cover the part that ran")
	}
}

// dutLine is this host's CPU while the flows crossed it.
func dutLine(samples []results.Sample) string {
	var rates []box.Rates
	for _, s := range samples {
		if s.Side == results.SideDUT && s.Host == "" {
			rates = append(rates, s.Rates)
		}
	}
	if len(rates) == 0 {
		return ""
	}
	return "this host (the device in the middle), " + cpuSummary(rates)
}

// cpuSummary is a host's mean busy and softirq share per CPU over its
// samples, and its NET_RX softirqs per second.
func cpuSummary(rates []box.Rates) string {
	type acc struct{ busy, soft float64 }
	cpus := map[int]*acc{}
	var netrx float64
	for _, r := range rates {
		for _, c := range r.CPU {
			a := cpus[c.ID]
			if a == nil {
				a = &acc{}
				cpus[c.ID] = a
			}
			a.busy += c.Busy
			a.soft += c.SoftIRQ
		}
		for _, v := range r.SoftIRQs["NET_RX"] {
			netrx += v
		}
	}
	n := float64(len(rates))
	if n == 0 {
		return ""
	}
	ids := make([]int, 0, len(cpus))
	for id := range cpus {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "%d s sampled: cpu", len(rates))
	for _, id := range ids {
		fmt.Fprintf(&b, " %d:%s (softirq %s)", id, units.Percent(cpus[id].busy/n/100, 0), units.Percent(cpus[id].soft/n/100, 0))
	}
	fmt.Fprintf(&b, ", NET_RX %s/s", units.Fixed.Format(netrx/n))
	return b.String()
}

func flowsHeadline(fs *results.FlowSet) string {
	if tps, _, ok := setTPS(fs); ok && fs.Spec.RR != nil {
		return fmt.Sprintf("%s, %d flows: %s", RRKind(fs.Spec), len(fs.Flows), units.Fixed.Unit(tps, "tps"))
	}
	t := fs.Total
	h := fmt.Sprintf("%s %s, %d flows: %s %s", fs.Spec.Proto, fs.Spec.Direction, len(fs.Flows),
		units.Fixed.Unit(t.ReceivedPPS, "pps"), units.Fixed.Unit(t.ReceivedBPS, "b/s"))
	if fs.Spec.Proto == wire.UDP {
		_, loss := lostCells(&t, lossPct(t.LossRatio))
		h += ", loss " + loss
	}
	return h
}

// flowSeconds adds up the flows' per-second received figures, second by
// second (warmup left out).
func flowSeconds(fs *results.FlowSet) (pps, bps []float64) {
	for _, f := range fs.Flows {
		if f.Result == nil {
			continue
		}
		i := 0
		for _, iv := range f.Result.Intervals {
			if iv.Warmup {
				continue
			}
			if i == len(pps) {
				pps, bps = append(pps, 0), append(bps, 0)
			}
			pps[i] += iv.ReceivedPPS
			bps[i] += iv.ReceivedBPS
			i++
		}
	}
	return slices.Clip(pps), slices.Clip(bps)
}

// lostCells are a UDP direction's lost packets and loss as read: with
// "unknown" for the packets whose receiver died before counting them
// (results.Totals.LossUnknown).
func lostCells(t *results.Totals, ratio string) (lost, loss string) {
	switch {
	case !t.LossUnknown:
		return strconv.FormatUint(t.LostPackets, 10), ratio
	case t.LostPackets == 0:
		return "unknown", "unknown"
	}
	return strconv.FormatUint(t.LostPackets, 10) + " + unknown", ratio + " + unknown"
}
