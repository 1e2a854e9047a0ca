package page

import (
	"fmt"
	"html/template"
	"math"
	"strconv"

	"linerate/internal/units"
	"linerate/report"
	"linerate/results"
	"linerate/wire"
)

// benchView is a bench or zero-loss search result as the page shows it.
type benchView struct {
	res *results.Result
	// What is the test in words.
	What        string
	Interrupted bool
	Cards       []card
	LimitedBy   string
	LimitedWhy  string
	// Events are the links that were down and the early stop, a line
	// each; the per-second charts shade the down times.
	Events  []string
	Targets []targetRow
	// Queues is how each target's receiving interface spread the packets
	// over its receive queues.
	Queues []queueView
	// Sizes are a mix's datagrams per frame size, counted on both ends.
	Sizes []sizeRow
	// Rates are the whole run's rates per second (the client's intervals).
	Rates []template.HTML
	// Warmup says how many warm-up seconds the charts leave out.
	Warmup  int
	Latency []latencyRow
	CDF     template.HTML
	// RRUL is the figure of an RRUL test (bench rrul).
	RRUL *rrulView
	// RR is a transaction test's figures (bench rr), in place of the
	// bulk ones.
	RR *rrView
	// TCPOverTime charts each TCP stream's TCP_INFO once a second.
	TCPOverTime []template.HTML
	Ends        []*endView
	Ledger      *ledgerView
	Search      []searchRow
	// SearchCharts show each size's trials: rate against loss.
	SearchCharts []template.HTML
	Notes        []string
	Errors       []string
}

// card is one headline figure in a box.
type card struct {
	Label, Value, Sub string
	// Bad marks a figure that needs a look (loss, an error).
	Bad bool
}

type targetRow struct {
	Target, Direction                      string
	Sent, Received, Lost, Loss             string
	SentPPS, ReceivedPPS, ReceivedBPS, RTT string
	Bad                                    bool
}

// sizeRow is one frame size of a mix: sent and received, shares, lost.
type sizeRow struct {
	Frame, Payload                int
	Sent, SentShare               string
	Received, ReceivedShare, Lost string
	Bad                           bool
}

// queueView is one receiving interface's packets per receive queue.
type queueView struct {
	Target, Interface, Counter, Error string
	Rows                              []queueRow
}

type queueRow struct {
	Queue          int
	Packets, Share string
	Width          float64 // the share, 0 to 100, as a bar's width
	Empty          bool
}

type latencyRow struct {
	Target, Phase           string
	Probes                  string
	Min, P50, P90, P99, Max string
	NoReply                 bool
}

func pct(r float64) string { return units.Percent(r, 3) }

// lossPoints is a change of a loss ratio in percentage points.
func lossPoints(d float64) string { return fmt.Sprintf("%+.3f points", d*100) }

func pps(v float64) string { return SI(v) + " pps" }

func count(v uint64) string { return units.Count(float64(v)) }

func ms(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) + " ms" }

// newBenchView lays out a bench result.
func newBenchView(r *results.Result) *benchView {
	v := &benchView{res: r, Interrupted: r.Interrupted, Notes: r.Notes, Errors: r.Errors,
		LimitedBy: string(r.Summary.LimitedBy), LimitedWhy: r.Summary.LimitedWhy}
	v.What = benchWhat(r)
	v.events()
	if r.RR != nil {
		v.rr()
	} else {
		v.cards()
		v.targets()
		v.sizes()
		v.queues()
		v.rates()
		v.soak()
		v.latency()
	}
	v.rrul()
	v.tcpOverTime()
	v.ends()
	if r.Ledger != nil {
		v.Ledger = newLedgerView(*r.Ledger)
	}
	v.search()
	for _, t := range r.Targets {
		for _, n := range t.Notes {
			v.Notes = append(v.Notes, t.Target+": "+n)
		}
		for _, e := range t.Errors {
			v.Errors = append(v.Errors, t.Target+": "+e)
		}
	}
	for _, z := range r.Search {
		for _, n := range z.Notes {
			v.Notes = append(v.Notes, z.Size+" B: "+n)
		}
	}
	return v
}

