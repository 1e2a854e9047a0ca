package fleet

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"linerate/box"
	"linerate/remote"
	"linerate/results"
	"linerate/traffic"
	"linerate/traffic/session"
)

// middle samples the hosts in the middle of a set of flows while they run:
// this host, and the agents of the hosts named to sample.
type middle struct {
	self   func() ([]box.Rates, error)
	others func() ([]results.Sample, []string)
}

// startMiddle starts sampling the hosts in the middle after the lead (the
// flows' idle probes and warmup), so that their seconds are the measured
// window's: this host, and the agents of the others (reached now, asked to
// sample when the window opens).
func (r *Run) startMiddle(ctx context.Context) (*middle, error) {
	others, err := SampleHosts(ctx, r.Sample, r.Secret, r.Lead)
	if err != nil {
		return nil, err
	}
	return &middle{self: sampleAfter(r.Sampling, r.Lead), others: others}, nil
}

// sampleAfter samples this host once a second from lead on; the returned
// stop gives what was sampled (nothing, when it stops before lead or there
// is no sampler).
func sampleAfter(sampling session.Sampling, lead time.Duration) func() ([]box.Rates, error) {
	if sampling == nil {
		return func() ([]box.Rates, error) { return nil, nil }
	}
	var mu sync.Mutex
	var stop func() ([]box.Rates, error)
	over := false
	t := time.AfterFunc(lead, func() {
		mu.Lock()
		defer mu.Unlock()
		if !over {
			stop = sampling(nil)
		}
	})
	return func() ([]box.Rates, error) {
		t.Stop()
		mu.Lock()
		defer mu.Unlock()
		over = true
		if stop == nil {
			return nil, nil
		}
		return stop()
	}
}

// finish stops the sampling and completes set: the samples (side dut),
// notes on what could not be sampled, the total.
func (m *middle) finish(ctx context.Context, set *results.FlowSet) {
	rates, err := m.self()
	for _, r := range rates {
		set.Samples = append(set.Samples, results.Sample{Side: results.SideDUT, Target: -1, Rates: r})
	}
	if err != nil {
		set.Notes = append(set.Notes, "this host's counters: "+err.Error())
	}
	got, notes := m.others()
	set.Samples, set.Notes = append(set.Samples, got...), append(set.Notes, notes...)
	set.Sum()
	set.Interrupted = set.Interrupted || ctx.Err() != nil
}

// SampleHosts asks each host's agent to sample its counters until the
// returned stop, which gives their samples (side dut, Host its name) and
// a note for each host whose samples could not be had.
func SampleHosts(ctx context.Context, hosts []Host, secret string, lead time.Duration) (stop func() ([]results.Sample, []string), err error) {
	type agent struct {
		name string
		s    *traffic.AgentSampler
	}
	var agents []agent
	stop = func() ([]results.Sample, []string) {
		var out []results.Sample
		var notes []string
		for _, a := range agents {
			rates, err := a.s.Stop()
			for _, r := range rates {
				out = append(out, results.Sample{Side: results.SideDUT, Target: -1, Host: a.name, Rates: r})
			}
			if err != nil {
				notes = append(notes, fmt.Sprintf("samples of %s: %v", a.name, err))
			}
		}
		return out, notes
	}
	for _, h := range hosts {
		c, err := remoteDial(ctx, h)
		if err != nil {
			stop()
			return nil, err
		}
		s, err := traffic.StartSampling(c, secret, lead)
		if err != nil {
			stop()
			return nil, fmt.Errorf("sample %s: %w", h.Name, err)
		}
		agents = append(agents, agent{h.Name, s})
	}
	return stop, nil
}

func remoteDial(ctx context.Context, h Host) (net.Conn, error) {
	return remote.Dial(ctx, h.Reach, h.Options)
}
