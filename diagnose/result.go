package diagnose

import (
	"linerate/box"
	"linerate/results"
)

// FromResult builds evidence from a saved bench result: the counter samples
// and drop counters of one end (side "client" or "server"; the first
// server when several) and what the load generator knew. b is that end's
// model of the box.
func FromResult(r *results.Result, side results.Side, b *box.Box) *Evidence {
	ev := &Evidence{Box: b}
	target := -1
	for _, s := range r.Samples {
		if s.Side != side {
			continue
		}
		if side == results.SideServer {
			if target < 0 {
				target = s.Target
			}
			if s.Target != target {
				continue
			}
		}
		ev.Rates = append(ev.Rates, s.Rates)
	}
	sum := r.Summary
	l := &Load{
		SentPPS: sum.SentPPS, ReceivedPPS: sum.ReceivedPPS, LossRatio: sum.LossRatio,
		AskedPPS: r.Spec.Rate.PPS, Local: side == results.SideClient,
	}
	l.SenderLimited = sum.LimitedBy == results.LimitSender
	if sum.SenderThreadBusy != nil {
		l.SenderBusy = *sum.SenderThreadBusy * 100
	}
	ev.Load = l
	for _, d := range r.Drops {
		if d.Side == side && d.Delta != nil && (side == results.SideClient || target < 0 || d.Target == target) {
			delta := *d.Delta
			ev.Drops = &delta
			break
		}
	}
	return ev
}
