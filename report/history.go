package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"

	"golang.org/x/sys/unix"

	"linerate/history"
	"linerate/internal/jsonbudget"
	"linerate/internal/units"
	"linerate/internal/version"
	"linerate/results"
	"linerate/source"
	"linerate/wire"
)

// Headline is the one-line figure of a result that `linerate runs` shows:
// "udp forward → 10.0.0.2: 685.2k pps 350.8 Mb/s, loss 0.01 %".
func Headline(kind string, result any) string {
	switch r := result.(type) {
	case *results.Result:
		if kind == history.KindSearch || len(r.Search) > 0 {
			return searchHeadline(r)
		}
		if r.RR != nil {
			return rrHeadline(r)
		}
		return benchHeadline(r)
	case *results.FlowSet:
		return flowsHeadline(r)
	case *DiagnoseReport:
		return diagnoseHeadline(r)
	}
	for _, k := range moreKinds {
		if h, ok := k.headline(result); ok {
			return h
		}
	}
	return ""
}

// NewRun makes a run of the history of a command's result: its JSON, its
// headline, and where it was made (this host, its kernel, this linerate,
// the box's identity).
func NewRun(kind string, command []string, result any) (*history.Run, error) {
	data, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	r := &history.Run{Entry: history.Entry{Kind: kind, Command: command, Version: version.Version,
		Machine: source.MachineID()}, Result: data}
	if v, err := DecodeRun(r); err == nil {
		r.Headline = Headline(kind, v)
	}
	r.Host, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		r.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	return r, nil
}

// DiagnoseReport is what `diagnose --json` prints; the run history keeps it.
type DiagnoseReport struct {
	Source   string          `json:"source"`
	Seconds  float64         `json:"sampled_seconds"`
	Rules    int             `json:"rules"`
	Findings json.RawMessage `json:"findings"`
}

func benchHeadline(r *results.Result) string {
	s := r.Summary
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Spec.Proto, r.Spec.Direction)
	if n := len(r.Targets); n > 1 {
		fmt.Fprintf(&b, " ×%d targets", n)
	}
	fmt.Fprintf(&b, ": %s %s", units.Fixed.Unit(s.ReceivedPPS, "pps"), units.Fixed.Unit(s.ReceivedBPS, "b/s"))
	if r.Spec.Proto == wire.UDP {
		fmt.Fprintf(&b, ", loss %s", lossPct(s.LossRatio))
	} else if s.Retransmits > 0 {
		fmt.Fprintf(&b, ", %d retransmits", s.Retransmits)
	}
	if r.Interrupted {
		b.WriteString(" (interrupted)")
	}
	return b.String()
}

func searchHeadline(r *results.Result) string {
	var parts []string
	for _, s := range r.Search {
		parts = append(parts, fmt.Sprintf("%s B %s", s.Size, units.Fixed.Unit(s.NDRPPS, "pps")))
	}
	return "NDR " + strings.Join(parts, ", ")
}

func diagnoseHeadline(r *DiagnoseReport) string {
	var fs []struct {
		Rule     string `json:"rule"`
		Severity string `json:"severity"`
	}
	jsonbudget.Unmarshal(r.Findings, &fs)
	if len(fs) == 0 {
		return fmt.Sprintf("%s: no finding (%d rules)", r.Source, r.Rules)
	}
	names := make([]string, 0, len(fs))
	for _, f := range fs {
		if !slices.Contains(names, f.Rule) {
			names = append(names, f.Rule)
		}
	}
	return fmt.Sprintf("%s: %d findings: %s", r.Source, len(fs), strings.Join(names, ", "))
}

// Runs writes the history's list: id, time, kind, host, command, headline.
func Runs(w io.Writer, entries []history.Entry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTIME\tKIND\tHOST\tCOMMAND\tRESULT")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Time.Local().Format("2006-01-02 15:04:05"), e.Kind, e.Host,
			shortCommand(e.Command, 48), e.Headline)
	}
	return tw.Flush()
}

