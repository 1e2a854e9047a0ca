package traffic

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"linerate/internal/usage"
	"linerate/results"
	"linerate/traffic/rr"
	"linerate/traffic/session"
	"linerate/traffic/tcp"
	"linerate/wire"
)

// check fills in the defaults and checks what can be checked before any
// connection: it returns the test to ask every target for (its UDP payload
// and client ports are filled in per target) and the UDP send engine.
func (c *Config) check() (wire.Spec, *udpEngine, error) {
	if len(c.Targets) == 0 {
		return wire.Spec{}, nil, usage.Field("Targets", "is missing: give HOST")
	}
	if c.Spec.RR != nil {
		return c.checkRR()
	}
	eng, err := engineNamed(c.Engine)
	if err != nil {
		return wire.Spec{}, nil, err
	}
	if eng == autoEngine && (c.Spec.Proto != wire.UDP || !c.Spec.ClientSends()) {
		// Nothing for auto to choose: the client sends no UDP. The
		// result names the default, as it always did.
		eng = socketEngine
	}
	c.Engine = eng.name
	sp := c.Spec
	if err := c.mixSpec(&sp, true); err != nil {
		return wire.Spec{}, nil, err
	}
	if err := eng.fits(&sp); err != nil {
		return wire.Spec{}, nil, err
	}
	if sp.Proto == wire.UDP && c.FrameSize == 0 && sp.Payload == 0 {
		c.FrameSize = wire.MinFrameSize
	}
	if sp.Proto == wire.UDP && c.FrameSize > 0 {
		sp.Payload = max(c.FrameSize-wire.UDPOverhead(true), wire.HeaderLen) // checked per target
	}
	if sp.Proto == wire.UDP && len(sp.ClientPorts) == 0 && sp.ServerSends() {
		sp.ClientPorts = make([]uint16, sp.Ports) // filled per target
	}
	if err := sp.Check(); err != nil {
		return wire.Spec{}, nil, usage.Wrap(err)
	}
	if err := c.setup(func() error { return tcp.CheckCongestion(sp.Congestion) }); err != nil {
		return wire.Spec{}, nil, err
	}
	sp.ClientPorts = nil
	return sp, eng, nil
}

// Run runs one test against every target at once and returns its result.
// When ctx ends mid-run (Ctrl-C) the senders stop, the servers are told,
// and the partial result comes back with Interrupted set and a nil error.
// A result may come back with an error too: what could be counted before
// a server failed.
func Run(ctx context.Context, cfg Config) (*results.Result, error) {
	sp, eng, err := cfg.check()
	if err != nil {
		return nil, err
	}
	r := newClientRun(&cfg, session.RealClock{})
	defer r.close()
	if err := r.connect(ctx, sp); err != nil {
		return nil, err
	}
	if err := r.open(eng); err != nil {
		return nil, err
	}
	var locals []netip.Addr
	for _, t := range r.targets {
		locals = append(locals, t.local)
	}
	r.sess.Drops = session.NewDropWindow(cfg.Drops, nil, results.SideClient, -1, locals, r.cfg.setup)
	r.sess.Links = session.NewLinkWatch(results.SideClient, r.sess.Clock(), locals, r.cfg.setup)
	if cfg.Ready != nil {
		if err := cfg.Ready(); err != nil {
			return nil, err
		}
	}
	return r.run(ctx)
}

// connect resolves, connects and prepares every target.
func (r *clientRun) connect(ctx context.Context, sp wire.Spec) error {
	for i, s := range r.cfg.Targets {
		a, err := resolve(ctx, s)
		if err != nil {
			return err
		}
		r.targets = append(r.targets, &target{idx: i, name: s, addr: a, resultCh: make(chan error, 1), filed: make(chan struct{}, 1)})
	}
	if err := eachTarget(r.targets, func(t *target) error { return t.connect(ctx, r.cfg) }); err != nil {
		return err
	}
	for _, t := range r.targets {
		if err := t.prepare(r, sp); err != nil {
			return err
		}
	}
	r.spec = r.targets[0].spec
	r.overhead = wire.UDPOverhead(r.targets[0].addr.Addr().Is4())
	if r.spec.Proto == wire.TCP {
		r.overhead = 0
	}
	return nil
}

