package results

import (
	"cmp"
	"math"
	"slices"

	"linerate/internal/order"
	"linerate/wire"
)

// RRUL is the figures of a Realtime Response Under Load test (flent's
// rrul, `linerate bench rrul`): TCP streams both ways at once, each
// marked with its own code point, and latency probes before the load
// (idle) and throughout it. What the load adds to the idle round trip is
// the latency a queue on the path induced: bufferbloat.
type RRUL struct {
	// LatencyIdle and LatencyLoad are the probes' round trips before the
	// load and under it (every target).
	LatencyIdle *Latency `json:"latency_idle,omitempty"`
	LatencyLoad *Latency `json:"latency_load,omitempty"`
	// InducedP50 and InducedP95 are the median and 95th percentile
	// round trips under load less those idle, in milliseconds: absent
	// when either phase had no answered probe.
	InducedP50 *float64 `json:"induced_p50_ms,omitempty"`
	InducedP95 *float64 `json:"induced_p95_ms,omitempty"`
	// UpBPS and DownBPS are the goodput of every stream client → server
	// (up) and server → client (down), bits per second.
	UpBPS   float64 `json:"up_bps"`
	DownBPS float64 `json:"down_bps"`
	// Flows are the streams, up first, each with its mark.
	Flows []RRULFlow `json:"flows"`
	// Probes are every answered probe's round trip, idle ones first.
	Probes []ProbeSample `json:"probes,omitempty"`
}

// RRULFlow is one stream of an RRUL test.
type RRULFlow struct {
	Target    int            `json:"target"`
	Stream    int            `json:"stream"`
	Direction wire.Direction `json:"direction"`
	// DSCP is the stream's code point and Mark its name (BE, CS1, EF...).
	DSCP int    `json:"dscp"`
	Mark string `json:"mark"`
	// GoodputBPS is the stream's goodput over the measured window.
	GoodputBPS  float64 `json:"goodput_bps"`
	Retransmits uint64  `json:"retransmits"`
	// RTTMs is the sender's smoothed RTT at the end (TCP_INFO), 0 when
	// unknown.
	RTTMs float64 `json:"rtt_ms,omitempty"`
	// OverTime is the stream's goodput each second (from the sender's
	// TCP_INFO), warmup included.
	OverTime []Goodput `json:"over_time,omitempty"`
}

// Goodput is a stream's goodput over the second that ends at T (seconds
// since the start, warmup included).
type Goodput struct {
	T   float64 `json:"t"`
	BPS float64 `json:"bps"`
}

// GoodputOverTime is a sending stream's goodput each second, from the
// bytes its receiver acknowledged by each of its TCP_INFO samples (the
// first from the start); nil when the samples do not carry them (a result
// from before TCPSample.Acked).
func GoodputOverTime(samples []TCPSample) []Goodput {
	var out []Goodput
	var t0 float64
	var acked uint64
	known := false
	for _, s := range samples {
		known = known || s.Acked > 0
		if dt := s.T - t0; dt > 0 && s.Acked >= acked {
			out = append(out, Goodput{T: s.T, BPS: float64(s.Acked-acked) * 8 / dt})
		}
		t0, acked = s.T, s.Acked
	}
	if !known {
		return nil
	}
	return out
}

// NewRRUL gathers the RRUL figures of a bench result whose streams ran
// both ways, and the probes' round trips over time.
func NewRRUL(res *Result, probes []ProbeSample) *RRUL {
	s := res.Summary
	r := &RRUL{LatencyIdle: s.LatencyIdle, LatencyLoad: s.LatencyLoad}
	if i, l := s.LatencyIdle, s.LatencyLoad; i != nil && l != nil && i.Received > 0 && l.Received > 0 {
		// To the microsecond the probes were measured in.
		p50, p95 := math.Round((l.P50-i.P50)*1000)/1000, math.Round((l.P95-i.P95)*1000)/1000
		r.InducedP50, r.InducedP95 = &p50, &p95
	}
	for _, st := range res.Streams {
		f := RRULFlow{Target: st.Target, Stream: st.Stream, Direction: st.Direction, DSCP: res.Spec.DSCPOf(st.Stream),
			GoodputBPS: st.ReceivedBPS, Retransmits: st.Retransmits}
		f.Mark = wire.DSCPName(f.DSCP)
		if st.TCP != nil {
			f.RTTMs = float64(st.TCP.RTTMicros) / 1000
			f.OverTime = GoodputOverTime(st.TCP.OverTime)
		}
		if st.Direction == wire.Forward {
			r.UpBPS += st.ReceivedBPS
		} else {
			r.DownBPS += st.ReceivedBPS
		}
		r.Flows = append(r.Flows, f)
	}
	order.SortStable(r.Flows, func(a, b RRULFlow) int {
		return cmp.Or(cmp.Compare(dirOrder(a.Direction), dirOrder(b.Direction)), cmp.Compare(a.Target, b.Target), cmp.Compare(a.Stream, b.Stream))
	})
	r.Probes = slices.Clone(probes)
	order.SortStable(r.Probes, func(a, b ProbeSample) int { return cmp.Compare(a.T, b.T) })
	return r
}

// dirOrder puts up (forward) before down.
func dirOrder(d wire.Direction) int {
	if d == wire.Forward {
		return 0
	}
	return 1
}
