package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"linerate/internal/units"
	"linerate/results"
	"linerate/wire"
)

// BenchInterval writes one interval line of a bench run. live rewrites the
// same terminal line (carriage return, erase to end of line) instead of
// adding one.
func BenchInterval(w io.Writer, iv results.IntervalStats, live bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "%6.1fs  sent %s  recv %s", iv.T,
		intervalRates(iv.SentPPS, iv.SentBPS, iv.SentUnknown), intervalRates(iv.ReceivedPPS, iv.ReceivedBPS, iv.ReceivedUnknown))
	if len(iv.CPU) > 0 {
		b.WriteString("  cpu")
		for _, c := range iv.CPU {
			fmt.Fprintf(&b, " %5s", units.Percent(c.Busy/100, 0))
		}
	}
	if iv.Warmup {
		b.WriteString("  (warmup)")
	}
	if live {
		fmt.Fprintf(w, "\r%s\x1b[K", b.String())
		return
	}
	fmt.Fprintln(w, b.String())
}

// intervalRates is one side of an interval line: its packet and bit
// rates, or "?" in their place when nothing measured them.
func intervalRates(pps, bps float64, unknown bool) string {
	if unknown {
		return fmt.Sprintf("%9s %10s", "?", "?")
	}
	return fmt.Sprintf("%9s %10s", units.Fixed.Unit(pps, "pps"), units.Fixed.Unit(bps, "b/s"))
}

// BenchEndLive ends a live interval line.
func BenchEndLive(w io.Writer) { fmt.Fprint(w, "\r\x1b[K") }

