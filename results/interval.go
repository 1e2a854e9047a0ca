package results

import (
	"time"

	"linerate/box"
)

// GroupIntervals returns an OnInterval function that passes each period's
// worth of one-second interval lines to emit as one line, as iperf3's -i
// does: rates are the time-weighted means over the period, CPU use the
// mean per CPU, and a line is warmup when any of it is (as each
// one-second line is). A period of a
// second or less passes every line on as it is.
func GroupIntervals(period time.Duration, emit func(IntervalStats)) func(IntervalStats) {
	if period <= time.Second {
		return emit
	}
	var group []IntervalStats
	var from float64 // end of the last line emitted
	return func(iv IntervalStats) {
		group = append(group, iv)
		if iv.T-from < period.Seconds()-1e-3 {
			return
		}
		emit(mergeIntervals(group, from))
		from = iv.T
		group = group[:0]
	}
}

// mergeIntervals merges consecutive interval lines; from is where the
// first one began.
func mergeIntervals(ivs []IntervalStats, from float64) IntervalStats {
	out := IntervalStats{T: ivs[len(ivs)-1].T}
	total := out.T - from
	if total <= 0 {
		return ivs[len(ivs)-1]
	}
	cpu := map[int]*box.CPUUse{}
	var ids []int
	prev := from
	for _, iv := range ivs {
		w := (iv.T - prev) / total
		prev = iv.T
		out.Warmup = out.Warmup || iv.Warmup
		// A line is unknown where any second of it is: a mean over the
		// seconds that were measured would pass for the whole line's.
		out.SentUnknown = out.SentUnknown || iv.SentUnknown
		out.ReceivedUnknown = out.ReceivedUnknown || iv.ReceivedUnknown
		out.SentPPS += iv.SentPPS * w
		out.SentBPS += iv.SentBPS * w
		out.ReceivedPPS += iv.ReceivedPPS * w
		out.ReceivedBPS += iv.ReceivedBPS * w
		for _, c := range iv.CPU {
			m := cpu[c.ID]
			if m == nil {
				m = &box.CPUUse{ID: c.ID}
				cpu[c.ID] = m
				ids = append(ids, c.ID)
			}
			m.AddWeighted(c, w)
		}
	}
	for _, id := range ids {
		out.CPU = append(out.CPU, *cpu[id])
	}
	out.ClearUnknown()
	return out
}
