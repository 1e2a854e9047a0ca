package autotune

import (
	"fmt"
	"math"
	"slices"

	"linerate/internal/confidence"
	"linerate/internal/units"
	"linerate/internal/usage"
	"linerate/wire"
)

// Goal is what `tune auto` improves.
type Goal string

// Goals.
const (
	// GoalThroughput: more received packets per second (UDP) or bits per
	// second (TCP) at the far end.
	GoalThroughput Goal = "throughput"
	// GoalLoss: a smaller share of the sent packets lost (UDP).
	GoalLoss Goal = "loss"
	// GoalCPU: fewer CPU seconds of the device under test per million
	// packets delivered (seed 002's coalescing case: the same throughput for
	// less CPU).
	GoalCPU Goal = "cpu"
)

// Goals lists the goals in help-text order.
var Goals = []Goal{GoalThroughput, GoalLoss, GoalCPU}

// ParseGoal reads a goal by its name; an unknown one is a
// *usage.FieldError with the field "Goal".
func ParseGoal(s string) (Goal, error) {
	for _, g := range Goals {
		if string(g) == s {
			return g, nil
		}
	}
	return "", usage.Field("Goal", "%q: want throughput, loss or cpu", s)
}

// Metric is a figure a round is judged on. It knows its name (as the
// report and the JSON write it), its unit and which way it improves. It
// marshals as its name; a name this version does not know reads back as
// a metric with no unit that no round has.
type Metric struct {
	name   string
	unit   string
	higher bool
	// percent: the figure is a ratio, written as a percentage; else
	// rate: it is per second, written with an SI prefix; else it is
	// written with three significant digits.
	percent, rate bool
}

// Metrics.
var (
	MetricRxPPS      = Metric{name: "received_pps", unit: "pps", higher: true, rate: true}
	MetricRxBPS      = Metric{name: "received_bps", unit: "bit/s", higher: true, rate: true}
	MetricLoss       = Metric{name: "loss_ratio", unit: "%", percent: true}
	MetricCPUPerMpkt = Metric{name: "cpu_seconds_per_mpkt", unit: "s/Mpkt"}
)

var metrics = []Metric{MetricRxPPS, MetricRxBPS, MetricLoss, MetricCPUPerMpkt}

// String is the metric's name: "received_pps".
func (m Metric) String() string { return m.name }

// Unit is what the metric counts: "pps", "bit/s", "%", "s/Mpkt".
func (m Metric) Unit() string { return m.unit }

// HigherIsBetter says which way the metric improves.
func (m Metric) HigherIsBetter() bool { return m.higher }

// MarshalText writes the metric's name.
func (m Metric) MarshalText() ([]byte, error) { return []byte(m.name), nil }

// UnmarshalText reads a metric by its name.
func (m *Metric) UnmarshalText(b []byte) error {
	*m = Metric{name: string(b)}
	for _, k := range metrics {
		if k.name == m.name {
			*m = k
		}
	}
	return nil
}

// Metric is the figure a goal is judged on for a protocol.
func (g Goal) Metric(proto wire.Proto) Metric {
	switch g {
	case GoalLoss:
		return MetricLoss
	case GoalCPU:
		return MetricCPUPerMpkt
	}
	if proto == wire.TCP {
		return MetricRxBPS
	}
	return MetricRxPPS
}

// Value is a round's figure for a metric; ok is false when the round
// could not measure it (no counters of the device under test).
func (r Round) Value(m Metric) (v float64, ok bool) {
	switch m {
	case MetricRxPPS:
		return r.ReceivedPPS, true
	case MetricRxBPS:
		return r.ReceivedBPS, true
	case MetricLoss:
		return r.LossRatio, true
	case MetricCPUPerMpkt:
		return r.CPUPerMpkt, r.CPUSampled && r.ReceivedPackets > 0
	}
	return 0, false
}