// benchWhat is the test in words.
func benchWhat(r *results.Result) string {
	sp := r.Spec
	what := sp.Proto.String() + " " + sp.Direction.String()
	switch {
	case len(r.Search) > 0:
		what += fmt.Sprintf(", %d ports × %d streams", sp.Ports, sp.Streams)
	case sp.Proto == wire.UDP:
		what += fmt.Sprintf(", %d-byte frames (%d-byte payload), %d ports × %d streams", r.FrameSize, sp.Payload, sp.Ports, sp.Streams)
	default:
		what += fmt.Sprintf(", %d streams", sp.Streams)
	}
	if len(r.Search) > 0 {
		return "zero-loss search: " + what + fmt.Sprintf(", %d threads, engine %s", sp.Threads, r.Engine)
	}
	rate := "as fast as possible"
	if !sp.Rate.Unlimited() {
		rate = "rate " + sp.Rate.String()
	}
	what += fmt.Sprintf(", %s, %s", rate, sp.Duration.D())
	if sp.Warmup > 0 {
		what += fmt.Sprintf(" after %s warm-up", sp.Warmup.D())
	}
	return what + fmt.Sprintf(", %d threads, engine %s", sp.Threads, r.Engine)
}

func (v *benchView) cards() {
	r := v.res
	s := r.Summary
	if len(r.Search) > 0 {
		for _, z := range r.Search {
			c := card{Label: "NDR " + z.Size + " B", Value: pps(z.NDRPPS), Sub: units.Bps(z.NDRBps)}
			if z.CeilingPPS > 0 {
				c.Sub += fmt.Sprintf(", %s of the ceiling", units.Percent(z.NDRPPS/z.CeilingPPS, 1))
			}
			v.Cards = append(v.Cards, c)
			if z.PDRPPS > 0 {
				v.Cards = append(v.Cards, card{Label: fmt.Sprintf("PDR %s B (loss ≤ %s)", z.Size, pct(z.PDRLoss)), Value: pps(z.PDRPPS), Sub: units.Bps(z.PDRBps)})
			}
		}
		return
	}
	recv := card{Label: "received", Value: pps(s.ReceivedPPS), Sub: units.Bps(s.ReceivedBPS)}
	sent := card{Label: "sent", Value: pps(s.SentPPS), Sub: units.Bps(s.SentBPS)}
	if r.Spec.Proto == wire.TCP {
		recv = card{Label: "goodput", Value: units.Bps(s.ReceivedBPS), Sub: pps(s.ReceivedPPS) + " of segments"}
		sent = card{Label: "sent", Value: units.Bps(s.SentBPS), Sub: count(s.SentBytes) + " bytes"}
	}
	if pc := s.PathCeiling; pc != nil && pc.FPS > 0 && r.Spec.Proto == wire.UDP {
		recv.Sub += fmt.Sprintf(" — %s of the ceiling (%s pps, %s at %s %s)", units.Percent(s.ReceivedPPS/pc.FPS, 1), SI(pc.FPS), pc.What, pc.Host, pc.Iface)
	} else if pc != nil && pc.L2Bps > 0 {
		recv.Sub += fmt.Sprintf(" — %s of the ceiling (%s, %s at %s %s)", units.Percent(s.ReceivedBPS/pc.L2Bps, 1), units.Bps(pc.L2Bps), pc.What, pc.Host, pc.Iface)
	}
	v.Cards = append(v.Cards, recv, sent)
	if r.Spec.Proto == wire.UDP {
		loss := card{Label: "loss", Value: pct(s.LossRatio),
			Sub: fmt.Sprintf("%s of %s packets", count(s.LostPackets), count(s.SentPackets)), Bad: s.LostPackets > 0}
		if s.LossUnknown {
			loss.Value, loss.Sub, loss.Bad = "unknown", "a far end stopped counting mid-run: what it did not count is not called lost", true
		}
		v.Cards = append(v.Cards, loss)
	} else {
		v.Cards = append(v.Cards, card{Label: "retransmits", Value: count(s.Retransmits), Bad: s.Retransmits > 0})
	}
	if l := s.LatencyLoad; l != nil && l.Received > 0 {
		sub := "p99 " + ms(l.P99)
		if i := s.LatencyIdle; i != nil && i.Received > 0 {
			sub += ", idle p50 " + ms(i.P50)
		}
		v.Cards = append(v.Cards, card{Label: "latency under load, p50", Value: ms(l.P50), Sub: sub})
	}
	v.Cards = append(v.Cards, cpuCards(s, r.Spec.Proto, "Mpkt")...)
}

