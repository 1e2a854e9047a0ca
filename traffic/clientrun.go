package traffic

import (
	"sync"
	"time"

	"linerate/box"
	"linerate/traffic/session"
	"linerate/wire"
)

// clientRun is one Run: the targets and the session of the client's flows.
type clientRun struct {
	cfg      *Config
	sess     *session.Session
	targets  []*target
	spec     wire.Spec // as the first target runs it
	overhead int       // bytes per packet on the wire besides the payload (UDP)
	notes    []string
	// notCredible are the targets whose servers reported figures that
	// fail the checks of results.Doubts (assemble).
	notCredible []error

	mu         sync.Mutex
	lastSample *box.Rates // the client's latest counters, for the interval lines
}

func newClientRun(cfg *Config, clk session.Clock) *clientRun {
	r := &clientRun{cfg: cfg, sess: session.New(clk)}
	r.sess.Sampling = cfg.Sampling
	r.sess.Each = func(rt box.Rates) {
		r.mu.Lock()
		r.lastSample = &rt
		r.mu.Unlock()
	}
	// What is in flight when the client's senders end has this long to
	// arrive (and the servers' senders to end); the servers' TCP streams
	// have this long to end after their stop.
	r.sess.Settle = 300 * time.Millisecond
	r.sess.Grace = 2 * time.Second
	return r
}

// close ends the flows, then the control connections.
func (r *clientRun) close() {
	_ = r.sess.Close()
	for _, t := range r.targets {
		t.close()
	}
}

// eachTarget runs fn for every target at once and returns the first error.
func eachTarget(ts []*target, fn func(*target) error) error {
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = fn(t) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