// open makes the client's senders (and TCP receivers) for every target,
// UDP ones with eng.
func (r *clientRun) open(eng *udpEngine) error {
	if r.spec.RR != nil {
		for _, t := range r.targets {
			if err := t.openRR(r); err != nil {
				return err
			}
		}
	} else if r.spec.Proto == wire.TCP {
		for _, t := range r.targets {
			if err := t.openTCP(r); err != nil {
				return err
			}
		}
	} else {
		var to []*target
		for _, t := range r.targets {
			if t.spec.ClientSends() {
				to = append(to, t)
			}
		}
		if len(to) > 0 {
			if err := eng.open(r, to); err != nil {
				return err
			}
		}
	}
	// After opening: an engine may add notes of its own.
	for _, t := range r.targets {
		r.notes = append(r.notes, prefixed(t.name, t.acc.Notes)...)
	}
	return nil
}

func prefixed(p string, lines []string) []string {
	var out []string
	for _, l := range lines {
		out = append(out, p+": "+l)
	}
	return out
}

// run runs the test: idle probes, start, interval lines until the senders
// are done (or ctx ends), stop, result.
func (r *clientRun) run(ctx context.Context) (*results.Result, error) {
	if err := r.idle(ctx); err != nil {
		return nil, err
	}
	if err := r.startServers(); err != nil {
		return nil, err
	}
	tm := r.sess.Start(r.spec.Warmup.D(), r.spec.Duration.D())
	for _, t := range r.targets {
		// A server that fails mid-run ends the run for every target: the
		// window ends at its last report, what both ends counted.
		go t.readLoop(tm.End.Add(stopGrace+10*time.Second), func(lastT float64, err error) {
			r.sess.Halt(tm.Start.Add(time.Duration(lastT*float64(time.Second))), err)
		})
	}
	res := r.newResult(tm.Start)
	prev := r.sess.Progress(tm.Start)
	early := r.sess.Run(ctx, r.sess.Over(), func(now time.Time) {
		r.interval(res, now, &prev)
	})
	var errs []error
	r.sess.Stop(early, func() { errs = r.stopServers() })
	res.Interrupted = early && ctx.Err() != nil
	if herr, _, seen := r.sess.HaltedBy(); early && herr != nil {
		res.StoppedEarly = &results.StoppedEarly{Reason: herr.Error(),
			At: r.sess.WindowEnd().Sub(tm.Start).Seconds(), Detected: seen.Sub(tm.Start).Seconds()}
	}
	r.assemble(res)
	errs = append(errs, r.sess.Errs()...)
	errs = append(errs, r.notCredible...)
	for _, e := range errs {
		res.Errors = append(res.Errors, e.Error())
	}
	return res, errors.Join(errs...)
}

