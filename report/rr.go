package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"linerate/internal/units"
	"linerate/results"
	"linerate/wire"
)

// RRInterval writes one interval line of a transaction test: the
// transactions the client completed and the server answered per second.
func RRInterval(w io.Writer, iv results.IntervalStats, live bool) {
	line := fmt.Sprintf("%6.1fs  %12s  answered %12s", iv.T, units.Fixed.Unit(iv.TPS, "tps"), rrRate(iv.ReceivedPPS, iv.ReceivedUnknown))
	if live {
		fmt.Fprintf(w, "\r%s\x1b[K", line)
		return
	}
	fmt.Fprintln(w, line)
}

func rrRate(v float64, unknown bool) string {
	if unknown {
		return "?"
	}
	return units.Fixed.Unit(v, "tps")
}

// RRKind names a transaction test as netperf does: TCP_RR, UDP_RR, or
// TCP_CRR for a connection per transaction.
func RRKind(sp wire.Spec) string {
	if sp.RR != nil && sp.RR.Connect {
		return "TCP_CRR"
	}
	return strings.ToUpper(sp.Proto.String()) + "_RR"
}

// Micros writes a round trip in microseconds, as milliseconds from 10 ms
// up: "545 µs", "17.0 ms".
func Micros(us float64) string {
	if us >= 10000 {
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}

// RRWhat is a transaction test in words: "TCP_CRR (a connection per
// transaction), 1-byte requests, 1-byte responses, 2 streams, 5s, timeout
// 2s".
func RRWhat(sp wire.Spec) string {
	kind := RRKind(sp)
	if sp.RR.Connect {
		kind += " (a connection per transaction)"
	}
	return fmt.Sprintf("%s, %d-byte requests, %d-byte responses, %d streams, %s, timeout %s", kind, sp.RR.Request, sp.RR.Response,
		sp.Streams, sp.Duration.D(), sp.RR.Timeout.D())
}

// rrHeadline is a transaction test's line in `linerate runs`:
// "TCP_CRR → b: 3.4ktps, p50 545 µs, p99 1434 µs, 0 lost".
func rrHeadline(r *results.Result) string {
	rr := r.RR
	var to []string
	for _, t := range r.Targets {
		to = append(to, t.Target)
	}
	h := fmt.Sprintf("%s → %s: %s, p50 %s, p99 %s, %d lost", RRKind(r.Spec), strings.Join(to, ", "), units.Fixed.Unit(rr.TPS, "tps"),
		Micros(rr.Latency.P50), Micros(rr.Latency.P99), rr.Lost())
	if r.Interrupted {
		h += " (interrupted)"
	}
	return h
}

// rrFigures are a transaction test's figures for compare: transactions
// per second (with each second's, to judge the noise), the round trip's
// percentiles and the transactions lost.
func rrFigures(r *results.Result) []Figure {
	rr := r.RR
	var tps []float64
	for _, iv := range r.Intervals {
		if !iv.Warmup && !iv.SentUnknown {
			tps = append(tps, iv.TPS)
		}
	}
	l := rr.Latency
	return []Figure{
		{Name: "transactions/s", Value: rr.TPS, Higher: true, PerSecond: tps, format: func(v float64) string { return units.Fixed.Unit(v, "tps") }},
		{Name: "round trip p50", Value: l.P50, format: Micros},
		{Name: "round trip p99", Value: l.P99, format: Micros},
		{Name: "round trip p99.9", Value: l.P999, format: Micros},
		{Name: "transactions lost", Value: float64(rr.Lost()), format: func(v float64) string { return fmt.Sprintf("%.0f", v) }},
	}
}

// RRText writes a transaction test's result: what was run, the
// transactions and their round trips, each stream, the failures, and the
// connection tracker of each sampled device in the middle.
func RRText(w io.Writer, r *results.Result) {
	rr, sp := r.RR, r.Spec
	if rr == nil || sp.RR == nil {
		return
	}
	what := RRWhat(sp)
	if r.Interrupted {
		what += " — INTERRUPTED, partial result"
	}
	if se := r.StoppedEarly; se != nil {
		what += fmt.Sprintf(" — STOPPED EARLY at %.1f s by the error below, partial result", se.At)
	}
	fmt.Fprintln(w, what)
	l := rr.Latency
	fmt.Fprintf(w, "%d transactions in %.2f s: %s; the server answered %d", rr.Transactions, rr.Seconds, units.Fixed.Unit(rr.TPS, "tps"), rr.Answered)
	if sp.Proto == wire.TCP {
		fmt.Fprintf(w, " over %d connections", rr.Connections)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "round trip µs: min %.0f  p50 %.0f  p90 %.0f  p99 %.0f  p99.9 %.0f  max %.0f  (mean %.0f)\n", l.Min, l.P50, l.P90, l.P99, l.P999, l.Max, l.Mean)
	fmt.Fprintf(w, "lost: %d timed out, %d connects failed, %d other errors\n", rr.Timeouts, rr.ConnectFailures, rr.Errors)
	if len(rr.Streams) > 1 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "stream\ttransactions\ttps\tp50 µs\tp99 µs\ttimeouts\tfailures\t")
		for _, s := range rr.Streams {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%.0f\t%.0f\t%d\t%d\t\n", s.Stream, s.Transactions, units.Fixed.Format(s.TPS), s.P50, s.P99, s.Timeouts, s.Failures)
		}
		tw.Flush()
	}
	for _, m := range rr.Middle {
		conntrackLine(w, m)
	}
	CPULines(w, r.Summary, "M transactions")
	if sum := r.Summary; sum.LimitedWhy != "" {
		fmt.Fprintf(w, "limited by %s: %s\n", sum.LimitedBy, sum.LimitedWhy)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note: "+n)
	}
	for _, p := range r.Problems() {
		fmt.Fprintln(w, "error: "+p)
	}
}

