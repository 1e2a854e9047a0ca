package page

import (
	"fmt"
	"html/template"
	"math"

	"linerate/internal/units"
	"linerate/report"
	"linerate/results"
	"linerate/wire"
)

// rrulView is the figure flent draws of an RRUL test: the latency the
// load induced, the goodput each way and per stream, and both over time.
type rrulView struct {
	Cards  []card
	Flows  []rrulRow
	Charts []template.HTML
}

type rrulRow struct {
	Direction, Stream, Mark, Goodput, Retransmits, RTT string
	Bad                                                bool
}

// rrul lays out a result's RRUL figures, if it has them.
func (v *benchView) rrul() {
	r := v.res.RRUL
	if r == nil {
		return
	}
	rv := &rrulView{}
	lat := func(label string, l *results.Latency) card {
		if l == nil || l.Received == 0 {
			return card{Label: label + ", p50", Value: "unknown", Sub: "no probe answered", Bad: true}
		}
		return card{Label: label + ", p50", Value: ms(l.P50), Sub: fmt.Sprintf("p95 %s, %d of %d probes answered", ms(l.P95), l.Received, l.Sent)}
	}
	induced := card{Label: "latency the load induced, p50", Value: "unknown", Sub: "under load less idle"}
	if r.InducedP50 != nil && r.InducedP95 != nil {
		induced.Value = fmt.Sprintf("%+.3f ms", *r.InducedP50)
		induced.Sub = fmt.Sprintf("p95 %+.3f ms; under load less idle", *r.InducedP95)
	}
	up, down := 0, 0
	for _, f := range r.Flows {
		if f.Direction == wire.Forward {
			up++
		} else {
			down++
		}
	}
	rv.Cards = []card{lat("latency idle", r.LatencyIdle), lat("latency under load", r.LatencyLoad), induced,
		{Label: "goodput up", Value: units.Bps(r.UpBPS), Sub: fmt.Sprintf("%d streams, client → server", up)},
		{Label: "goodput down", Value: units.Bps(r.DownBPS), Sub: fmt.Sprintf("%d streams, server → client", down)}}
	for _, f := range r.Flows {
		row := rrulRow{Direction: report.RRULDirection(f.Direction), Stream: fmt.Sprint(f.Stream), Mark: fmt.Sprintf("%s (%d)", f.Mark, f.DSCP),
			Goodput: units.Bps(f.GoodputBPS), Retransmits: count(f.Retransmits), RTT: "-", Bad: f.GoodputBPS == 0}
		if f.RTTMs > 0 {
			row.RTT = ms(f.RTTMs)
		}
		rv.Flows = append(rv.Flows, row)
	}
	for _, dir := range []wire.Direction{wire.Forward, wire.Reverse} {
		if c, ok := rrulGoodput(r, dir); ok {
			rv.Charts = append(rv.Charts, c)
		}
	}
	if c, ok := rrulTotals(r); ok {
		rv.Charts = append(rv.Charts, c)
	}
	if c, ok := rrulLatency(r); ok {
		rv.Charts = append(rv.Charts, c)
	}
	v.RRUL = rv
}

// rrulGoodput charts the goodput of a direction's streams each second, a
// line per stream named by its mark.
func rrulGoodput(r *results.RRUL, dir wire.Direction) (template.HTML, bool) {
	var ss []series
	for _, f := range r.Flows {
		if f.Direction != dir || len(f.OverTime) == 0 {
			continue
		}
		var x, y []float64
		for _, g := range f.OverTime {
			x, y = append(x, g.T), append(y, g.BPS)
		}
		ss = append(ss, series{Name: fmt.Sprintf("%d %s", f.Stream, f.Mark), Color: colour(f.Stream), X: x, Y: y})
	}
	if len(ss) == 0 {
		return "", false
	}
	title := fmt.Sprintf("goodput per stream %s (%s), bits per second, warm-up included", report.RRULDirection(dir), dirWords(dir))
	return chart{Title: title, Unit: "b/s", Series: ss}.Render(), true
}

func dirWords(d wire.Direction) string {
	if d == wire.Forward {
		return "client → server"
	}
	return "server → client"
}

// rrulTotals charts the goodput up and down each second: each direction's
// streams added up second by second (each end samples its streams at
// once).
func rrulTotals(r *results.RRUL) (template.HTML, bool) {
	var ss []series
	for i, dir := range []wire.Direction{wire.Forward, wire.Reverse} {
		var x, y []float64
		for _, f := range r.Flows {
			if f.Direction != dir {
				continue
			}
			for k, g := range f.OverTime {
				if k == len(x) {
					x, y = append(x, g.T), append(y, 0)
				}
				y[k] += g.BPS
			}
		}
		if len(x) > 0 {
			ss = append(ss, series{Name: report.RRULDirection(dir), Color: colour(i), X: x, Y: y})
		}
	}
	if len(ss) == 0 {
		return "", false
	}
	return chart{Title: "goodput up and down, bits per second (every stream of a direction added up)", Unit: "b/s", Series: ss}.Render(), true
}