// idle starts the latency probes and lets them run, before any load, for
// Config.Idle.
func (r *clientRun) idle(ctx context.Context) error {
	if r.spec.ProbeInterval <= 0 {
		return nil
	}
	for _, t := range r.targets {
		if t.acc.ProbePort == 0 {
			continue
		}
		err := r.cfg.setup(func() error {
			var err error
			t.prober, err = rr.NewProber(t.local, netip.AddrPortFrom(t.addr.Addr(), t.acc.ProbePort), r.spec.ProbeInterval.D(), r.cfg.RRUL)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: latency probes: %w", t.name, err)
		}
		r.sess.Add(session.Receiving, t.name, t.prober)
	}
	if r.cfg.Idle > 0 {
		select {
		case <-r.sess.Clock().After(r.cfg.Idle):
		case <-ctx.Done():
		}
	}
	for _, t := range r.targets {
		if t.prober != nil {
			t.prober.SetPhase(rr.PhaseLoad)
		}
	}
	return nil
}

// startServers starts every server's clock and waits until each runs.
func (r *clientRun) startServers() error {
	if err := eachTarget(r.targets, func(t *target) error { return t.ctl.write(&Message{Type: wire.MsgStart}) }); err != nil {
		return err
	}
	return eachTarget(r.targets, func(t *target) error {
		if _, err := t.ctl.expect(startTimeout, wire.MsgRunning); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		return nil
	})
}

// interval adds one interval line: what the client counted over the last
// second, and what the servers counted over their latest second.
func (r *clientRun) interval(res *results.Result, now time.Time, prev *session.Progress) {
	tm := r.sess.Timing()
	cur := r.sess.Progress(now)
	dt := cur.T.Sub(prev.T).Seconds()
	// An interval is warmup when any of it is.
	iv := results.IntervalStats{T: now.Sub(tm.Start).Seconds(), Warmup: prev.T.Before(tm.Measure)}
	r.awaitReports(len(res.Intervals) + 1)
	if dt > 0 {
		var srv [4]float64
		for _, t := range r.targets {
			rt, ok := t.rates()
			// No report of this second: the side the server counts is
			// unknown (what it sends, what it receives).
			iv.SentUnknown = iv.SentUnknown || !ok && t.spec.ServerSends()
			iv.ReceivedUnknown = iv.ReceivedUnknown || !ok && t.spec.ClientSends()
			for i := range srv {
				srv[i] += rt[i]
			}
		}
		sp := srv[0] + perSecond(cur.SentPkts, prev.SentPkts, dt)
		sb := srv[1] + perSecond(cur.SentBytes, prev.SentBytes, dt)
		rp := srv[2] + perSecond(cur.RecvPkts, prev.RecvPkts, dt)
		rb := srv[3] + perSecond(cur.RecvBytes, prev.RecvBytes, dt)
		iv.SentPPS, iv.ReceivedPPS = sp, rp
		iv.SentBPS = (sb + sp*float64(r.overhead)) * 8
		iv.ReceivedBPS = (rb + rp*float64(r.overhead)) * 8
		iv.ClearUnknown()
		if r.spec.RR != nil {
			iv.TPS = perSecond(cur.SentPkts, prev.SentPkts, dt)
		}
	}
	r.mu.Lock()
	if r.lastSample != nil {
		iv.CPU = r.lastSample.CPU
	}
	r.mu.Unlock()
	*prev = cur
	res.Intervals = append(res.Intervals, iv)
	if r.cfg.OnInterval != nil {
		r.cfg.OnInterval(iv)
	}
}

// reportWait bounds how long an interval line waits for the servers'
// reports of the same second: each server started its clock just before
// the client did, so its report of a second is normally on its way when
// the client's second ends.
const reportWait = 300 * time.Millisecond

// awaitReports waits, at most reportWait, until every server filed its
// n-th interval report, so that a line adds up the same second on both
// ends (the first line would otherwise miss the servers' counts).
func (r *clientRun) awaitReports(n int) {
	var timeout <-chan time.Time
	for _, t := range r.targets {
		for !t.hasReports(n) {
			if timeout == nil {
				timeout = r.sess.Clock().After(reportWait)
			}
			select {
			case <-t.filed:
			case <-timeout:
				return
			}
		}
	}
}

// stopServers tells each server, once the client's senders are done, what
// the client sent it, and waits for its result.
func (r *clientRun) stopServers() []error {
	var errs, writeErrs []error
	for _, t := range r.targets {
		t.sent = gather(t.fwd)
		if t.dead() {
			continue // its error is on resultCh already
		}
		if err := t.ctl.write(&Message{Type: wire.MsgStop, Sent: t.sent}); err != nil {
			writeErrs = append(writeErrs, fmt.Errorf("%s: %w", t.name, err))
		}
	}
	for _, t := range r.targets {
		select {
		case err := <-t.resultCh:
			if err != nil {
				errs = append(errs, err)
			}
		case <-time.After(stopGrace):
			errs = append(errs, fmt.Errorf("%s: no result from the server", t.name))
		}
	}
	return append(errs, writeErrs...)
}

// checkRR checks a transaction test before any connection; it has no send
// engine to choose (the result names the socket engine).
func (c *Config) checkRR() (wire.Spec, *udpEngine, error) {
	sp := c.Spec
	rr := *sp.RR
	if rr.Timeout == 0 {
		rr.Timeout = wire.Seconds(wire.DefaultRRTimeout)
	}
	sp.RR = &rr
	if eng, err := engineNamed(c.Engine); err != nil || eng != socketEngine && eng != autoEngine {
		return wire.Spec{}, nil, usage.Field("Engine", "%s: a transaction test sends with sockets", c.Engine)
	}
	c.Engine = socketEngine.name
	if err := sp.Check(); err != nil {
		return wire.Spec{}, nil, usage.Wrap(err)
	}
	if err := c.setup(func() error { return tcp.CheckCongestion(sp.Congestion) }); err != nil {
		return wire.Spec{}, nil, err
	}
	return sp, socketEngine, nil
}