// Format writes a value of the metric with its unit: "312.4 kpps",
// "941.23 Mbit/s", "4.12 %", "1.85 s/Mpkt".
func (m Metric) Format(v float64) string {
	switch {
	case m.percent:
		return units.Percent(v, 2)
	case m.rate:
		return units.Rate(v, m.unit)
	case m.unit != "":
		return fmt.Sprintf("%.3g %s", v, m.unit)
	}
	return fmt.Sprint(v)
}

// DefaultMinGain is the smallest relative improvement `tune auto` keeps
// a change for, however quiet the measurements: below 2 % a change is
// not worth a line in a boot script.
const DefaultMinGain = 0.02

// Decision is what a trial's pairs say of its change.
type Decision string

// Decisions.
const (
	// Better: the gain's interval lies above the threshold; kept.
	Better Decision = "better"
	// NotBetter: the interval lies below the threshold (worse, or not
	// enough better); rolled back.
	NotBetter Decision = "not-better"
	// Unclear: the interval straddles the threshold; rolled back, and
	// said as undecided when no more rounds may be added.
	Unclear Decision = "unclear"
)

// Verdict is what one trial's interleaved pairs of rounds say of its
// change, on one metric.
type Verdict struct {
	Keep     bool     `json:"keep"`
	Decision Decision `json:"decision"`
	// Before and After are the medians of the pairs' rounds without and
	// with the change, for the tables.
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// Change is the metric's estimated relative change (the geometric
	// mean of the pairs' after/before ratios, less 1); Gain is the same
	// signed so that positive is better (for loss and CPU a fall is a
	// gain: 1 − after/before).
	Change float64 `json:"change"`
	Gain   float64 `json:"gain"`
	// GainLow and GainHigh bound the gain at Confidence (two-sided),
	// from Pairs pairs; Method says how.
	GainLow    float64 `json:"gain_low"`
	GainHigh   float64 `json:"gain_high"`
	Confidence float64 `json:"confidence"`
	Pairs      int     `json:"pairs"`
	Method     string  `json:"method,omitempty"`
	// Noise is half the interval's width: how far the estimate may be
	// off either way.
	Noise float64 `json:"noise"`
	// Why says in words why the change is kept or not.
	Why string `json:"why"`
	// Note says what the verdict could not weigh: a loss measured at
	// offered loads more than results.LoadsApart apart.
	Note string `json:"note,omitempty"`
}

// Methods of a verdict's interval.
const (
	MethodLogRatio   = "Student's t on the pairs' log ratios"
	MethodDifference = "Student's t on the pairs' differences over the mean without the change"
)

