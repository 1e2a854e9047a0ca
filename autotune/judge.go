package autotune

import (
	"fmt"
	"math"
	"slices"

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
		return units.Percent(v, 2, " ")
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

// Verdict is the noise test's answer for one trial.
type Verdict struct {
	Keep bool `json:"keep"`
	// Before and After are the medians of the baseline's and the trial's
	// rounds.
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// Change is the metric's relative change, (After-Before)/Before; Gain
	// is the same signed so that positive is better (for loss and CPU a
	// fall is a gain).
	Change float64 `json:"change"`
	Gain   float64 `json:"gain"`
	// Noise is the threshold the gain had to pass: the larger of the
	// minimum gain and the relative spread of either set of rounds.
	Noise float64 `json:"noise"`
	// Why says in words why the change is kept or not.
	Why string `json:"why"`
	// Note says what the verdict could not weigh: a loss measured at
	// offered loads more than results.LoadsApart apart.
	Note string `json:"note,omitempty"`
}

// Judge decides whether a trial's rounds beat the baseline's on a metric,
// beyond the noise of the measurement.
//
// With the 2 to 5 rounds a trial can afford, rank tests cannot say
// much: Mann-Whitney's smallest one-sided p-value with 3 rounds against 3
// is 1/20, with 2 against 2 it is 1/6, whatever the figures are; and
// Welch's t on 2 or 3 samples leans on a normality nobody can check.
// Judge uses a rule a person can verify from the table instead. A change
// is kept only when both hold:
//
//  1. its median beats the baseline's median by more than the noise:
//     the larger of minGain and the relative spread ((max-min)/median) of
//     the baseline's rounds and of the trial's own rounds — the scatter
//     that identical runs showed;
//  2. every one of its rounds beats the baseline's median, so that one
//     lucky round cannot carry it.
//
// Anything else is rolled back: worse, or within the noise.
func Judge(metric Metric, base, trial []float64, minGain float64) Verdict {
	v := Verdict{Noise: minGain}
	if len(base) == 0 || len(trial) == 0 {
		v.Why = "no rounds to compare"
		return v
	}
	v.Before, v.After = median(base), median(trial)
	higher := metric.HigherIsBetter()
	if v.Before == 0 {
		switch {
		case !higher && v.After == 0:
			v.Why = "nothing to improve: the baseline's median is 0"
		case !higher:
			v.Why = "worse: from 0 to " + metric.Format(v.After)
		default:
			v.Why = "the baseline's median is 0: no relative gain to judge"
		}
		return v
	}
	v.Change = (v.After - v.Before) / math.Abs(v.Before)
	v.Gain = v.Change
	if !higher {
		v.Gain = -v.Change
	}
	// A trial whose own median is 0 (a flood that stalled) is measured
	// against the baseline's median, so the noise stays finite.
	ref := median(trial)
	if ref == 0 {
		ref = v.Before
	}
	v.Noise = max(minGain, spread(base, v.Before), spread(trial, ref))
	better := func(x float64) bool {
		if higher {
			return x > v.Before
		}
		return x < v.Before
	}
	worst := slices.Max(trial)
	if higher {
		worst = slices.Min(trial)
	}
	switch {
	case v.Gain > v.Noise && better(worst):
		v.Keep = true
		v.Why = fmt.Sprintf("%s better, beyond the noise (%s); every round beat the baseline's median", pctAbs(v.Gain), pctAbs(v.Noise))
	case v.Gain > v.Noise:
		v.Why = fmt.Sprintf("%s better, but a round (%s) was no better than the baseline's median", pctAbs(v.Gain), metric.Format(worst))
	case v.Gain < -v.Noise:
		v.Why = fmt.Sprintf("worse by %s (noise %s)", pctAbs(-v.Gain), pctAbs(v.Noise))
	default:
		v.Why = fmt.Sprintf("%s is within the noise (%s)", signedPct(v.Gain), pctAbs(v.Noise))
	}
	return v
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
	return units.Percent(math.Abs(f), 1, " ")
}

func signedPct(f float64) string { return units.SignedPercent(f, 1, " ") }
