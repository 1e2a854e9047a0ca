package traffic

import (
	"linerate/box"
	"linerate/results"
)

// dropLedger gathers both ends' drop counters into the result and, for a
// UDP test, builds the drop ledger: where the lost datagrams died.
func (r *clientRun) dropLedger(res *results.Result) {
	client := r.sess.drops.result(r.sess.refused())
	if client != nil {
		res.Drops = append(res.Drops, *client)
	}
	for i, t := range r.targets {
		sr, _, _ := t.serverResult()
		if sr.Drops != nil {
			d := *sr.Drops
			d.Target = i
			res.Drops = append(res.Drops, d)
		}
	}
	res.BuildLedger(len(r.targets) > 1, true)
}

// PathDrops snapshots the drop counters of a device in the middle (this
// host, when it runs third-party flows) now; the returned function
// snapshots them again and gives the difference, over every interface.
func PathDrops(r DropCounters) func() results.EndDrops {
	before, err := r.Drops()
	return func() results.EndDrops {
		out := results.EndDrops{Side: results.SideDUT, Target: -1}
		if err != nil {
			out.Error = err.Error()
			return out
		}
		after, err := r.Drops()
		if err != nil {
			out.Error = err.Error()
			return out
		}
		d := box.DropDelta(before, after)
		out.Delta = &d
		return out
	}
}
