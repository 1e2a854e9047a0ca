package results

import "fmt"

// StoppedEarly says why a run ended before its planned end for a reason
// other than Ctrl-C: a peer died (its control connection failed, or it
// reported an error mid-run), or another flow of the same round did. The
// figures cover the measured window up to At.
type StoppedEarly struct {
	// Reason is the error that ended the run, as printed.
	Reason string `json:"reason"`
	// At is where the measured window ended, in seconds since the run's
	// start (Result.Time): the last moment both ends' figures cover.
	At float64 `json:"at"`
	// Detected is when the run noticed, in seconds since its start; the
	// senders stopped then.
	Detected float64 `json:"detected"`
}

// Problems is every error of the result, its targets' included, each
// once, and the reason it stopped early when that is not among them.
func (r *Result) Problems() []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, e := range r.Errors {
		add(e)
	}
	for _, t := range r.Targets {
		for _, e := range t.Errors {
			add(t.Target + ": " + e)
		}
	}
	if r.StoppedEarly != nil && len(out) == 0 {
		add("stopped early: " + r.StoppedEarly.Reason)
	}
	return out
}

// LossNotCounted marks a direction whose receiver died mid-run: its
// figures end at the receiver's last report, and what was on the path or
// in a socket buffer then cannot be told from what was lost, so no packet
// of it counts as lost (and the drop ledger places none of it), and a sum
// it is added to takes its loss ratio over the other packets.
func (t *Totals) LossNotCounted() {
	t.LostPackets, t.LossRatio, t.LossUnknown, t.uncounted = 0, 0, true, t.SentPackets
}

// farEndDied gives the verdict of a run whose far end died mid-run (some
// loss not counted, the run stopped early): it names what happened and
// when (the error, printed apart, says how), and draws no limit from a
// window whose far end stopped counting.
// Verdict calls it last.
func farEndDied(res *Result) {
	se := res.StoppedEarly
	if se == nil || !res.Summary.LossUnknown {
		return
	}
	res.Summary.LimitedBy = LimitUnknown
	res.Summary.LimitedWhy = fmt.Sprintf("stopped early: the far end died or failed mid-run, noticed at %.1f s (the error says how); both ends' figures end at its last report, at %.1f s, and its loss is not counted", se.Detected, se.At)
}