// cpuCards are each end's CPU, whose it is said: linerate's process (its
// cost per Gbit for TCP, else per million of what the summary counts,
// per naming it) and the machine's busy time.
func cpuCards(s results.Summary, proto wire.Proto, per string) []card {
	var out []card
	for _, end := range []struct {
		name                  string
		secs, mp, gb, machine *float64
		busy                  *float64
	}{{"server", s.ProcessCPUSeconds.Server, s.ProcessCPUSecondsPerMpkt.Server, s.ProcessCPUSecondsPerGbit.Server, s.CPUSeconds.Server, s.MachineCPUBusy.Server},
		{"client", s.ProcessCPUSeconds.Client, s.ProcessCPUSecondsPerMpkt.Client, s.ProcessCPUSecondsPerGbit.Client, s.CPUSeconds.Client, s.MachineCPUBusy.Client}} {
		if c, ok := cpuCard(proto, end.name, end.secs, end.mp, end.gb, per); ok {
			out = append(out, c)
		}
		if end.machine != nil {
			c := card{Label: end.name + " machine CPU", Value: fmt.Sprintf("%.2f CPU-s busy", *end.machine),
				Sub: "every CPU of the machine, whatever ran on it"}
			if end.busy != nil {
				c.Sub = units.Percent(*end.busy, 1) + " of its CPUs, whatever ran on them"
			}
			out = append(out, c)
		}
	}
	return out
}

// cpuCard is the card of linerate's own process on one end: its cost
// per Gbit (TCP) or per million (per names what), and its CPU-seconds.
func cpuCard(proto wire.Proto, name string, secs, mp, gb *float64, per string) (card, bool) {
	c := card{Label: name + " linerate process CPU"}
	switch {
	case secs == nil:
		return c, false
	case proto == wire.TCP && gb != nil:
		c.Value = fmt.Sprintf("%.3f s/Gbit", *gb)
	case mp != nil:
		c.Value = fmt.Sprintf("%.3f s/%s", *mp, per)
	default:
		c.Value = fmt.Sprintf("%.2f CPU-s", *secs)
		return c, true
	}
	c.Sub = fmt.Sprintf("%.2f CPU-seconds", *secs)
	return c, true
}

// figures are the run's headline figures for a comparison.
func (v *benchView) figures() []figure {
	r := v.res
	s := r.Summary
	if len(r.Search) > 0 {
		var out []figure
		for _, z := range r.Search {
			out = append(out, figure{Name: "NDR " + z.Size + " B", Value: z.NDRPPS, Format: pps, Higher: true})
			if z.PDRPPS > 0 {
				out = append(out, figure{Name: "PDR " + z.Size + " B", Value: z.PDRPPS, Format: pps, Higher: true})
			}
		}
		return out
	}
	if r.RR != nil {
		return rrFigures(r.RR)
	}
	out := []figure{
		{Name: "received", Value: s.ReceivedPPS, Format: pps, Higher: true},
		{Name: "received bits", Value: s.ReceivedBPS, Format: units.Bps, Higher: true},
		{Name: "sent (offered load)", Value: s.SentPPS, Format: pps, Offered: true},
	}
	if r.Spec.Proto == wire.UDP {
		out = append(out, figure{Name: "loss", Value: s.LossRatio, Format: pct, Points: lossPoints, Load: r.Offered().String()})
	} else {
		out = append(out, figure{Name: "retransmits", Value: float64(s.Retransmits), Format: func(f float64) string { return count(uint64(f)) }})
	}
	if l := s.LatencyLoad; l != nil && l.Received > 0 {
		out = append(out, figure{Name: "latency p50 under load", Value: l.P50, Format: ms},
			figure{Name: "latency p99 under load", Value: l.P99, Format: ms})
	}
	out = append(out, rrulFigures(r.RRUL)...)
	cpu := func(f float64) string { return fmt.Sprintf("%.3f s/Mpkt", f) }
	if c := s.ProcessCPUSecondsPerMpkt.Server; c != nil {
		out = append(out, figure{Name: "server process CPU per Mpkt", Value: *c, Format: cpu})
	}
	if c := s.ProcessCPUSecondsPerMpkt.Client; c != nil {
		out = append(out, figure{Name: "client process CPU per Mpkt", Value: *c, Format: cpu})
	}
	return out
}

