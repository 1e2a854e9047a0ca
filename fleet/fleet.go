// Package fleet coordinates tests across many hosts: it reaches the agent
// of every sending host, has each run its flow (traffic.RunFlow) at once
// while the hosts in the middle sample their counters over the measured
// window, and puts what came back into one results.FlowSet. `bench
// --from/--to` and `run PLAN` both run through Run; the commands only say
// which flows there are and print what it returns.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"linerate/internal/version"
	"linerate/remote"
	"linerate/results"
	"linerate/traffic"
	"linerate/wire"
)

// Flow is one flow of a run: the agent that sends, and what it runs.
type Flow struct {
	// From is the sending host's agent, reached with Options.
	From    remote.Host
	Options remote.Options
	// Name is how the result names the sender (FlowRun.From).
	Name string
	// Label prefixes this flow's error in the set ("flow 2 a → b"); Where
	// prefixes the error of a sender that cannot be reached ("" for none).
	Label, Where string
	// Run is what the agent runs: its targets, spec, engine, search.
	Run traffic.Flow
	// OnInterval, if set, gets the flow's interval lines as they come.
	OnInterval func(results.IntervalStats)
}

// Host is a host in the middle whose agent samples its counters over the
// measured window.
type Host struct {
	Name    string
	Reach   remote.Host
	Options remote.Options
}

// Run is one round of flows, all at once.
type Run struct {
	Flows []Flow
	// Sample are the hosts in the middle to sample, besides this one.
	Sample []Host
	// Secret is proved to every agent (and handed to agents reached over
	// ssh, which have none of their own).
	Secret string
	// Lead is how long after the request the flows' measured window opens
	// (Lead): this host and the hosts in Sample are sampled from then on.
	Lead time.Duration
	// Sampling samples this host once a second (package sample's live
	// sampler; nil: this host is not sampled).
	Sampling traffic.Sampling
	// PathDrops, when set, are this host's drop counters: read around the
	// window of a single flow, they go to that flow's ledger as the path's.
	PathDrops traffic.DropCounters
}

// Do runs the round: it reaches every sender first (one that cannot be
// reached stops the round before anything is sent), starts the sampling
// of the middle, runs every flow at once and waits for all of them. Every
// connection it opened is closed when it returns. The error is for a round
// that could not start; a flow that failed has its Error in the set.
func (r *Run) Do(ctx context.Context) (*results.FlowSet, error) {
	set := &results.FlowSet{Schema: results.ResultSchema, Linerate: version.Version, Time: time.Now().UTC(),
		Flows: make([]results.FlowRun, len(r.Flows))}
	conns, err := dialAll(ctx, r.Flows)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	mid, err := r.startMiddle(ctx)
	if err != nil {
		return nil, err
	}
	path := r.watchPath()
	// One flow that fails or stops early (its receiver died) stops the
	// others: the round's figures are of one moment.
	round, stopRound := context.WithCancelCause(ctx)
	defer stopRound(nil)
	var wg sync.WaitGroup
	for i := range r.Flows {
		f := &r.Flows[i]
		set.Flows[i] = results.FlowRun{From: f.Name, To: f.Run.Targets}
		if set.Spec.Proto == "" {
			set.Spec = f.Run.Spec
		}
		if f.From.Kind == remote.SSH {
			f.Run.Secret = r.Secret // the agent ssh started has none of its own
		}
		wg.Go(func() {
			res, err := traffic.RunFlow(round, conns[i], r.Secret, f.Run, f.OnInterval)
			set.Flows[i].Result = res
			switch {
			case err != nil:
				set.Flows[i].Error = fmt.Sprintf("%s: %v", f.Label, err)
				stopRound(&traffic.RoundStopped{Reason: set.Flows[i].Error, At: time.Now()})
			case res.StoppedEarly != nil && !errors.As(context.Cause(round), new(*traffic.RoundStopped)):
				stopRound(&traffic.RoundStopped{Reason: f.Label + ": " + res.StoppedEarly.Reason, At: time.Now()})
			}
		})
	}
	wg.Wait()
	if d, ok := startSpread(set); ok {
		ms := float64(d) / float64(time.Millisecond)
		set.StartSpreadMS = &ms
	}
	if d := path(); d != nil && set.Flows[0].Result != nil {
		set.Flows[0].Result.AddPathDrops(*d)
	}
	mid.finish(ctx, set)
	return set, nil
}

// Failed is the error of a set whose flows failed: every one, or how many
// of them with the first error; nil when none did. A flow failed when it
// has an error, or its result carries one (a target's included) or
// stopped early.
func Failed(set *results.FlowSet) error {
	var first string
	n := 0
	for _, f := range set.Flows {
		errs := []string{f.Error}
		if f.Error == "" && f.Result != nil {
			errs = f.Result.Problems()
		}
		if len(errs) == 0 || errs[0] == "" {
			continue
		}
		if n == 0 {
			first = errs[0]
		}
		n++
	}
	switch {
	case n == 0:
		return nil
	case n == len(set.Flows):
		return fmt.Errorf("every flow failed: %s", first)
	}
	return fmt.Errorf("%d of %d flows failed: %s", n, len(set.Flows), first)
}

// dialAll reaches the agent of every flow's sender, or none.
func dialAll(ctx context.Context, flows []Flow) ([]net.Conn, error) {
	conns := make([]net.Conn, 0, len(flows))
	for _, f := range flows {
		c, err := remote.Dial(ctx, f.From, f.Options)
		if err != nil {
			closeAll(conns)
			if f.Where != "" {
				err = fmt.Errorf("%s: %w", f.Where, err)
			}
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// watchPath snapshots this host's drop counters a little before the
// measured window of a single flow opens; the returned function gives
// their delta since then (nil when there is none).
func (r *Run) watchPath() func() *results.EndDrops {
	if r.PathDrops == nil || len(r.Flows) != 1 || r.Flows[0].Run.Search != nil || r.Flows[0].Run.Spec.Proto != wire.UDP {
		return func() *results.EndDrops { return nil }
	}
	var mu sync.Mutex
	var delta func() results.EndDrops
	// A wider window only adds what the ledger calls excess.
	t := time.AfterFunc(max(r.Lead-100*time.Millisecond, 0), func() {
		mu.Lock()
		defer mu.Unlock()
		delta = traffic.PathDrops(r.PathDrops)
	})
	return func() *results.EndDrops {
		t.Stop()
		mu.Lock()
		defer mu.Unlock()
		if delta == nil {
			return nil
		}
		d := delta()
		return &d
	}
}

// Lead is how long after a flow's request its measured window opens: the
// idle latency probes (when the spec has probes) and the warmup.
func Lead(sp wire.Spec, idle time.Duration) time.Duration {
	if sp.ProbeInterval > 0 {
		return idle + sp.Warmup.D()
	}
	return sp.Warmup.D()
}

// startSpread is how far apart the measured windows of set's flows opened:
// each window starts at its result's start plus its warmup, by the
// sending agent's clock. ok is false with fewer than two flows that have a
// result.
func startSpread(set *results.FlowSet) (spread time.Duration, ok bool) {
	var first, last time.Time
	n := 0
	for _, f := range set.Flows {
		if f.Result == nil || f.Result.Time.IsZero() {
			continue
		}
		at := f.Result.Time.Add(f.Result.Spec.Warmup.D())
		if n == 0 || at.Before(first) {
			first = at
		}
		if n == 0 || at.After(last) {
			last = at
		}
		n++
	}
	return last.Sub(first), n >= 2
}