// BenchJSON writes a bench result as indented JSON (docs/bench.md).
func BenchJSON(w io.Writer, r *results.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// BenchText writes a bench result for a person: what ran, per target and
// direction the packets, rates and loss, latency, CPU cost and what
// limited the run.
func BenchText(w io.Writer, r *results.Result) {
	sp := r.Spec
	what := fmt.Sprintf("%s %s", sp.Proto, sp.Direction)
	if sp.Proto == wire.UDP {
		if m := r.Mix(); len(m.Parts) > 1 && m.Name != "" && m.Name != m.String() {
			what += fmt.Sprintf(", frames %s (%s, frame bytes:weight)", m.Name, m)
		} else if len(m.Parts) > 1 {
			what += fmt.Sprintf(", frames %s (frame bytes:weight)", m)
		} else {
			what += fmt.Sprintf(", %d-byte frames (%d-byte payload)", r.FrameSize, sp.Payload)
		}
		what += fmt.Sprintf(", %d ports × %d streams", sp.Ports, sp.Streams)
	} else {
		what += fmt.Sprintf(", %d streams", sp.Streams)
		if sp.MSS > 0 {
			what += fmt.Sprintf(", mss %d", sp.MSS)
		}
	}
	what += fmt.Sprintf(", rate %s, %s", sp.Rate, sp.Duration.D())
	if sp.Warmup > 0 {
		what += fmt.Sprintf(" after %s warmup", sp.Warmup.D())
	}
	what += fmt.Sprintf(", %d threads, engine %s", sp.Threads, r.Engine)
	if r.Interrupted {
		what += " — INTERRUPTED, partial result"
	}
	if se := r.StoppedEarly; se != nil {
		what += fmt.Sprintf(" — STOPPED EARLY at %.1f s by the error below, partial result", se.At)
	}
	fmt.Fprintln(w, what)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if sp.Proto == wire.UDP {
		fmt.Fprintln(tw, "target\tdirection\tsent pkts\treceived\tlost\tloss\treorder\tdup\tsent pps\trecv pps\trecv bit/s\t")
	} else {
		fmt.Fprintln(tw, "target\tdirection\tsent bytes\treceived\tsegments\tretrans\trtt\tgoodput\t")
	}
	row := func(name, dir string, t *results.Totals, rtt string) {
		if sp.Proto == wire.UDP {
			lost, loss := lostCells(t, units.Percent(t.LossRatio, 3))
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t\n", name, dir, t.SentPackets, t.ReceivedPackets,
				lost, loss, t.Reordered, t.Duplicates, units.Fixed.Format(t.SentPPS), units.Fixed.Format(t.ReceivedPPS), units.Fixed.Format(t.ReceivedBPS))
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t\n", name, dir, t.SentBytes, t.ReceivedBytes,
				t.SentPackets, t.Retransmits, rtt, units.Fixed.Unit(t.ReceivedBPS, "b/s"))
		}
	}
	for i, tr := range r.Targets {
		for _, d := range []struct {
			name wire.Direction
			t    *results.Totals
		}{{wire.Forward, tr.Forward}, {wire.Reverse, tr.Reverse}} {
			if d.t != nil {
				row(tr.Target, string(d.name), d.t, benchRTT(r, i, d.name))
			}
		}
	}
	if len(r.Targets) > 1 || (len(r.Targets) == 1 && r.Targets[0].Forward != nil && r.Targets[0].Reverse != nil) {
		row("total", "", &r.Summary.Totals, "")
	}
	tw.Flush()
	sizesText(w, r.Summary.Sizes)
	if r.RRUL != nil {
		rrulFlows(w, r.RRUL)
	} else if sp.Proto == wire.TCP && len(r.Streams) > 1 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "stream\tdirection\tgoodput\tretrans\trtt\t")
		for _, s := range r.Streams {
			rtt := ""
			if s.TCP != nil {
				rtt = fmt.Sprintf("%.2fms", float64(s.TCP.RTTMicros)/1000)
			}
			fmt.Fprintf(tw, "%d/%d\t%s\t%s\t%d\t%s\t\n", s.Target, s.Stream, s.Direction, units.Fixed.Unit(s.ReceivedBPS, "b/s"), s.Retransmits, rtt)
		}
		tw.Flush()
	}
	for _, tr := range r.Targets {
		if x := tr.XDP; x != nil {
			if x.Error != "" {
				fmt.Fprintf(w, "xdp       %s: %s\n", tr.Target, x.Error)
				continue
			}
			mode := x.Mode + " mode"
			switch {
			case x.Mode == results.XDPNative:
				mode += ", in the driver"
			case x.NativeError != "":
				mode += ", the driver refused native: " + x.NativeError
			}
			fmt.Fprintf(w, "xdp       %s: %d packets reached %s (%s pps, %s)\n", tr.Target, x.Packets, x.Interface, units.Fixed.Format(x.PPS), mode)
		}
		if a := tr.AFXDP; a != nil {
			fmt.Fprintf(w, "afxdp     %s: %s\n", tr.Target, AFXDPLine(a))
		}
	}
	for _, tr := range r.Targets {
		// Counts are always worth a line; that there are none only when
		// the test asked for a spread (several flows) or for the counter.
		if q := tr.RxQueues; q != nil && (len(q.Packets) > 0 || sp.Flows() > 1 || sp.XDP) {
			fmt.Fprintf(w, "rx queues %s: %s\n", tr.Target, QueueSpread(q))
		}
	}
	sum := r.Summary
	if sum.LatencyIdle != nil || sum.LatencyLoad != nil {
		fmt.Fprintf(w, "latency   idle %s\n          load %s\n", benchLatency(sum.LatencyIdle), benchLatency(sum.LatencyLoad))
	}
	if r.RRUL != nil {
		rrulSummary(w, r.RRUL)
	}
	CPULines(w, sum, "Mpkt")
	for _, e := range r.LinkEvents {
		fmt.Fprintln(w, LinkEventLine(e, len(r.Targets) > 1))
	}
	if sum.LimitedBy != "" {
		fmt.Fprintf(w, "limited by %s: %s\n", sum.LimitedBy, sum.LimitedWhy)
	} else if sum.LimitedWhy != "" {
		fmt.Fprintf(w, "limited by: cannot tell (%s)\n", sum.LimitedWhy)
	}
	if r.Ledger != nil {
		_ = Ledger(w, *r.Ledger)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	for _, tr := range r.Targets {
		for _, n := range tr.Notes {
			fmt.Fprintf(w, "note: %s: %s\n", tr.Target, n)
		}
	}
	for _, e := range r.Problems() {
		fmt.Fprintln(w, "error:", e)
	}
}

// LinkEventLine is a link event as the reports list it: "link lra
// (client) down 2.0 s → 5.0 s: set down"; several says the test had
// several targets (its servers are numbered).
func LinkEventLine(e results.LinkEvent, several bool) string {
	up := "the end of the run"
	if e.Up != nil {
		up = fmt.Sprintf("%.1f s", *e.Up)
	}
	return fmt.Sprintf("link %s (%s) down %.1f s → %s: %s", e.Iface, e.End(several), e.Down, up, e.Why)
}

func benchRTT(r *results.Result, target int, dir wire.Direction) string {
	ms, ok := StreamsRTT(r, target, dir)
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2fms", ms)
}