// shortCommand joins argv without the program's path, cut at n runes.
func shortCommand(argv []string, n int) string {
	if len(argv) > 0 {
		argv = append([]string{"linerate"}, argv[1:]...)
	}
	s := []rune(strings.Join(argv, " "))
	if len(s) > n {
		return string(s[:n-1]) + "…"
	}
	return string(s)
}

// DecodeRun reads a run's result into its type: *results.Result for bench
// and search, *results.FlowSet for flows, *DiagnoseReport for
// diagnose.
func DecodeRun(r *history.Run) (any, error) {
	v := resultOf(r.Kind)
	if v == nil {
		why := ""
		if r.Kind == history.KindPlan || r.Kind == history.KindTuneAuto {
			// Read by the full build (history_full.go), not this one.
			why = " (the small build for routers reads no plan or tune auto run: docs/openwrt.md)"
		}
		return nil, fmt.Errorf("run %s: kind %q is not one this build of linerate reads%s", runName(r), r.Kind, why)
	}
	if err := jsonbudget.Unmarshal(r.Result, v); err != nil {
		return nil, fmt.Errorf("run %s: %s result: %w", runName(r), r.Kind, err)
	}
	return v, nil
}

// CheckRun says whether a run's result would decode into its type within
// jsonbudget's budget, without decoding it, so that a file that would not
// is refused as it is read rather than while a page is written. A kind
// this linerate does not read passes (a page shows it as text).
func CheckRun(r *history.Run) error {
	v := resultOf(r.Kind)
	if v == nil {
		return nil
	}
	if err := jsonbudget.Check(r.Result, reflect.TypeOf(v).Elem(), jsonbudget.Limit(len(r.Result))); err != nil {
		return fmt.Errorf("a %s result: %w", r.Kind, err)
	}
	return nil
}

// resultOf is a new value of the type a kind of run's result decodes
// into, nil for a kind this linerate does not read.
func resultOf(kind string) any {
	switch kind {
	case history.KindBench, history.KindSearch:
		return new(results.Result)
	case history.KindFlows:
		return new(results.FlowSet)
	case history.KindDiagnose:
		return new(DiagnoseReport)
	}
	for _, k := range moreKinds {
		if k.kind == kind {
			return k.new()
		}
	}
	return nil
}

func runName(r *history.Run) string {
	if r.ID != "" {
		return r.ID
	}
	return "(file)"
}

// Figure is one headline number of a run, with the per-second values it
// came from (to judge noise) when the run has them.
type Figure struct {
	Name  string
	Value float64
	// Higher says a bigger value is better.
	Higher bool
	// PerSecond are the values of each measured second (bench), or of
	// each round (tune auto): their spread is the run's own noise.
	PerSecond []float64
	// Offered marks the load the run offered (its sent rate): neither
	// better nor worse, but loss and received rates are judged only
	// between runs offered the same load.
	Offered bool
	format  func(float64) string
}

