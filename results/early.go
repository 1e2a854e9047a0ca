package results

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