// rrulLatency charts every probe's round trip by when it was sent, idle
// (before 0) and under load, with the idle median as a line.
func rrulLatency(r *results.RRUL) (template.HTML, bool) {
	var ix, iy, lx, ly []float64
	for _, p := range r.Probes {
		if p.Idle {
			ix, iy = append(ix, p.T), append(iy, p.RTT)
		} else {
			lx, ly = append(lx, p.T), append(ly, p.RTT)
		}
	}
	if len(ix)+len(lx) == 0 {
		return "", false
	}
	var refs []ref
	if l := r.LatencyIdle; l != nil && l.Received > 0 {
		refs = append(refs, ref{Y: l.P50, Label: "idle p50 " + ms(l.P50)})
	}
	if l := r.LatencyLoad; l != nil && l.Received > 0 {
		refs = append(refs, ref{Y: l.P95, Label: "under load p95 " + ms(l.P95)})
	}
	return chart{Title: "round trip of each probe, ms, by when it was sent (before 0: idle, before the load)", Unit: "ms", Refs: refs,
		Series: []series{{Name: "idle", Color: colour(2), X: ix, Y: iy}, {Name: "under load", Color: colour(3), X: lx, Y: ly}}}.Render(), true
}

// tcpOverTime charts each sending stream's TCP_INFO once a second: the
// congestion window, the smoothed RTT, the retransmits in each second and
// the pacing rate, a line per stream in each.
func (v *benchView) tcpOverTime() {
	r := v.res
	type metric struct {
		title, unit string
		value       func(prev, cur results.TCPSample) float64
	}
	metrics := []metric{
		{"congestion window, segments", "", func(_, s results.TCPSample) float64 { return float64(s.Cwnd) }},
		{"smoothed RTT, ms", "ms", func(_, s results.TCPSample) float64 { return float64(s.RTTMicros) / 1000 }},
		{"retransmitted segments in each second", "", func(p, s results.TCPSample) float64 {
			return float64(s.Retrans) - math.Min(float64(p.Retrans), float64(s.Retrans))
		}},
		{"pacing rate, bits per second", "b/s", func(_, s results.TCPSample) float64 { return float64(s.PacingRate) }},
	}
	lines := make([][]series, len(metrics))
	for n, st := range r.Streams {
		if st.TCP == nil || len(st.TCP.OverTime) == 0 {
			continue
		}
		name := fmt.Sprintf("%s %d", st.Direction, st.Stream)
		if r.RRUL != nil {
			name = fmt.Sprintf("%s %d %s", report.RRULDirection(st.Direction), st.Stream, wire.DSCPName(r.Spec.DSCPOf(st.Stream)))
		}
		if len(r.Targets) > 1 {
			name = fmt.Sprintf("%s %s", r.Targets[st.Target].Target, name)
		}
		for m, mt := range metrics {
			var x, y []float64
			prev := results.TCPSample{}
			for _, s := range st.TCP.OverTime {
				x, y = append(x, s.T), append(y, mt.value(prev, s))
				prev = s
			}
			lines[m] = append(lines[m], series{Name: name, Color: colour(n), X: x, Y: y})
		}
	}
	for m, mt := range metrics {
		if len(lines[m]) > 0 {
			v.TCPOverTime = append(v.TCPOverTime, chart{Title: mt.title, Unit: mt.unit, Series: lines[m]}.Render())
		}
	}
}

// rrulFigures are an RRUL test's headline figures for a comparison (a
// queue before and after cake, say): the induced latency and the goodput
// each way; none for another result.
func rrulFigures(r *results.RRUL) []figure {
	if r == nil {
		return nil
	}
	var out []figure
	if r.InducedP50 != nil && r.InducedP95 != nil {
		plus := func(f float64) string { return fmt.Sprintf("%+.3f ms", f) }
		out = append(out, figure{Name: "latency induced by the load, p50", Value: *r.InducedP50, Format: plus},
			figure{Name: "latency induced by the load, p95", Value: *r.InducedP95, Format: plus})
	}
	return append(out, figure{Name: "goodput up", Value: r.UpBPS, Format: units.Bps, Higher: true},
		figure{Name: "goodput down", Value: r.DownBPS, Format: units.Bps, Higher: true})
}