// StreamsRTT is the mean smoothed RTT, in milliseconds, of a target's TCP
// streams in a direction; ok is false when it has none.
func StreamsRTT(r *results.Result, target int, dir wire.Direction) (ms float64, ok bool) {
	var sum float64
	n := 0
	for _, s := range r.Streams {
		if s.Target == target && s.Direction == dir && s.TCP != nil {
			sum += float64(s.TCP.RTTMicros)
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n) / 1000, true
}

func benchLatency(l *results.Latency) string {
	if l == nil {
		return "-"
	}
	if l.Received == 0 {
		return fmt.Sprintf("no reply to %d probes", l.Sent)
	}
	return fmt.Sprintf("p50 %.3fms  p90 %.3fms  p99 %.3fms  max %.3fms  (%d/%d probes answered)",
		l.P50, l.P90, l.P99, l.Max, l.Received, l.Sent)
}

// CPULines writes each end's CPU, whose it is said: linerate's own
// process (its CPU-seconds, per million of what the summary counts, per
// being its name, and per Gbit: what the test cost it) and the whole
// machine's busy time (what says whether the box was full, whatever else
// ran on it).
func CPULines(w io.Writer, sum results.Summary, per string) {
	for i, side := range []results.Side{results.SideClient, results.SideServer} {
		label := "cpu"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "%-9s %s: %s\n", label, side, EndCPU(sum, side, per))
	}
}

// EndCPU is one end's CPU in words: "linerate process 0.45 CPU-s, 15.000
// s/Mpkt, 1.204 s/Gbit; machine 6.94 CPU-s busy (34.7 % of its CPUs)";
// per names a million of the summary's packets ("Mpkt").
func EndCPU(sum results.Summary, side results.Side, per string) string {
	at := func(c results.CPUCost) *float64 {
		if side == results.SideClient {
			return c.Client
		}
		return c.Server
	}
	proc := "linerate process not measured"
	if secs := at(sum.ProcessCPUSeconds); secs != nil {
		proc = fmt.Sprintf("linerate process %.2f CPU-s", *secs)
		if v := at(sum.ProcessCPUSecondsPerMpkt); v != nil {
			proc += fmt.Sprintf(", %.3f s/%s", *v, per)
		}
		if v := at(sum.ProcessCPUSecondsPerGbit); v != nil {
			proc += fmt.Sprintf(", %.3f s/Gbit", *v)
		}
	}
	machine := "machine not sampled"
	if secs := at(sum.CPUSeconds); secs != nil {
		machine = fmt.Sprintf("machine %.2f CPU-s busy", *secs)
		if b := at(sum.MachineCPUBusy); b != nil {
			machine += " (" + units.Percent(*b, 1) + " of its CPUs)"
		}
	}
	return proc + "; " + machine
}

// QueueSpread is a receive queue count in a line: "veth1 (xdp): q0 120345
// 25 %, q1 ...", or why there is none.
func QueueSpread(q *results.QueueStat) string {
	if len(q.Packets) == 0 {
		return cmp.Or(q.Error, "no counts")
	}
	parts := make([]string, len(q.Packets))
	shares := q.Shares()
	for i, p := range q.Packets {
		parts[i] = fmt.Sprintf("q%d %d %s", i, p, units.Percent(shares[i], 0))
	}
	return fmt.Sprintf("%s (%s): %s", q.Interface, q.Counter, strings.Join(parts, ", "))
}

// sizesText writes a mix's datagrams per frame size, counted on both ends
// (nothing for one size).
func sizesText(w io.Writer, sizes []results.SizeTotals) {
	if len(sizes) < 2 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "frame	payload	sent pkts	share	received	share	lost	")
	for _, z := range sizes {
		fmt.Fprintf(tw, "%d B	%d B	%d	%s	%d	%s	%d	\n", z.Frame, z.Payload, z.SentPackets, units.Percent(z.SentShare, 2),
			z.ReceivedPackets, units.Percent(z.ReceivedShare, 2), z.LostPackets)
	}
	tw.Flush()
}

// AFXDPLine says how a target's AF_XDP sockets were bound: how many, in
// which mode, and why the driver refused zero-copy.
func AFXDPLine(a *results.AFXDPStat) string {
	var how string
	switch a.Mode {
	case results.XDPNative:
		how = "native (zero-copy: the driver sends from the UMEM)"
	case results.XDPGeneric:
		how = "generic (copy mode: each frame copied into an skb)"
	default:
		how = fmt.Sprintf("%d of them zero-copy, the rest copy mode", a.ZeroCopy)
	}
	s := fmt.Sprintf("%d socket(s) on %s, %s", a.Sockets, a.Interface, how)
	if a.ZeroCopyError != "" {
		s += "; zero-copy refused: " + a.ZeroCopyError
	}
	return s
}
