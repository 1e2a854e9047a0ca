// Package fleet coordinates tests across many hosts: it reaches the agent
// of every sending host, has each run its flow (traffic.RunFlow) at once
// while the hosts in the middle sample their counters over the measured
// window, and puts what came back into one results.FlowSet. `bench
// --from/--to` and `run PLAN` both run through Run; the commands only say
// which flows there are and print what it returns.
package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"linerate/internal/version"
	"linerate/remote"
	"linerate/results"
	"linerate/traffic"
	"linerate/traffic/session"
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
	// Lead is how long after the go the flows' measured window opens
	// (Lead): this host and the hosts in Sample are sampled from then on.
	Lead time.Duration
	// Sampling samples this host once a second (package sample's live
	// sampler; nil: this host is not sampled).
	Sampling session.Sampling
	// PathDrops, when set, are this host's drop counters: read around the
	// window of a single flow, they go to that flow's ledger as the path's.
	PathDrops session.DropCounters
	// ReadyTimeout bounds how long the round waits for every flow to be
	// set up at the start barrier (0: ReadyTimeout).
	ReadyTimeout time.Duration
}

// Do runs the round: it reaches every sender first (one that cannot be
// reached stops the round before anything is sent), has each agent set its
// flow up and hold it at the start barrier (prepare), starts the sampling
// of the middle, lets every flow go at once and waits for all of them.
// Every connection it opened is closed when it returns. The error is for
// a round that could not start (a flow that could not be set up, or not
// in time, named); a flow that failed once started has its Error in the
// set.
func (r *Run) Do(ctx context.Context) (*results.FlowSet, error) {
	set := &results.FlowSet{Schema: results.ResultSchema, Linerate: version.Version, Time: time.Now().UTC(),
		Flows: make([]results.FlowRun, len(r.Flows))}
	conns, err := dialAll(ctx, r.Flows)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	for i := range r.Flows {
		f := &r.Flows[i]
		set.Flows[i] = results.FlowRun{From: f.Name, To: f.Run.Targets}
		if set.Spec.Proto == "" {
			set.Spec = f.Run.Spec
		}
		if f.From.Kind == remote.SSH {
			f.Run.Secret = r.Secret // the agent ssh started has none of its own
		}
	}
	pending, barrier, err := r.prepare(ctx, conns)
	if err != nil {
		return nil, err
	}
	mid, err := r.startMiddle(ctx)
	if err != nil {
		for _, p := range pending {
			p.Close()
		}
		return nil, err
	}
	path := r.watchPath()
	// One flow that fails or stops early (its receiver died) stops the
	// others: the round's figures are of one moment.
	round, stopRound := context.WithCancelCause(ctx)
	defer stopRound(nil)
	fail := func(i int, err error) {
		set.Flows[i].Error = fmt.Sprintf("%s: %v", r.Flows[i].Label, err)
		stopRound(&traffic.RoundStopped{Reason: set.Flows[i].Error, At: time.Now()})
	}
	if barrier != nil {
		barrier.Go = time.Now().UTC()
	}
	started := make([]bool, len(pending))
	for i, p := range pending {
		if err := p.Go(); err != nil {
			p.Close()
			fail(i, err)
			continue
		}
		started[i] = true
	}
	var wg sync.WaitGroup
	for i, p := range pending {
		if !started[i] {
			continue
		}
		f := &r.Flows[i]
		wg.Go(func() {
			res, err := p.Wait(round, f.OnInterval)
			set.Flows[i].Result = res
			switch {
			case err != nil:
				fail(i, err)
			case res.StoppedEarly != nil && !errors.As(context.Cause(round), new(*traffic.RoundStopped)):
				stopRound(&traffic.RoundStopped{Reason: f.Label + ": " + res.StoppedEarly.Reason, At: time.Now()})
			}
		})
	}
	wg.Wait()
	set.Barrier = barrier
	if barrier != nil && len(barrier.Without) > 0 {
		set.Notes = append(set.Notes, fmt.Sprintf("no start barrier on the agents of %s (a linerate without one): their flows started once set up, after the others'",
			strings.Join(barrier.Without, ", ")))
	}
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

// ReadyTimeout is how long a round waits, by default, for every flow to
// be set up at the start barrier. An agent holds a ready flow this long
// and holdMargin more for the go.
const (
	ReadyTimeout = 20 * time.Second
	holdMargin   = 5 * time.Second
)

// errNotReady is the cause of a round whose flows were not all set up in
// time.
var errNotReady = errors.New("not set up in time")

// prepare is the start barrier's first half: every flow's agent is asked
// at once to set its flow up and hold it, and prepare waits until each
// says it is ready, within the run's ReadyTimeout. A flow that fails, or
// is not ready in time, fails the round with an error naming it; Ctrl-C
// ends the wait; either way every flow is released (its agent, seeing its
// connection close, closes what it set up). The barrier it returns says
// which agents have none (their flows go at the go, unprepared); nil when
// a flow is a search, which no barrier holds.
func (r *Run) prepare(ctx context.Context, conns []net.Conn) ([]*traffic.PendingFlow, *results.Barrier, error) {
	wait := cmp.Or(r.ReadyTimeout, ReadyTimeout)
	hold := wait + holdMargin
	var barrier *results.Barrier
	for _, f := range r.Flows {
		if f.Run.Search != nil {
			hold = 0
		}
	}
	if hold > 0 {
		barrier = &results.Barrier{}
	}
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := time.AfterFunc(wait, func() { cancel(errNotReady) })
	defer timer.Stop()
	pending := make([]*traffic.PendingFlow, len(r.Flows))
	errs := make([]error, len(r.Flows))
	var mu sync.Mutex
	var first error // the first flow that failed on its own
	begun := time.Now()
	var wg sync.WaitGroup
	for i := range r.Flows {
		wg.Go(func() {
			p, err := traffic.PrepareFlow(pctx, conns[i], r.Secret, r.Flows[i].Run, hold)
			pending[i], errs[i] = p, err
			if err == nil || pctx.Err() != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if first == nil {
				first = fmt.Errorf("%s: %w", r.Flows[i].Label, err)
				cancel(first)
			}
		})
	}
	wg.Wait()
	var late []string
	for i, err := range errs {
		if err != nil {
			late = append(late, r.Flows[i].Label)
		}
	}
	if len(late) == 0 && ctx.Err() == nil {
		if barrier != nil {
			barrier.SetupMS = float64(time.Since(begun)) / float64(time.Millisecond)
			barrier.Used = true
			for i, p := range pending {
				if !p.Held() {
					barrier.Used = false
					barrier.Without = append(barrier.Without, r.Flows[i].Name)
				}
			}
		}
		return pending, barrier, nil
	}
	for _, p := range pending {
		if p != nil {
			p.Close()
		}
	}
	switch {
	case ctx.Err() != nil:
		return nil, nil, fmt.Errorf("interrupted while the flows were set up: %w", context.Cause(ctx))
	case first != nil:
		return nil, nil, first
	case len(late) == 1:
		return nil, nil, fmt.Errorf("%s: not set up within %s: the round did not start", late[0], wait)
	}
	return nil, nil, fmt.Errorf("%s and %d other flows: not set up within %s: the round did not start", late[0], len(late)-1, wait)
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
		delta = session.PathDrops(r.PathDrops)
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