// Judge decides what a trial's pairs of rounds say of its change on a
// metric: a two-sided Student-t interval, at confidence conf, on the mean
// of the pairs' log ratios ln(after/before) — a tuning scales a rate, and
// the log makes a gain and the loss that undoes it the same size — turned
// into a gain. A metric that is 0 in a round (no loss at all) has no
// ratio; then the interval is on the pairs' differences over the mean
// without the change.
//
// The change is Better (kept) when the whole interval lies above minGain,
// which is above zero; NotBetter when it lies below minGain (worse, or
// not worth a change); Unclear otherwise, and with fewer than two pairs.
// Pairing each round with the next one cancels what drifts slower than
// a pair (other work on the machine, a warming CPU); the interval then
// measures only what is left.
func Judge(metric Metric, pairs []Pair, minGain, conf float64) Verdict {
	v := Verdict{Decision: Unclear, Confidence: conf, Pairs: len(pairs)}
	if len(pairs) == 0 {
		v.Why = "no rounds to compare"
		return v
	}
	before, after := make([]float64, len(pairs)), make([]float64, len(pairs))
	positive := true
	for i, p := range pairs {
		before[i], after[i] = p.Before, p.After
		positive = positive && p.Before > 0 && p.After > 0
	}
	v.Before, v.After = median(before), median(after)
	higher := metric.HigherIsBetter()
	var iv confidence.Interval
	var change func(float64) float64
	if positive {
		ds := make([]float64, len(pairs))
		for i, p := range pairs {
			ds[i] = math.Log(p.After / p.Before)
		}
		iv, change, v.Method = confidence.Mean(ds, conf), math.Expm1, MethodLogRatio
	} else {
		base := 0.0
		for _, b := range before {
			base += b
		}
		base /= float64(len(before))
		if base == 0 {
			v.Decision = NotBetter
			if !higher && slices.Max(after) == 0 {
				v.Why = "nothing to improve: 0 without the change and with it"
			} else if !higher {
				v.Why = "worse: from 0 to " + metric.Format(v.After)
			} else {
				v.Decision = Unclear
				v.Why = "0 without the change: no relative gain to judge"
			}
			return v
		}
		ds := make([]float64, len(pairs))
		for i, p := range pairs {
			ds[i] = (p.After - p.Before) / math.Abs(base)
		}
		iv, change, v.Method = confidence.Mean(ds, conf), func(d float64) float64 { return d }, MethodDifference
	}
	gain := func(d float64) float64 {
		if higher {
			return change(d)
		}
		return -change(d)
	}
	v.Change, v.Gain = change(iv.Mean), gain(iv.Mean)
	v.GainLow, v.GainHigh = gain(iv.Low()), gain(iv.High())
	if v.GainLow > v.GainHigh {
		v.GainLow, v.GainHigh = v.GainHigh, v.GainLow
	}
	v.Noise = (v.GainHigh - v.GainLow) / 2
	est := fmt.Sprintf("%s %s", signedPct(v.Gain), v.intervalText())
	switch {
	case !iv.OK():
		v.Why = fmt.Sprintf("%s from one pair: no interval yet", signedPct(v.Gain))
	case v.GainLow > minGain:
		v.Decision, v.Keep = Better, true
		v.Why = fmt.Sprintf("%s: clear of the %s threshold", est, pctAbs(minGain))
	case v.GainHigh < 0:
		v.Decision = NotBetter
		v.Why = fmt.Sprintf("worse: %s", est)
	case v.GainHigh < minGain:
		v.Decision = NotBetter
		v.Why = fmt.Sprintf("%s: below the %s threshold", est, pctAbs(minGain))
	default:
		v.Why = fmt.Sprintf("%s: straddles the %s threshold", est, pctAbs(minGain))
	}
	return v
}

// intervalText is "(interval +12.1 % to +45.0 % at 98.3 %, 6 pairs)".
func (v Verdict) intervalText() string {
	return fmt.Sprintf("(interval %s at %s, %d pairs)", v.IntervalText(), units.Percent(v.Confidence, 1), v.Pairs)
}

// IntervalText is the gain's interval, "+12.1 % to +45.0 %"; an end
// beyond ±999 % (a few pairs of very noisy rounds) is written as such
// rather than as a figure nobody can read.
func (v Verdict) IntervalText() string { return GainText(v.GainLow) + " to " + GainText(v.GainHigh) }

// GainText is a relative gain with its sign, "+12.1 %", or "above +999 %"
// and "below -999 %" past those.
func GainText(g float64) string {
	switch {
	case g > 9.99:
		return "above +999 %"
	case g < -9.99:
		return "below -999 %"
	}
	return signedPct(g)
}

// median of a non-empty set.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spread is the relative range of a set, (max-min)/|ref|, for a non-zero
// ref (the set's median, or the baseline's); 0 for one value.
func spread(xs []float64, ref float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if hi == lo || ref == 0 {
		return 0
	}
	return (hi - lo) / math.Abs(ref)
}

func pctAbs(f float64) string {
	if math.IsInf(f, 0) {
		return "unbounded"
	}
	return units.Percent(math.Abs(f), 1)
}

func signedPct(f float64) string { return units.SignedPercent(f, 1) }
