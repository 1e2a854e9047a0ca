package page

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"linerate/box"
	"linerate/ceiling"
	"linerate/ledger"
	"linerate/traffic"
)

// benchView is a bench or zero-loss search result as the page shows it.
type benchView struct {
	res *traffic.Result
	// What is the test in words.
	What        string
	Interrupted bool
	Cards       []card
	LimitedBy   string
	LimitedWhy  string
	Targets     []targetRow
	// Rates are the whole run's rates per second (the client's intervals).
	Rates []template.HTML
	// Warmup says how many warm-up seconds the charts leave out.
	Warmup  int
	Latency []latencyRow
	CDF     template.HTML
	Ends    []*endView
	Ledger  *ledgerView
	Search  []searchRow
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

type latencyRow struct {
	Target, Phase           string
	Probes                  string
	Min, P50, P90, P99, Max string
	NoReply                 bool
}

// endView is one end of the test (the client, or a server) as its
// counters saw it once a second.
type endView struct {
	Name string
	// Ifaces are the end's interfaces on the test's path.
	Ifaces []string
	// Traffic charts the interfaces' packets and bits per second.
	Traffic []template.HTML
	// CPUs are small multiples of each CPU's use, stacked.
	CPUs []template.HTML
	// CPUMean is the mean busy share per CPU over the window.
	CPUMean template.HTML
	IRQs    template.HTML
	NetRx   template.HTML
	Softnet template.HTML
	// Drops are the end's non-zero drop counters over the window.
	Drops     []dropRow
	DropError string
}

type dropRow struct{ Where, Counter, Value string }

type ledgerView struct {
	Summary string
	Rows    []ledgerRow
	Excess  string
	Notes   []string
}

type ledgerRow struct {
	Host, Side, Place, Packets, Share string
	Evidence                          []string
}

type searchRow struct {
	Size, Frame, NDR, NDRBps, PDR, PDRBps, PDRLoss, LossBegins, Ceiling, Trials string
	Latency                                                                     []string
	TrialRows                                                                   []trialLine
}

// trialLine is one trial of a search.
type trialLine struct {
	N, Phase, Purpose, Goal, Rate, Duration, Sent, Received, Loss string
	Lost                                                          bool
}

func pct(r float64) string { return strconv.FormatFloat(r*100, 'f', 3, 64) + " %" }

// lossPoints is a change of a loss ratio in percentage points.
func lossPoints(d float64) string { return fmt.Sprintf("%+.3f points", d*100) }

func pps(v float64) string { return si(v) + " pps" }

func count(v uint64) string { return ceiling.FormatCount(float64(v)) }

func ms(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) + " ms" }

// newBenchView lays out a bench result.
func newBenchView(r *traffic.Result) *benchView {
	v := &benchView{res: r, Interrupted: r.Interrupted, Notes: r.Notes, Errors: r.Errors,
		LimitedBy: r.Summary.LimitedBy, LimitedWhy: r.Summary.LimitedWhy}
	v.What = benchWhat(r)
	v.cards()
	v.targets()
	v.rates()
	v.latency()
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
	return v
}

