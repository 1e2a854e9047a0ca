package traffic

import (
	"linerate/results"
)

// dropLedger gathers both ends' drop counters into the result and, for a
// UDP test, builds the drop ledger: where the lost datagrams died.
func (r *clientRun) dropLedger(res *results.Result) {
	client := r.sess.Drops.Result(r.sess.Refused())
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