func (v *benchView) targets() {
	r := v.res
	for i, t := range r.Targets {
		for _, d := range []struct {
			name wire.Direction
			t    *results.Totals
		}{{wire.Forward, t.Forward}, {wire.Reverse, t.Reverse}} {
			if d.t == nil {
				continue
			}
			row := targetRow{Target: t.Target, Direction: string(d.name),
				Sent: count(d.t.SentPackets), Received: count(d.t.ReceivedPackets), Lost: count(d.t.LostPackets),
				Loss: pct(d.t.LossRatio), SentPPS: SI(d.t.SentPPS), ReceivedPPS: SI(d.t.ReceivedPPS),
				ReceivedBPS: units.Bps(d.t.ReceivedBPS), RTT: tcpRTT(r, i, d.name), Bad: d.t.LostPackets > 0}
			if d.t.LossUnknown {
				row.Lost, row.Loss, row.Bad = "unknown", "unknown", true
			}
			v.Targets = append(v.Targets, row)
		}
	}
}

// sizes lists a mix's frame sizes (nothing for one size).
func (v *benchView) sizes() {
	if len(v.res.Summary.Sizes) < 2 {
		return
	}
	for _, z := range v.res.Summary.Sizes {
		v.Sizes = append(v.Sizes, sizeRow{Frame: z.Frame, Payload: z.Payload, Sent: count(z.SentPackets),
			SentShare: units.Percent(z.SentShare, 2), Received: count(z.ReceivedPackets),
			ReceivedShare: units.Percent(z.ReceivedShare, 2), Lost: count(z.LostPackets), Bad: z.LostPackets > 0})
	}
}

// queues lays out each target's receive queue counts: always when there
// are counts, and why there are none when the test spread its flows or
// asked for the XDP counter (as the text output does).
func (v *benchView) queues() {
	sp := v.res.Spec
	for _, t := range v.res.Targets {
		q := t.RxQueues
		if q == nil || (len(q.Packets) == 0 && sp.Flows() <= 1 && !sp.XDP) {
			continue
		}
		qv := queueView{Target: t.Target, Interface: q.Interface, Counter: q.Counter, Error: q.Error}
		if len(q.Packets) == 0 && qv.Error == "" {
			qv.Error = "no counts"
		}
		for i, s := range q.Shares() {
			qv.Rows = append(qv.Rows, queueRow{Queue: i, Packets: count(q.Packets[i]), Share: units.Percent(s, 1),
				Width: math.Round(s * 1000 / 10), Empty: q.Packets[i] == 0})
		}
		v.Queues = append(v.Queues, qv)
	}
}

// tcpRTT is the mean smoothed RTT of a target's TCP streams in a
// direction.
func tcpRTT(r *results.Result, target int, dir wire.Direction) string {
	v, ok := report.StreamsRTT(r, target, dir)
	if !ok {
		return "-"
	}
	return ms(v)
}

// events lists the link events and the early stop.
func (v *benchView) events() {
	r := v.res
	for _, e := range r.LinkEvents {
		v.Events = append(v.Events, report.LinkEventLine(e, len(r.Targets) > 1))
	}
	if se := r.StoppedEarly; se != nil {
		v.Events = append(v.Events, fmt.Sprintf("stopped early: the figures cover the run up to %.1f s (noticed at %.1f s): %s", se.At, se.Detected, se.Reason))
	}
}

// linkBands are the spans the link events were down, for the charts.
func linkBands(r *results.Result) []band {
	var bs []band
	for _, e := range r.LinkEvents {
		bs = append(bs, band{From: e.Down, To: e.Down + e.Seconds, Label: report.LinkEventLine(e, len(r.Targets) > 1)})
	}
	return bs
}