// benchWhat is the test in words.
func benchWhat(r *traffic.Result) string {
	sp := r.Spec
	what := sp.Proto + " " + sp.Direction
	switch {
	case len(r.Search) > 0:
		what += fmt.Sprintf(", %d ports × %d streams", sp.Ports, sp.Streams)
	case sp.Proto == "udp":
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
			c := card{Label: "NDR " + z.Size + " B", Value: pps(z.NDRPPS), Sub: ceiling.FormatBps(z.NDRBps)}
			if z.CeilingPPS > 0 {
				c.Sub += fmt.Sprintf(", %.1f %% of the ceiling", z.NDRPPS/z.CeilingPPS*100)
			}
			v.Cards = append(v.Cards, c)
			if z.PDRPPS > 0 {
				v.Cards = append(v.Cards, card{Label: fmt.Sprintf("PDR %s B (loss ≤ %s)", z.Size, pct(z.PDRLoss)), Value: pps(z.PDRPPS), Sub: ceiling.FormatBps(z.PDRBps)})
			}
		}
		return
	}
	recv := card{Label: "received", Value: pps(s.ReceivedPPS), Sub: ceiling.FormatBps(s.ReceivedBPS)}
	sent := card{Label: "sent", Value: pps(s.SentPPS), Sub: ceiling.FormatBps(s.SentBPS)}
	if r.Spec.Proto == "tcp" {
		recv = card{Label: "goodput", Value: ceiling.FormatBps(s.ReceivedBPS), Sub: pps(s.ReceivedPPS) + " of segments"}
		sent = card{Label: "sent", Value: ceiling.FormatBps(s.SentBPS), Sub: count(s.SentBytes) + " bytes"}
	}
	if pc := s.PathCeiling; pc != nil && pc.FPS > 0 && r.Spec.Proto == "udp" {
		recv.Sub += fmt.Sprintf(" — %.1f %% of the ceiling (%s pps, %s at %s %s)", s.ReceivedPPS/pc.FPS*100, si(pc.FPS), pc.What, pc.Host, pc.Iface)
	} else if pc != nil && pc.L2Bps > 0 {
		recv.Sub += fmt.Sprintf(" — %.1f %% of the ceiling (%s, %s at %s %s)", s.ReceivedBPS/pc.L2Bps*100, ceiling.FormatBps(pc.L2Bps), pc.What, pc.Host, pc.Iface)
	}
	v.Cards = append(v.Cards, recv, sent)
	if r.Spec.Proto == "udp" {
		v.Cards = append(v.Cards, card{Label: "loss", Value: pct(s.LossRatio),
			Sub: fmt.Sprintf("%s of %s packets", count(s.LostPackets), count(s.SentPackets)), Bad: s.LostPackets > 0})
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
	for _, end := range []struct {
		name         string
		secs, mp, gb *float64
	}{{"server", s.CPUSeconds.Server, s.CPUSecondsPerMpkt.Server, s.CPUSecondsPerGbit.Server},
		{"client", s.CPUSeconds.Client, s.CPUSecondsPerMpkt.Client, s.CPUSecondsPerGbit.Client}} {
		c := card{Label: end.name + " CPU"}
		switch {
		case r.Spec.Proto == "tcp" && end.gb != nil:
			c.Value = fmt.Sprintf("%.3f s/Gbit", *end.gb)
		case end.mp != nil:
			c.Value = fmt.Sprintf("%.3f s/Mpkt", *end.mp)
		default:
			continue
		}
		c.Sub = fmt.Sprintf("%.2f CPU-seconds", deref(end.secs))
		v.Cards = append(v.Cards, c)
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
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
	out := []figure{
		{Name: "received", Value: s.ReceivedPPS, Format: pps, Higher: true},
		{Name: "received bits", Value: s.ReceivedBPS, Format: ceiling.FormatBps, Higher: true},
		{Name: "sent", Value: s.SentPPS, Format: pps, Higher: true},
	}
	if r.Spec.Proto == "udp" {
		out = append(out, figure{Name: "loss", Value: s.LossRatio, Format: pct, Points: lossPoints})
	} else {
		out = append(out, figure{Name: "retransmits", Value: float64(s.Retransmits), Format: func(f float64) string { return count(uint64(f)) }})
	}
	if l := s.LatencyLoad; l != nil && l.Received > 0 {
		out = append(out, figure{Name: "latency p50 under load", Value: l.P50, Format: ms},
			figure{Name: "latency p99 under load", Value: l.P99, Format: ms})
	}
	cpu := func(f float64) string { return fmt.Sprintf("%.3f s/Mpkt", f) }
	if c := s.CPUSecondsPerMpkt.Server; c != nil {
		out = append(out, figure{Name: "server CPU per Mpkt", Value: *c, Format: cpu})
	}
	if c := s.CPUSecondsPerMpkt.Client; c != nil {
		out = append(out, figure{Name: "client CPU per Mpkt", Value: *c, Format: cpu})
	}
	return out
}

func (v *benchView) targets() {
	r := v.res
	for i, t := range r.Targets {
		for _, d := range []struct {
			name string
			t    *traffic.Totals
		}{{traffic.Forward, t.Forward}, {traffic.Reverse, t.Reverse}} {
			if d.t == nil {
				continue
			}
			v.Targets = append(v.Targets, targetRow{Target: t.Target, Direction: d.name,
				Sent: count(d.t.SentPackets), Received: count(d.t.ReceivedPackets), Lost: count(d.t.LostPackets),
				Loss: pct(d.t.LossRatio), SentPPS: si(d.t.SentPPS), ReceivedPPS: si(d.t.ReceivedPPS),
				ReceivedBPS: ceiling.FormatBps(d.t.ReceivedBPS), RTT: tcpRTT(r, i, d.name), Bad: d.t.LostPackets > 0})
		}
	}
}

// tcpRTT is the mean smoothed RTT of a target's TCP streams in a
// direction.
func tcpRTT(r *traffic.Result, target int, dir string) string {
	var sum float64
	n := 0
	for _, s := range r.Streams {
		if s.Target == target && s.Direction == dir && s.TCP != nil {
			sum += float64(s.TCP.RTTMicros)
			n++
		}
	}
	if n == 0 {
		return "-"
	}
	return ms(sum / float64(n) / 1000)
}

// rates charts the client's intervals: packets and bits per second sent
// and received, and what went missing between them.
func (v *benchView) rates() {
	r := v.res
	var t, spps, rpps, sbps, rbps, gap []float64
	for _, iv := range r.Intervals {
		if iv.Warmup {
			v.Warmup++
			continue
		}
		t = append(t, iv.T)
		spps = append(spps, iv.SentPPS)
		rpps = append(rpps, iv.ReceivedPPS)
		sbps = append(sbps, iv.SentBPS)
		rbps = append(rbps, iv.ReceivedBPS)
		gap = append(gap, math.Max(0, iv.SentPPS-iv.ReceivedPPS))
	}
	if len(t) == 0 {
		return
	}
	var pref, bref []ref
	if pc := r.Summary.PathCeiling; pc != nil {
		if pc.FPS > 0 && r.Spec.Proto == "udp" {
			pref = append(pref, ref{Y: pc.FPS, Label: "ceiling " + si(pc.FPS) + " pps (" + pc.What + ")"})
		}
		if pc.L2Bps > 0 {
			bref = append(bref, ref{Y: pc.L2Bps, Label: "ceiling " + ceiling.FormatBps(pc.L2Bps) + " (" + pc.What + ")"})
		}
	}
	v.Rates = append(v.Rates,
		chart{Title: "packets per second", X: t, Unit: "", Refs: pref, Series: []series{
			{Name: "sent", Color: colour(0), Y: spps}, {Name: "received", Color: colour(1), Y: rpps}}}.Render(),
		chart{Title: "bits per second", X: t, Unit: "b/s", Refs: bref, Series: []series{
			{Name: "sent", Color: colour(0), Y: sbps}, {Name: "received", Color: colour(1), Y: rbps}}}.Render())
	if r.Spec.Proto == "udp" {
		v.Rates = append(v.Rates, chart{Title: "sent − received, packets per second (loss, and what was in flight)", X: t,
			Series: []series{{Name: "sent − received", Color: colour(3), Y: gap}}}.Render())
	}
}

func (v *benchView) latency() {
	r := v.res
	add := func(target string, idle, load *traffic.Latency) {
		for _, p := range []struct {
			phase string
			l     *traffic.Latency
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
		l    *traffic.Latency
	}{{"idle", r.Summary.LatencyIdle}, {"under load", r.Summary.LatencyLoad}} {
		if p.l == nil || p.l.Received == 0 {
			continue
		}
		ss = append(ss, series{Name: p.name, Color: colour(i),
			X: []float64{p.l.Min, p.l.P50, p.l.P90, p.l.P99, p.l.Max}, Y: []float64{0, 50, 90, 99, 100}})
	}
	if len(ss) > 0 {
		v.CDF = chart{Title: "round trip of the probes: share answered within a time (through min, p50, p90, p99, max)",
			Series: ss, Unit: "%", YMax: 100, XLog: true, XFormat: func(x float64) string { return si(x) + "ms" }}.Render()
	}
}

// sideName names a sample's end.
func sideName(r *traffic.Result, side string, target int) string {
	if side == "server" && target >= 0 && target < len(r.Targets) {
		return "server " + r.Targets[target].Target
	}
	if side == "server" {
		return fmt.Sprintf("server %d", target)
	}
	return side
}

// ends lays out each end's samples and drop counters.
func (v *benchView) ends() {
	r := v.res
	type key struct {
		side   string
		target int
	}
	byEnd := map[key]*endView{}
	var order []key
	get := func(k key) *endView {
		e := byEnd[k]
		if e == nil {
			e = &endView{Name: sideName(r, k.side, k.target)}
			byEnd[k] = e
			order = append(order, k)
		}
		return e
	}
	samples := map[key][]box.Rates{}
	var t0 time.Time
	for _, s := range r.Samples {
		k := key{s.Side, s.Target}
		if s.Side == "client" {
			k.target = -1
		}
		get(k)
		samples[k] = append(samples[k], s.Rates)
		if t0.IsZero() || s.Start.Before(t0) {
			t0 = s.Start
		}
	}
	for _, d := range r.Drops {
		k := key{d.Side, d.Target}
		if d.Side == "client" {
			k.target = -1
		}
		e := get(k)
		e.Ifaces = d.Ifaces
		e.Drops, e.DropError = dropRows(d)
	}
	for _, k := range order {
		e := byEnd[k]
		e.charts(samples[k], t0)
		v.Ends = append(v.Ends, e)
	}
}

// charts draws an end's samples; t0 is the time the charts start at.
func (e *endView) charts(rs []box.Rates, t0 time.Time) {
	if len(rs) == 0 {
		return
	}
	t := make([]float64, len(rs))
	for i, r := range rs {
		t[i] = r.End.Sub(t0).Seconds()
	}
	e.traffic(rs, t)
	e.cpus(rs, t)
	e.irqs(rs, t)
}

// traffic charts the packets and bits per second of the end's interfaces
// on the path (of every interface that carried traffic when the path is
// not known).
func (e *endView) traffic(rs []box.Rates, t []float64) {
	ifaces := e.Ifaces
	if len(ifaces) == 0 {
		seen := map[string]bool{}
		for _, r := range rs {
			for name, d := range r.NetDev {
				if d.RxPps+d.TxPps > 0 {
					seen[name] = true
				}
			}
		}
		for name := range seen {
			ifaces = append(ifaces, name)
		}
		sort.Strings(ifaces)
	}
	if len(ifaces) == 0 {
		return
	}
	var pss, bss []series
	for i, name := range ifaces {
		var rxp, txp, rxb, txb []float64
		for _, r := range rs {
			d, ok := r.NetDev[name]
			if !ok {
				nan := math.NaN()
				rxp, txp, rxb, txb = append(rxp, nan), append(txp, nan), append(rxb, nan), append(txb, nan)
				continue
			}
			rxp, txp, rxb, txb = append(rxp, d.RxPps), append(txp, d.TxPps), append(rxb, d.RxBps), append(txb, d.TxBps)
		}
		pss = append(pss, series{Name: name + " rx", Color: colour(2 * i), Y: rxp}, series{Name: name + " tx", Color: colour(2*i + 1), Y: txp})
		bss = append(bss, series{Name: name + " rx", Color: colour(2 * i), Y: rxb}, series{Name: name + " tx", Color: colour(2*i + 1), Y: txb})
	}
	e.Traffic = append(e.Traffic,
		chart{Title: e.Name + ": packets per second by interface", X: t, Series: pss}.Render(),
		chart{Title: e.Name + ": bits per second by interface", X: t, Unit: "b/s", Series: bss}.Render())
}

// cpuLayers are the parts of a CPU's time the stacks show.
var cpuLayers = []struct {
	name string
	get  func(box.CPUUse) float64
}{
	{"usr", func(c box.CPUUse) float64 { return c.User }},
	{"sys", func(c box.CPUUse) float64 { return c.System }},
	{"irq", func(c box.CPUUse) float64 { return c.IRQ }},
	{"softirq", func(c box.CPUUse) float64 { return c.SoftIRQ }},
}

// cpuIDs lists the CPU ids the samples hold, in order.
func cpuIDs(rs []box.Rates) []int {
	seen := map[int]bool{}
	var ids []int
	for _, r := range rs {
		for _, c := range r.CPU {
			if !seen[c.ID] {
				seen[c.ID] = true
				ids = append(ids, c.ID)
			}
		}
	}
	sort.Ints(ids)
	return ids
}

func (e *endView) cpus(rs []box.Rates, t []float64) {
	ids := cpuIDs(rs)
	if len(ids) == 0 {
		return
	}
	index := map[int]int{}
	for i, id := range ids {
		index[id] = i
	}
	// use[cpu][layer][sample]
	use := make([][][]float64, len(ids))
	for i := range use {
		use[i] = make([][]float64, len(cpuLayers))
		for l := range cpuLayers {
			use[i][l] = make([]float64, len(rs))
			for j := range rs {
				use[i][l][j] = math.NaN()
			}
		}
	}
	for j, r := range rs {
		for _, c := range r.CPU {
			for l, layer := range cpuLayers {
				use[index[c.ID]][l][j] = layer.get(c)
			}
		}
	}
	mean := make([][]float64, len(cpuLayers))
	cats := make([]string, len(ids))
	for i, id := range ids {
		cats[i] = "cpu" + strconv.Itoa(id)
		var ss []series
		for l, layer := range cpuLayers {
			ss = append(ss, series{Name: layer.name, Color: colour(l), Y: use[i][l]})
			mean[l] = append(mean[l], meanOf(use[i][l]))
		}
		e.CPUs = append(e.CPUs, chart{Title: e.Name + " cpu" + strconv.Itoa(id), X: t, Series: ss, Stacked: true, Unit: "%", YMax: 100, Small: true}.Render())
	}
	var ms []series
	for l, layer := range cpuLayers {
		ms = append(ms, series{Name: layer.name, Color: colour(l), Y: mean[l]})
	}
	e.CPUMean = bars{Title: e.Name + ": mean CPU use over the window", Categories: cats, Series: ms, Unit: "%", YMax: 100}.Render()
}

// meanOf is the mean of the values that are not NaN.
func meanOf(v []float64) float64 {
	var s float64
	n := 0
	for _, x := range v {
		if !math.IsNaN(x) {
			s += x
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

// maxCPULines is the most CPUs a chart of one line per CPU draws; the
// rest are summed in one line.
const maxCPULines = 8

// maxIRQs is the most IRQ labels the interrupt chart names; the rest are
// "other".
const maxIRQs = 7

// irqs charts the interrupts per CPU (mean per second, by IRQ), NET_RX
// softirqs per CPU over time, and softnet drops and squeezes.
func (e *endView) irqs(rs []box.Rates, t []float64) {
	ids := cpuIDs(rs)
	n := len(ids)
	for _, r := range rs {
		for _, v := range r.Interrupts {
			n = max(n, len(v))
		}
	}
	if n == 0 {
		return
	}
	cats := make([]string, n)
	for i := range cats {
		cats[i] = "cpu" + strconv.Itoa(i)
	}
	// Mean interrupts per second per CPU, by label.
	sum := map[string][]float64{}
	for _, r := range rs {
		for label, v := range r.Interrupts {
			s := sum[label]
			if s == nil {
				s = make([]float64, n)
				sum[label] = s
			}
			for i := 0; i < len(v) && i < n; i++ {
				s[i] += v[i] / float64(len(rs))
			}
		}
	}
	type irq struct {
		label string
		total float64
	}
	var all []irq
	for label, v := range sum {
		var s float64
		for _, x := range v {
			s += x
		}
		if s > 0 {
			all = append(all, irq{label, s})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].total != all[j].total {
			return all[i].total > all[j].total
		}
		return all[i].label < all[j].label
	})
	var ss []series
	other := make([]float64, n)
	hasOther := false
	for i, q := range all {
		if i < maxIRQs {
			name := q.label
			if _, err := strconv.Atoi(name); err == nil {
				name = "irq " + name
			}
			ss = append(ss, series{Name: name, Color: colour(i), Y: sum[q.label]})
			continue
		}
		hasOther = true
		for j, x := range sum[q.label] {
			other[j] += x
		}
	}
	if hasOther {
		ss = append(ss, series{Name: "other", Color: "#999999", Y: other})
	}
	if len(ss) > 0 {
		e.IRQs = bars{Title: e.Name + ": interrupts per second per CPU (mean over the window)", Categories: cats, Series: ss}.Render()
	}
	// NET_RX softirqs per CPU over time: the busiest CPUs, the rest summed.
	type cpuLine struct {
		name  string
		y     []float64
		total float64
	}
	var lines []cpuLine
	for i := 0; i < n; i++ {
		l := cpuLine{name: "cpu" + strconv.Itoa(i), y: make([]float64, len(rs))}
		for j, r := range rs {
			l.y[j] = math.NaN()
			if v := r.SoftIRQs["NET_RX"]; i < len(v) {
				l.y[j] = v[i]
				l.total += v[i]
			}
		}
		if l.total > 0 {
			lines = append(lines, l)
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].total > lines[j].total })
	var nr []series
	for i, l := range lines {
		if i < maxCPULines {
			nr = append(nr, series{Name: l.name, Color: colour(i), Y: l.y})
			continue
		}
		if i == maxCPULines {
			nr = append(nr, series{Name: fmt.Sprintf("the other %d CPUs", len(lines)-maxCPULines), Color: "#999999", Y: make([]float64, len(rs))})
		}
		other := nr[len(nr)-1].Y
		for j, v := range l.y {
			if !math.IsNaN(v) {
				other[j] += v
			}
		}
	}
	if len(nr) > 0 {
		e.NetRx = chart{Title: e.Name + ": NET_RX softirqs per second per CPU", X: t, Series: nr}.Render()
	}
	// Softnet drops and time squeezes, summed over the CPUs.
	drop, squeeze := make([]float64, len(rs)), make([]float64, len(rs))
	moved := false
	for j, r := range rs {
		for _, s := range r.Softnet {
			drop[j] += s.Dropped
			squeeze[j] += s.TimeSqueeze
		}
		moved = moved || drop[j] > 0 || squeeze[j] > 0
	}
	if moved {
		e.Softnet = chart{Title: e.Name + ": softnet backlog drops and time squeezes per second (all CPUs)", X: t,
			Series: []series{{Name: "dropped", Color: colour(3), Y: drop}, {Name: "time squeeze", Color: colour(1), Y: squeeze}}}.Render()
	}
}

// dropRows lists an end's non-zero drop and error counters over the
// window.
func dropRows(d traffic.EndDrops) ([]dropRow, string) {
	if d.Delta == nil {
		return nil, d.Error
	}
	var out []dropRow
	if d.Refused > 0 {
		out = append(out, dropRow{"sender", "sends refused by the kernel", count(d.Refused)})
	}
	dd := d.Delta
	names := make([]string, 0, len(dd.Links))
	for n := range dd.Links {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := dd.Links[n].Stats
		for _, c := range []struct {
			name string
			v    uint64
		}{{"rx_dropped", s.RxDropped}, {"tx_dropped", s.TxDropped}, {"rx_errors", s.RxErrors}, {"tx_errors", s.TxErrors},
			{"rx_missed_errors", s.RxMissedErrors}, {"rx_fifo_errors", s.RxFifoErrors}, {"rx_over_errors", s.RxOverErrors},
			{"tx_fifo_errors", s.TxFifoErrors}, {"rx_nohandler", s.RxNohandler}, {"rx_otherhost_dropped", s.RxOtherhostDropped}} {
			if c.v > 0 {
				out = append(out, dropRow{n, c.name, count(c.v)})
			}
		}
	}
	for _, q := range dd.Qdiscs {
		if q.Stats.Drops > 0 {
			out = append(out, dropRow{q.Iface + " qdisc " + q.Kind, "drops", count(q.Stats.Drops)})
		}
		if q.Stats.Overlimits > 0 {
			out = append(out, dropRow{q.Iface + " qdisc " + q.Kind, "overlimits (held back, not dropped)", count(q.Stats.Overlimits)})
		}
	}
	var sd, sq uint64
	for _, s := range dd.Softnet {
		sd += s.Dropped
		sq += s.TimeSqueeze
	}
	if sd > 0 {
		out = append(out, dropRow{"softnet", "dropped (backlog full)", count(sd)})
	}
	if sq > 0 {
		out = append(out, dropRow{"softnet", "time_squeeze", count(sq)})
	}
	secs := make([]string, 0, len(dd.SNMP))
	for s := range dd.SNMP {
		secs = append(secs, s)
	}
	sort.Strings(secs)
	for _, sec := range secs {
		keys := make([]string, 0, len(dd.SNMP[sec]))
		for k, v := range dd.SNMP[sec] {
			if v > 0 && dropCounter(k) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, dropRow{"snmp " + sec, k, count(dd.SNMP[sec][k])})
		}
	}
	reasons := make([]string, 0, len(dd.Reasons))
	for k, v := range dd.Reasons {
		if v > 0 {
			reasons = append(reasons, k)
		}
	}
	sort.Strings(reasons)
	for _, k := range reasons {
		out = append(out, dropRow{"kfree_skb reason", k, count(dd.Reasons[k])})
	}
	if dd.Conntrack != nil {
		for _, name := range []string{"drop", "early_drop", "insert_failed", "invalid"} {
			if n := dd.Conntrack.Counters[name]; n > 0 {
				out = append(out, dropRow{"conntrack", name, count(n)})
			}
		}
	}
	return out, d.Error
}

// dropCounter says whether an SNMP counter counts drops or errors.
func dropCounter(name string) bool {
	for _, w := range []string{"Err", "Drop", "NoPorts", "Overflow", "Discard", "Prune", "Fail", "Retrans", "Lost"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

func newLedgerView(l ledger.Ledger) *ledgerView {
	v := &ledgerView{Notes: l.Notes}
	if l.Lost == 0 {
		v.Summary = fmt.Sprintf("no packets lost (%s sent, %s received)", count(l.Sent), count(l.Received))
	} else {
		v.Summary = fmt.Sprintf("where the %s lost packets died (%s sent, %s received)", count(l.Lost), count(l.Sent), count(l.Received))
	}
	for _, e := range l.Entries {
		row := ledgerRow{Host: e.Host, Side: string(e.Side), Place: string(e.Place), Packets: count(e.Packets), Evidence: e.Evidence}
		if e.Place == ledger.Unaccounted {
			row.Host, row.Side = "", ""
		}
		if l.Lost > 0 {
			row.Share = fmt.Sprintf("%.1f %%", 100*float64(e.Packets)/float64(l.Lost))
		}
		v.Rows = append(v.Rows, row)
	}
	if l.Excess > 0 {
		v.Excess = fmt.Sprintf("the counters place %s more than were lost", count(l.Excess))
	}
	return v
}

func (v *benchView) search() {
	for i, z := range v.res.Search {
		row := searchRow{Size: z.Size, Frame: fmt.Sprintf("%.0f", z.FrameBytes), NDR: pps(z.NDRPPS), NDRBps: ceiling.FormatBps(z.NDRBps),
			PDR: "-", PDRBps: "-", PDRLoss: "-", LossBegins: "-", Ceiling: "-", Trials: strconv.Itoa(len(z.Trials))}
		if z.PDRPPS > 0 {
			row.PDR, row.PDRBps, row.PDRLoss = pps(z.PDRPPS), ceiling.FormatBps(z.PDRBps), pct(z.PDRLoss)
		}
		if z.LossBeginsPPS > 0 {
			row.LossBegins = pps(z.LossBeginsPPS)
		}
		if z.CeilingPPS > 0 {
			row.Ceiling = fmt.Sprintf("%s (NDR %.1f %%)", pps(z.CeilingPPS), z.NDRPPS/z.CeilingPPS*100)
		}
		for _, l := range z.Latency {
			if lat := l.Result.Latency; lat != nil {
				row.Latency = append(row.Latency, fmt.Sprintf("at %s: p50 %s, p99 %s", pps(l.Spec.Rate), lat.P50, lat.P99))
			}
		}
		for n, tr := range z.Trials {
			d := tr.Spec.Duration
			if tr.Result.Seconds > 0 {
				d = time.Duration(tr.Result.Seconds * float64(time.Second))
			}
			row.TrialRows = append(row.TrialRows, trialLine{N: strconv.Itoa(n + 1), Phase: strconv.Itoa(tr.Phase), Purpose: string(tr.Purpose),
				Goal: tr.Goal, Rate: pps(tr.Spec.Rate), Duration: d.String(), Sent: count(tr.Result.Sent), Received: count(tr.Result.Received),
				Loss: pct(tr.Loss), Lost: tr.Loss > 0})
		}
		v.Search = append(v.Search, row)
		if len(z.Trials) > 0 {
			var x, y []float64
			for _, t := range z.Trials {
				x = append(x, float64(len(x)+1))
				y = append(y, t.Spec.Rate)
			}
			refs := []ref{{Y: z.NDRPPS, Label: "NDR " + si(z.NDRPPS) + " pps"}}
			v.SearchCharts = append(v.SearchCharts, chart{Title: fmt.Sprintf("%s B: the rate of each trial, in order", z.Size), X: x,
				Series: []series{{Name: "trial rate", Color: colour(i), Y: y}}, Refs: refs, Unit: "",
				XFormat: func(f float64) string { return "#" + strconv.Itoa(int(f)) }}.Render())
		}
	}
}