// Figures are the headline numbers of a decoded run.
func Figures(result any) []Figure {
	switch r := result.(type) {
	case *results.Result:
		if len(r.Search) > 0 {
			var out []Figure
			for _, s := range r.Search {
				out = append(out, Figure{Name: "ndr " + s.Size + " B", Value: s.NDRPPS, Higher: true,
					format: func(v float64) string { return units.Fixed.Unit(v, "pps") }})
			}
			return out
		}
		if r.RR != nil {
			return rrFigures(r)
		}
		var pps, bps []float64
		for _, iv := range r.Intervals {
			if !iv.Warmup && !iv.ReceivedUnknown {
				pps, bps = append(pps, iv.ReceivedPPS), append(bps, iv.ReceivedBPS)
			}
		}
		s := r.Summary
		out := []Figure{
			{Name: "received pps", Value: s.ReceivedPPS, Higher: true, PerSecond: pps, format: func(v float64) string { return units.Fixed.Unit(v, "pps") }},
			{Name: "received bit/s", Value: s.ReceivedBPS, Higher: true, PerSecond: bps, format: func(v float64) string { return units.Fixed.Unit(v, "b/s") }},
		}
		if r.Spec.Proto == wire.UDP {
			out = append(out, offeredFigure(s.SentPPS), Figure{Name: "loss", Value: s.LossRatio, format: lossPct})
		} else {
			out = append(out, Figure{Name: "retransmits", Value: float64(s.Retransmits), format: func(v float64) string { return fmt.Sprintf("%.0f", v) }})
		}
		if l := s.LatencyLoad; l != nil && l.Received > 0 {
			ms := func(v float64) string { return fmt.Sprintf("%.3f ms", v) }
			out = append(out, Figure{Name: "latency p50 loaded", Value: l.P50, format: ms},
				Figure{Name: "latency p99 loaded", Value: l.P99, format: ms})
		}
		return out
	case *results.FlowSet:
		pps, bps := flowSeconds(r)
		t := r.Total
		out := []Figure{
			{Name: "received pps", Value: t.ReceivedPPS, Higher: true, PerSecond: pps, format: func(v float64) string { return units.Fixed.Unit(v, "pps") }},
			{Name: "received bit/s", Value: t.ReceivedBPS, Higher: true, PerSecond: bps, format: func(v float64) string { return units.Fixed.Unit(v, "b/s") }},
		}
		if r.Spec.Proto == wire.UDP {
			out = append(out, offeredFigure(t.SentPPS), Figure{Name: "loss", Value: t.LossRatio, format: lossPct})
		}
		if tps, per, ok := setTPS(r); ok {
			tf := Figure{Name: "transactions/s", Value: tps, Higher: true, PerSecond: per, format: func(v float64) string { return units.Fixed.Unit(v, "tps") }}
			if r.Spec.RR != nil {
				return []Figure{tf}
			}
			out = append(out, tf)
		}
		return out
	}
	for _, k := range moreKinds {
		if f, ok := k.figures(result); ok {
			return f
		}
	}
	return nil
}

// offeredFigure is a run's offered load: the packets it sent per second.
func offeredFigure(sentPPS float64) Figure {
	return Figure{Name: "offered load", Value: sentPPS, Offered: true, format: func(v float64) string { return units.Fixed.Unit(v, "pps") + " sent" }}
}

// offeredOf is the load a decoded run offered, when it is a UDP run that
// has one.
func offeredOf(result any) (results.Offered, bool) {
	switch r := result.(type) {
	case *results.Result:
		return r.Offered(), len(r.Search) == 0 && r.Spec.Proto == wire.UDP
	case *results.FlowSet:
		return results.Offered{SentPPS: r.Total.SentPPS, Asked: r.Spec.Rate}, r.Spec.Proto == wire.UDP
	}
	for _, k := range moreKinds {
		if k.offered == nil {
			continue
		}
		if o, has, ok := k.offered(result); ok {
			return o, has
		}
	}
	return results.Offered{}, false
}

func (f Figure) String() string {
	if f.format == nil {
		return fmt.Sprint(f.Value)
	}
	return f.format(f.Value)
}

// Spread is the run's own noise on a figure: the relative spread of its
// per-second values between the 10th and 90th percentile, over their
// median (0 when there are fewer than 3 values to judge from).
func (f Figure) Spread() float64 {
	if len(f.PerSecond) < 3 {
		return 0
	}
	v := slices.Clone(f.PerSecond)
	slices.Sort(v)
	at := func(p float64) float64 { return v[int(math.Round(p*float64(len(v)-1)))] }
	med := at(0.5)
	if med == 0 {
		return 0
	}
	return (at(0.9) - at(0.1)) / math.Abs(med)
}

