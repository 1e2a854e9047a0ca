package traffic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"linerate/ceiling"
	"linerate/results"
	"linerate/wire"
)

// checkFlow decides whether this agent runs f, and returns its targets as
// addresses (resolved here once, so what was checked is what is reached).
func (s *Server) checkFlow(f *Flow, channel bool) ([]string, error) {
	switch {
	case f.Secret != "" && !channel:
		return nil, fmt.Errorf("%w: a secret sent over a plain control connection: only an agent reached over ssh takes one", wire.ErrFlowRefused)
	case channel:
		// The controller logged in over ssh to start this agent.
	case s.Token == "" && len(s.Allow) == 0:
		return nil, fmt.Errorf("%w: this agent has no secret to trust a controller by: third-party flows need serve --token (or --allow naming where it may send)", wire.ErrFlowRefused)
	}
	if len(f.Targets) == 0 {
		return nil, fmt.Errorf("%w: no target", wire.ErrFlowRefused)
	}
	out := make([]string, len(f.Targets))
	for i, t := range f.Targets {
		host, port, err := net.SplitHostPort(t)
		if err != nil {
			host, port = t, strconv.Itoa(wire.DefaultPort)
		}
		var addr netip.Addr
		err = s.setup(func() error {
			ips, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
			if err != nil || len(ips) == 0 {
				return fmt.Errorf("%w: target %q: not resolved here: %v", wire.ErrFlowRefused, t, err)
			}
			addr = ips[0].Unmap()
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(s.Allow) > 0 && !inPrefixes(s.Allow, addr) {
			return nil, fmt.Errorf("%w: target %s (%s) is outside this agent's --allow %s", wire.ErrFlowRefused, t, addr, prefixes(s.Allow))
		}
		out[i] = net.JoinHostPort(addr.String(), port)
	}
	return out, nil
}

func inPrefixes(allow []netip.Prefix, a netip.Addr) bool {
	for _, p := range allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func prefixes(ps []netip.Prefix) string {
	s := ""
	for i, p := range ps {
		if i > 0 {
			s += ","
		}
		s += p.String()
	}
	return s
}

// flow runs a third-party flow on this agent and reports it on c; the
// connection ends with it. The controller's stop message, or its
// connection closing, stops the flow early: its partial result is sent.
func (s *Server) flow(ctx context.Context, c *ctl, f *Flow, channel bool) error {
	if f == nil {
		return fmt.Errorf("%w: flow without a spec", wire.ErrProtocol)
	}
	targets, err := s.checkFlow(f, channel)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hold := f.hold()
	start := make(chan struct{})
	go func() {
		// A held flow's start lets it go; whatever else comes (stop, or
		// the connection closing) ends the flow.
		wait := f.wait() + flowGrace
		if f.Search != nil {
			wait = channelIdle // a search's trials are many
		}
		started := false
		for {
			m, err := c.read(wait)
			if err == nil && m.Type == wire.MsgStart && hold > 0 && !started {
				close(start)
				started = true
				continue
			}
			cancel()
			return
		}
	}()
	var mu sync.Mutex
	var mix ceiling.Mix
	if f.Mix != nil {
		mix = *f.Mix
	}
	cfg := Config{Mix: mix, Targets: targets, Spec: f.Spec, FrameSize: f.FrameSize, Engine: f.Engine, Idle: f.Idle.D(),
		Token: cmp.Or(s.Token, f.Secret), CPUs: s.CPUs, Sampling: s.Sampling, Setup: s.Setup, Drops: s.Drops, Machine: s.Machine,
		OnInterval: func(iv results.IntervalStats) {
			mu.Lock()
			defer mu.Unlock()
			_ = c.write(&Message{Type: wire.MsgFlowInterval, FlowInterval: &iv})
		}}
	if hold > 0 {
		cfg.Ready = func() error {
			err := s.holdFlow(ctx, c, &mu, start, hold)
			if err != nil {
				s.logf("third-party flow to %v: %v", targets, err)
			}
			return err
		}
	}
	s.logf("third-party flow: %s %s to %v", f.Spec.Proto, f.Spec.Direction, targets)
	var res *results.Result
	var runErr error
	if f.Search != nil {
		sc := *f.Search
		sc.Progress = func(line string) {
			mu.Lock()
			defer mu.Unlock()
			_ = c.write(&Message{Type: wire.MsgFlowProgress, Progress: line})
		}
		cfg.OnInterval = nil
		res, runErr = RunSearch(ctx, cfg, sc)
	} else {
		res, runErr = Run(ctx, cfg)
	}
	mu.Lock()
	defer mu.Unlock()
	if res == nil {
		if runErr == nil {
			runErr = errors.New("the flow gave no result")
		}
		return c.write(&Message{Type: wire.MsgError, Code: wire.CodeOf(runErr), Error: runErr.Error()})
	}
	if runErr != nil && len(res.Errors) == 0 {
		// Run puts its errors in the result; only one it did not goes in.
		res.Errors = append(res.Errors, runErr.Error())
	}
	return c.write(&Message{Type: wire.MsgFlowResult, FlowResult: res})
}

// holdFlow is a held flow's start barrier on the agent: it says the flow
// is ready and waits for the controller's start (closing start), at most
// hold. ctx ending (a stop, the controller gone) releases the flow.
func (s *Server) holdFlow(ctx context.Context, c *ctl, mu *sync.Mutex, start <-chan struct{}, hold time.Duration) error {
	mu.Lock()
	err := c.write(&Message{Type: wire.MsgFlowReady})
	mu.Unlock()
	if err != nil {
		return err
	}
	s.logf("third-party flow: set up, held for the start")
	t := time.NewTimer(hold)
	defer t.Stop()
	select {
	case <-start:
		return nil
	case <-ctx.Done():
		return errors.New("released at the start barrier: the controller stopped the flow before its start")
	case <-t.C:
		return fmt.Errorf("no start from the controller within %s of ready", hold)
	}
}

// sampleMax bounds how long an agent samples for a controller that never
// says stop, when the agent caps no test's duration.
const sampleMax = time.Hour

// sampleFor records this agent's counters once a second for a controller
// (bench --sample, a plan's sample:) until it says stop, its connection
// closes, or the agent's longest test has passed; then sends them. The
// connection ends with it.
func (s *Server) sampleFor(ctx context.Context, c *ctl) error {
	if s.Sampling == nil {
		return c.write(errorMessage(fmt.Errorf("%w: this agent samples nothing", wire.ErrTestRefused)))
	}
	limit := sampleMax
	if d := s.Limits.MaxDuration.D(); d > 0 {
		limit = d + flowGrace
	}
	stop := s.Sampling(nil)
	if err := c.write(&Message{Type: wire.MsgRunning}); err != nil {
		stop()
		return err
	}
	done := make(chan struct{})
	go func() {
		_, _ = c.read(limit)
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(limit):
	}
	rates, err := stop()
	m := &Message{Type: wire.MsgSamples, Samples: rates}
	if err != nil {
		m.Error = err.Error()
	}
	return c.write(m)
}
