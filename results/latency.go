package results

import (
	"slices"
	"time"
)

// Latency is round-trip times of probes, in milliseconds.
type Latency struct {
	Sent     int     `json:"sent"`
	Received int     `json:"received"`
	Min      float64 `json:"min_ms"`
	P50      float64 `json:"p50_ms"`
	P90      float64 `json:"p90_ms"`
	P95      float64 `json:"p95_ms"`
	P99      float64 `json:"p99_ms"`
	Max      float64 `json:"max_ms"`
}

// Summarize computes percentiles (nearest rank) of rtts.
func Summarize(rtts []time.Duration, sent int) *Latency {
	l := &Latency{Sent: sent, Received: len(rtts)}
	if len(rtts) == 0 {
		return l
	}
	s := slices.Clone(rtts)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	l.Min, l.Max = ms(s[0]), ms(s[len(s)-1])
	l.P50, l.P90, l.P95, l.P99 = ms(rank(0.50)), ms(rank(0.90)), ms(rank(0.95)), ms(rank(0.99))
	return l
}

// ProbeSample is one answered latency probe.
type ProbeSample struct {
	// Target is the index of the target probed.
	Target int `json:"target"`
	// T is when the probe was sent, in seconds since the start of the
	// load (the warmup's start); idle probes, before it, are negative.
	T float64 `json:"t"`
	// RTT is its round trip in milliseconds.
	RTT  float64 `json:"rtt_ms"`
	Idle bool    `json:"idle,omitempty"`
}
