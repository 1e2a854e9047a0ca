package results

import (
	"time"

	"linerate/box"
)

// SamplesInWindow keeps the samples of one end that lie at least half
// inside its measured window, which begins with the end's first sample
// (each end samples from the start of its measured window, by its own
// clock) and lasts secs (all of them when secs is not positive). The last
// sample, taken as the run stops, counts time after the traffic ended:
// charted, it would end every chart in a fall to zero nothing measured.
func SamplesInWindow(rs []box.Rates, secs float64) []box.Rates {
	if len(rs) == 0 || secs <= 0 {
		return rs
	}
	from := rs[0].Start
	for _, r := range rs {
		if r.Start.Before(from) {
			from = r.Start
		}
	}
	to := from.Add(time.Duration(secs * float64(time.Second)))
	var in []box.Rates
	for _, r := range rs {
		start, end := r.Start, r.End
		if start.Before(from) {
			start = from
		}
		if end.After(to) {
			end = to
		}
		if r.Seconds <= 0 || end.Sub(start).Seconds() >= r.Seconds/2 {
			in = append(in, r)
		}
	}
	return in
}
