package traffic

import (
	"math"
	"time"

	"linerate/results"
)

// reportSpan is the part of the run target t's reports cover, laid on
// the client's clock (the server's seconds since its start from the
// client's start): from its report that opened the measured window to its
// last. The server starts its clock a moment before the client does, so
// both edges are early by that moment alike and the span's length is the
// server's.
func (t *target) reportSpan(start time.Time) (from, to time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	if t.last == nil {
		return start, start
	}
	return at(t.base.T), at(t.last.T)
}

// countedBetween is what the client's flows behind shares counted from
// from to to, read from the session's trail of their progress: one count
// (stream 0). A share of a flow that serves several targets (the socket
// engine's one sender) gets the part of the flow's progress that its
// streams have of the flow's measured counts.
func (r *clientRun) countedBetween(shares []share, from, to time.Time) results.Count {
	var pk, by float64
	for _, s := range shares {
		p0, b0, ok0 := r.sess.ProgressAt(s.e, from)
		p1, b1, ok1 := r.sess.ProgressAt(s.e, to)
		if !ok0 || !ok1 {
			continue
		}
		fp, fb := 1.0, 1.0
		if s.n != 0 {
			part, all := sum(s.counts()), sum(s.e.Result().Counts)
			fp, fb = ratio(part.Packets, all.Packets), ratio(part.Bytes, all.Bytes)
		}
		pk += max(p1-p0, 0) * fp
		by += max(b1-b0, 0) * fb
	}
	n := uint64(math.Round(pk))
	return results.Count{Packets: n, Unique: n, Bytes: uint64(math.Round(by))}
}

// ratio is a over b, 0 when b is.
func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
