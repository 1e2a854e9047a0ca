package page

import (
	"fmt"
	"html/template"
	"math"
	"time"

	"linerate/internal/units"
	"linerate/report"
	"linerate/results"
)

// rrView is a transaction test (bench rr) as the page shows it:
// transactions per second in total, over time and per stream, the round
// trip's percentiles, and the connection tracker of each device in the
// middle that was sampled.
type rrView struct {
	Cards []card
	// Latency is the round trip's percentiles, a cell each.
	Latency []string
	Streams []rrStreamRow
	Middle  []rrMiddleRow
	Charts  []template.HTML
}

type rrStreamRow struct {
	Stream, Transactions, TPS, P50, P99, Timeouts, Failures string
	Bad                                                     bool
}

type rrMiddleRow struct {
	Host, Start, Peak, End, Max, Drop, InsertFailed, EarlyDrop string
	Full                                                       bool
}

// tps writes a rate of transactions.
func tps(v float64) string { return SI(v) + " tps" }

// rr lays out a result's transaction figures, if it has them.
func (v *benchView) rr() {
	r := v.res
	rr := r.RR
	if rr == nil || r.Spec.RR == nil {
		return
	}
	v.What = report.RRWhat(r.Spec)
	l := rr.Latency
	us := report.Micros
	view := &rrView{Latency: []string{us(l.Min), us(l.Mean), us(l.P50), us(l.P90), us(l.P99), us(l.P999), us(l.Max)}}
	answered := fmt.Sprintf("the server answered %s", count(rr.Answered))
	if rr.Connections > 0 {
		answered += fmt.Sprintf(" over %s connections", count(rr.Connections))
	}
	view.Cards = []card{
		{Label: "transactions per second", Value: tps(rr.TPS), Sub: fmt.Sprintf("%s transactions in %.2f s over %d streams", count(rr.Transactions), rr.Seconds, len(rr.Streams)),
			Bad: rr.Transactions == 0},
		{Label: "round trip, p50", Value: us(l.P50), Sub: "mean " + us(l.Mean) + ", min " + us(l.Min)},
		{Label: "round trip, p99", Value: us(l.P99), Sub: "p90 " + us(l.P90)},
		{Label: "round trip, p99.9", Value: us(l.P999), Sub: "max " + us(l.Max)},
		{Label: "lost", Value: count(rr.Lost()), Sub: fmt.Sprintf("%d timed out, %d connects failed, %d other errors; %s", rr.Timeouts, rr.ConnectFailures, rr.Errors, answered),
			Bad: rr.Lost() > 0},
	}
	view.Cards = append(view.Cards, cpuCards(r.Summary, r.Spec.Proto, "M transactions")...)
	for _, s := range rr.Streams {
		view.Streams = append(view.Streams, rrStreamRow{Stream: fmt.Sprint(s.Stream), Transactions: count(s.Transactions), TPS: tps(s.TPS),
			P50: us(s.P50), P99: us(s.P99), Timeouts: count(s.Timeouts), Failures: count(s.Failures), Bad: s.Timeouts+s.Failures > 0 || s.Transactions == 0})
	}
	for _, m := range rr.Middle {
		view.Middle = append(view.Middle, rrMiddleRow{Host: m.Host, Start: count(m.Start), Peak: count(m.Peak), End: count(m.End), Max: count(m.Max),
			Drop: count(m.Drop), InsertFailed: count(m.InsertFailed), EarlyDrop: count(m.EarlyDrop), Full: m.Full()})
	}
	if c, ok := rrOverTime(r); ok {
		view.Charts = append(view.Charts, c)
	}
	if rr.Transactions > 0 {
		view.Charts = append(view.Charts, rrPercentiles(rr))
	}
	view.Charts = append(view.Charts, conntrackOverTime(r)...)
	v.RR = view
}