// Compare writes the headline figures of two runs with their deltas, and
// whether each delta is beyond the runs' own noise (the larger of the two
// runs' per-second spreads).
func Compare(w io.Writer, a, b *history.Run) error {
	ra, err := DecodeRun(a)
	if err != nil {
		return err
	}
	rb, err := DecodeRun(b)
	if err != nil {
		return err
	}
	for _, k := range moreKinds {
		if k.compare == nil {
			continue
		}
		if done, err := k.compare(w, a, b, ra, rb); done {
			return err
		}
	}
	fa, fb := Figures(ra), Figures(rb)
	if len(fa) == 0 || len(fb) == 0 {
		return fmt.Errorf("compare: %s runs have no figures to compare", strings.Join(uniq(a.Kind, b.Kind), " and "))
	}
	fmt.Fprintf(w, "A  %s  %s  %s\n", runName(a), a.Time.Local().Format("2006-01-02 15:04:05"), shortCommand(a.Command, 60))
	fmt.Fprintf(w, "B  %s  %s  %s\n\n", runName(b), b.Time.Local().Format("2006-01-02 15:04:05"), shortCommand(b.Command, 60))
	if a.Kind != b.Kind {
		fmt.Fprintf(w, "note: a %s run against a %s run: only figures of the same name are compared\n\n", a.Kind, b.Kind)
	}
	oa, okA := offeredOf(ra)
	ob, okB := offeredOf(rb)
	apart := okA && okB && results.LoadsDiffer(oa.SentPPS, ob.SentPPS)
	if apart {
		fmt.Fprintf(w, "note: the runs were offered different loads (more than %s apart): A %s, B %s; their loss is not judged, and a received rate may follow the load\n\n",
			units.Percent(results.LoadsApart, 0), oa, ob)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "FIGURE\tA\tB\tCHANGE\tNOISE\t\t")
	for _, x := range fa {
		i := slices.IndexFunc(fb, func(y Figure) bool { return y.Name == x.Name })
		if i < 0 {
			continue
		}
		y := fb[i]
		change, noise := "", ""
		verdict := ""
		switch {
		case x.Offered && apart:
			verdict = "offered loads differ"
		case x.Offered:
			verdict = "same offered load (within " + units.Percent(results.LoadsApart, 0) + ")"
		case apart && x.Name == "loss":
			// More sent may be more lost whatever the change did.
			verdict = "not judged: offered loads differ"
		}
		switch {
		case x.Value == 0 && y.Value == 0:
			change, verdict = "0", cmp.Or(verdict, "same")
		case x.Value == 0:
			change, verdict = "from 0", cmp.Or(verdict, "changed")
		default:
			c := (y.Value - x.Value) / math.Abs(x.Value)
			change = units.SignedPercent(c, 1)
			n := max(x.Spread(), y.Spread())
			if verdict != "" {
				noise = "-"
			} else if len(x.PerSecond) >= 3 && len(y.PerSecond) >= 3 {
				noise = "±" + units.Percent(n, 1)
				switch {
				case math.Abs(c) <= n:
					verdict = "within the noise"
				case (c > 0) == x.Higher:
					verdict = "better, beyond the noise"
				default:
					verdict = "worse, beyond the noise"
				}
			} else {
				noise = "-"
				verdict = "not judged: no per-second figures"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\t%s\n", x.Name, x, y, change, noise, verdict)
	}
	return tw.Flush()
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

// lossPct writes a loss ratio as tune auto's tables do: 0.0001 is
// "0.01 %".
func lossPct(r float64) string { return units.Percent(r, 2) }

// moreKinds are the kinds of run whose views only the full build has
// (plans and tune auto: history_full.go): the small build for routers
// leaves them out with the commands that make them (docs/openwrt.md), and
// `runs` there lists such a run as a kind it does not read.
var moreKinds []runKind

// runKind is what the history's views know of one kind of run beyond
// those history.go reads: each function answers ok=false for a result
// not of its kind.
type runKind struct {
	kind     string
	new      func() any
	headline func(result any) (string, bool)
	figures  func(result any) ([]Figure, bool)
	// offered is the load a run of the kind offered (has) when it has
	// one; nil for a kind that offers none.
	offered func(result any) (o results.Offered, has, ok bool)
	// compare writes a comparison of its own of two runs, when it has
	// one for them (done).
	compare func(w io.Writer, a, b *history.Run, ra, rb any) (done bool, err error)
}