// rates charts the client's intervals: packets and bits per second sent
// and received, and what was in flight apart from what was lost. A side
// nothing measured in a second (no server report) is a gap.
func (v *benchView) rates() {
	r := v.res
	var t, spps, rpps, sbps, rbps, flight, lost []float64
	// Lost is only what the end totals say: spread evenly over the
	// window, it is the mean lost per second, flat at 0 when none was.
	lostPerSec := 0.0
	if s := r.Summary; s.Seconds > 0 {
		lostPerSec = float64(s.LostPackets) / s.Seconds
	}
	nan := math.NaN()
	for _, iv := range r.Intervals {
		if iv.Warmup {
			v.Warmup++
			continue
		}
		sp, sb, rp, rb := iv.SentPPS, iv.SentBPS, iv.ReceivedPPS, iv.ReceivedBPS
		if iv.SentUnknown {
			sp, sb = nan, nan
		}
		if iv.ReceivedUnknown {
			rp, rb = nan, nan
		}
		t = append(t, iv.T)
		spps, rpps, sbps, rbps = append(spps, sp), append(rpps, rp), append(sbps, sb), append(rbps, rb)
		// NaN when either side is unknown; never below 0 (the server's
		// second, by its own clock, may catch more than the client's).
		flight = append(flight, math.Max(0, sp-rp))
		lost = append(lost, lostPerSec)
	}
	if len(t) == 0 {
		return
	}
	var pref, bref []ref
	if pc := r.Summary.PathCeiling; pc != nil {
		if pc.FPS > 0 && r.Spec.Proto == wire.UDP {
			pref = append(pref, ref{Y: pc.FPS, Label: "ceiling " + SI(pc.FPS) + " pps (" + pc.What + ")"})
		}
		if pc.L2Bps > 0 {
			bref = append(bref, ref{Y: pc.L2Bps, Label: "ceiling " + units.Bps(pc.L2Bps) + " (" + pc.What + ")"})
		}
	}
	down := linkBands(r)
	v.Rates = append(v.Rates,
		chart{Title: "packets per second", X: t, Unit: "", Refs: pref, Bands: down, Series: []series{
			{Name: "sent", Color: colour(0), Y: spps}, {Name: "received", Color: colour(1), Y: rpps}}}.Render(),
		chart{Title: "bits per second", X: t, Unit: "b/s", Refs: bref, Bands: down, Series: []series{
			{Name: "sent", Color: colour(0), Y: sbps}, {Name: "received", Color: colour(1), Y: rbps}}}.Render())
	if r.Spec.Proto == wire.UDP {
		v.Rates = append(v.Rates, chart{Title: "in flight (sent − received in each second) and lost (the end totals' loss, mean per second), packets per second", X: t, Bands: down,
			Series: []series{{Name: "in flight: sent − received", Color: colour(3), Y: flight}, {Name: "lost (end totals)", Color: colour(4), Y: lost}}}.Render())
	}
}

func (v *benchView) latency() {
	r := v.res
	add := func(target string, idle, load *results.Latency) {
		for _, p := range []struct {
			phase string
			l     *results.Latency
		}{{"idle", idle}, {"under load", load}} {
			if p.l == nil {
				continue
			}
			row := latencyRow{Target: target, Phase: p.phase, Probes: fmt.Sprintf("%d / %d", p.l.Received, p.l.Sent), NoReply: p.l.Received == 0}
			if p.l.Received > 0 {
				row.Min, row.P50, row.P90, row.P99, row.Max = ms(p.l.Min), ms(p.l.P50), ms(p.l.P90), ms(p.l.P99), ms(p.l.Max)
			}
			v.Latency = append(v.Latency, row)
		}
	}
	add("all targets", r.Summary.LatencyIdle, r.Summary.LatencyLoad)
	if len(r.Targets) > 1 {
		for _, t := range r.Targets {
			add(t.Target, t.LatencyIdle, t.LatencyLoad)
		}
	}
	var ss []series
	for i, p := range []struct {
		name string
		l    *results.Latency
	}{{"idle", r.Summary.LatencyIdle}, {"under load", r.Summary.LatencyLoad}} {
		if p.l == nil || p.l.Received == 0 {
			continue
		}
		ss = append(ss, series{Name: p.name, Color: colour(i),
			X: []float64{p.l.Min, p.l.P50, p.l.P90, p.l.P99, p.l.Max}, Y: []float64{0, 50, 90, 99, 100}})
	}
	if len(ss) > 0 {
		v.CDF = chart{Title: "round trip of the probes: share answered within a time (through min, p50, p90, p99, max)",
			Series: ss, Unit: "%", YMax: 100, XLog: true, XFormat: func(x float64) string { return SI(x) + "ms" }}.Render()
	}
}