// rrOverTime charts the transactions the client completed and those the
// server answered each second. A second the server did not report is a
// gap in its line.
func rrOverTime(r *results.Result) (template.HTML, bool) {
	var t, done, answered []float64
	for _, iv := range r.Intervals {
		if iv.Warmup {
			continue
		}
		a := iv.ReceivedPPS
		if iv.ReceivedUnknown {
			a = math.NaN()
		}
		d := iv.TPS
		if iv.SentUnknown {
			d = math.NaN()
		}
		t, done, answered = append(t, iv.T), append(done, d), append(answered, a)
	}
	if len(t) == 0 {
		return "", false
	}
	var refs []ref
	if r.RR.TPS > 0 {
		refs = append(refs, ref{Y: r.RR.TPS, Label: "mean " + tps(r.RR.TPS)})
	}
	return chart{Title: "transactions per second: completed by the client, answered by the server", X: t, Unit: "", Refs: refs, Bands: linkBands(r),
		Series: []series{{Name: "completed", Color: colour(0), Y: done}, {Name: "answered by the server", Color: colour(1), Y: answered}}}.Render(), true
}

// rrPercentiles draws the round trip's distribution through its
// percentiles: the share of transactions done within each time.
func rrPercentiles(rr *results.RR) template.HTML {
	l := rr.Latency
	return chart{Title: "round trip of the transactions: share done within a time (through min, p50, p90, p99, p99.9, max)",
		Series: []series{{Name: "all streams", Color: colour(0), X: []float64{l.Min, l.P50, l.P90, l.P99, l.P999, l.Max}, Y: []float64{0, 50, 90, 99, 99.9, 100}}},
		Unit:   "%", YMax: 100, XLog: true, XFormat: func(x float64) string { return SI(x) + "µs" }}.Render()
}

// conntrackOverTime charts each sampled host's connection tracker: its
// entries over the run against the table's size (nf_conntrack_max), and
// what it dropped each second when it dropped any. The run's clock starts
// at its first sample, as the ends' charts do.
func conntrackOverTime(r *results.Result) []template.HTML {
	var t0 time.Time
	for _, s := range r.Samples {
		if t0.IsZero() || s.Start.Before(t0) {
			t0 = s.Start
		}
	}
	var out []template.HTML
	for _, m := range r.RR.Middle {
		var x, y, dx, drop, insert, early []float64
		dropped := false
		for _, s := range r.Samples {
			ct := s.Conntrack
			if s.Host != m.Host || ct == nil {
				continue
			}
			if len(x) == 0 {
				x, y = append(x, s.Start.Sub(t0).Seconds()), append(y, float64(ct.Start))
			}
			at := s.End.Sub(t0).Seconds()
			x, y = append(x, at), append(y, float64(ct.Entries))
			per := math.Max(s.Seconds, 1e-3)
			dx = append(dx, at)
			drop, insert, early = append(drop, float64(ct.Drop)/per), append(insert, float64(ct.InsertFailed)/per), append(early, float64(ct.EarlyDrop)/per)
			dropped = dropped || ct.Drop+ct.InsertFailed+ct.EarlyDrop > 0
		}
		if len(x) == 0 {
			continue
		}
		title := fmt.Sprintf("conntrack entries on %s against its table (nf_conntrack_max %s): at most %s, %s of it", m.Host, count(m.Max), count(m.Peak),
			units.Percent(float64(m.Peak)/math.Max(float64(m.Max), 1), 1))
		var refs []ref
		if m.Max > 0 {
			refs = append(refs, ref{Y: float64(m.Max), Label: "nf_conntrack_max " + count(m.Max)})
		}
		out = append(out, chart{Title: title, Refs: refs, Series: []series{{Name: "entries", Color: colour(2), X: x, Y: y}}}.Render())
		if dropped {
			out = append(out, chart{Title: "conntrack on " + m.Host + ": what the tracker dropped, per second", X: dx, Series: []series{
				{Name: "drop", Color: colour(3), Y: drop}, {Name: "insert_failed", Color: colour(4), Y: insert}, {Name: "early_drop", Color: colour(5), Y: early}}}.Render())
		}
	}
	return out
}

// rrFigures are a transaction test's headline figures for a comparison:
// transactions per second, the round trip's p50, p99 and p99.9, and the
// transactions lost.
func rrFigures(rr *results.RR) []figure {
	lost := func(f float64) string { return count(uint64(f)) }
	return []figure{
		{Name: "transactions per second", Value: rr.TPS, Format: tps, Higher: true},
		{Name: "round trip p50", Value: rr.Latency.P50, Format: report.Micros},
		{Name: "round trip p99", Value: rr.Latency.P99, Format: report.Micros},
		{Name: "round trip p99.9", Value: rr.Latency.P999, Format: report.Micros},
		{Name: "transactions lost", Value: float64(rr.Lost()), Format: lost},
	}
}