// rrHeader are the columns of a transaction test's CSV.
var rrHeader = []string{"target", "proto", "connect", "request", "response", "streams", "seconds", "transactions", "tps",
	"server_answered", "timeouts", "connect_failures", "errors", "p50_us", "p90_us", "p99_us", "p99_9_us", "max_us"}

// RRCSV writes a transaction test as CSV: a header row and one row for
// the test.
func RRCSV(w io.Writer, r *results.Result) error {
	rr, sp := r.RR, r.Spec
	if rr == nil || sp.RR == nil {
		return fmt.Errorf("not a transaction test")
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	var targets []string
	for _, t := range r.Targets {
		targets = append(targets, t.Target)
	}
	l := rr.Latency
	cw := csv.NewWriter(w)
	cw.Write(rrHeader)
	cw.Write([]string{strings.Join(targets, " "), sp.Proto.String(), strconv.FormatBool(sp.RR.Connect), strconv.Itoa(sp.RR.Request),
		strconv.Itoa(sp.RR.Response), strconv.Itoa(sp.Streams), f(rr.Seconds), u(rr.Transactions), f(rr.TPS), u(rr.Answered),
		u(rr.Timeouts), u(rr.ConnectFailures), u(rr.Errors), f(l.P50), f(l.P90), f(l.P99), f(l.P999), f(l.Max)})
	cw.Flush()
	return cw.Error()
}

// conntrackLine writes a host's connection tracker over a run.
func conntrackLine(w io.Writer, m results.ConntrackUse) {
	fmt.Fprintf(w, "conntrack on %s: %d entries at the start, %d at the peak, %d at the end, of %d; drop %d, insert_failed %d, early_drop %d\n",
		m.Host, m.Start, m.Peak, m.End, m.Max, m.Drop, m.InsertFailed, m.EarlyDrop)
}

// setTPS is the transactions per second of a set's transaction flows
// added up, second by second too; ok is false when it has none.
func setTPS(fs *results.FlowSet) (total float64, perSecond []float64, ok bool) {
	for _, f := range fs.Flows {
		if f.Result == nil || f.Result.RR == nil {
			continue
		}
		ok = true
		total += f.Result.RR.TPS
		i := 0
		for _, iv := range f.Result.Intervals {
			if iv.Warmup {
				continue
			}
			if i == len(perSecond) {
				perSecond = append(perSecond, 0)
			}
			perSecond[i] += iv.TPS
			i++
		}
	}
	return total, perSecond, ok
}
