package traffic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"linerate/box"
	"linerate/ceiling"
	"linerate/results"
	"linerate/wire"
)

// A third-party flow: a controller asks an agent (a Server) to run a test
// as the client, against other agents. The agent checks where it is asked
// to send (Server.checkFlow), runs Run with its own secret, streams the
// interval lines back and ends with the whole Result. docs/agents.md has
// the trust model.

// Flow is what a controller asks an agent to run.
type Flow struct {
	// Targets are the agents to test against, as the agent itself reaches
	// them: HOST[:PORT] (names resolve on the agent).
	Targets []string  `json:"targets"`
	Spec    wire.Spec `json:"spec"`
	// FrameSize is the UDP frame size (--size); Engine the UDP send engine.
	FrameSize int    `json:"frame_size,omitempty"`
	Engine    string `json:"engine,omitempty"`
	// Mix, when set, is the flow's mix of UDP frame sizes (--size imix),
	// sent only to an agent that lists wire.FeatureMix.
	Mix *ceiling.Mix `json:"mix,omitempty"`
	// Idle is how long latency probes run before the load.
	Idle wire.Seconds `json:"idle,omitempty"`
	// Secret is the secret to prove to the targets, sent only to an agent
	// reached over ssh (serve --stdio): the ssh channel authenticated the
	// controller and encrypts the secret; such an agent has no secret of
	// its own. An agent on a plain connection refuses a flow that carries
	// one.
	Secret string `json:"secret,omitempty"`
	// Search, when set, makes the flow a zero-loss search (bench --search)
	// instead of one test; the agent sends a progress line per trial.
	Search *SearchConfig `json:"search,omitempty"`
	// Barrier, when set, holds the flow at a start barrier: the agent sets
	// it up (every target reached and accepting, the flows open), says
	// flow-ready and waits for the controller's start, at most this long
	// (and at most maxHold), before sending anything. Only for an agent
	// that lists wire.FeatureStartBarrier; one test, not a search.
	Barrier wire.Seconds `json:"barrier,omitempty"`
	// Progress gets the search's progress lines on the controller.
	Progress func(line string) `json:"-"`
}

// maxHold bounds how long an agent holds a flow at the start barrier: its
// targets wait startTimeout from their accept for the start.
const maxHold = startTimeout - 5*time.Second

// hold is how long the agent holds f at the start barrier (0: no barrier).
func (f *Flow) hold() time.Duration {
	if f.Search != nil {
		return 0
	}
	return min(max(f.Barrier.D(), 0), maxHold)
}

// wait is how long either end waits for the other's next message: a
// test's length, or a search trial's.
func (f *Flow) wait() time.Duration {
	if f.Search != nil {
		return 2*f.Search.Trial + flowGrace
	}
	return (f.Spec.Warmup + f.Spec.Duration + f.Idle).D() + f.hold() + flowGrace
}

// flowGrace is how long past a flow's own length the controller waits for
// its result.
const flowGrace = 30 * time.Second

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
		if len(s.Allow) > 0 && !allowed(s.Allow, addr) {
			return nil, fmt.Errorf("%w: target %s (%s) is outside this agent's --allow %s", wire.ErrFlowRefused, t, addr, prefixes(s.Allow))
		}
		out[i] = net.JoinHostPort(addr.String(), port)
	}
	return out, nil
}

func allowed(allow []netip.Prefix, a netip.Addr) bool {
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
		res, runErr = Search(ctx, cfg, sc)
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

// RunFlow asks the agent at the other end of conn to run f (a third-party
// flow) and returns its result. onInterval, if not nil, gets each interval
// line as the agent sends it. When ctx ends the agent is told to stop, and
// its partial result is returned. conn is closed on return.
func RunFlow(ctx context.Context, conn net.Conn, secret string, f Flow, onInterval func(results.IntervalStats)) (*results.Result, error) {
	p, err := PrepareFlow(ctx, conn, secret, f, 0)
	if err != nil {
		return nil, err
	}
	if err := p.Go(); err != nil {
		p.Close()
		return nil, err
	}
	return p.Wait(ctx, onInterval)
}

// PendingFlow is a third-party flow asked of its agent and not started
// yet: set up and held at the start barrier (Held), or, with an agent
// that has no barrier, not yet sent.
type PendingFlow struct {
	c    *ctl
	conn net.Conn
	f    Flow
	held bool
}

// PrepareFlow greets the agent at the other end of conn. With hold set, f
// one test and an agent that has the start barrier
// (wire.FeatureStartBarrier), it asks the agent to set f up and waits
// until the agent says it is ready: every target reached, every socket
// and engine open; the agent then holds the flow until Go, at most hold.
// An agent without the barrier (or hold 0) is only greeted: f goes at Go,
// and the agent starts it as soon as it is set up. ctx ending closes conn
// and ends the wait; on an error conn is closed.
func PrepareFlow(ctx context.Context, conn net.Conn, secret string, f Flow, hold time.Duration) (*PendingFlow, error) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	p := &PendingFlow{conn: conn, f: f}
	fail := func(err error) (*PendingFlow, error) {
		conn.Close()
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return nil, err
	}
	w, err := Greet(conn, secret, authTimeout+helloTimeout)
	if err != nil {
		return fail(err)
	}
	p.c = newCtl(conn)
	p.f.Barrier = 0
	if f.Mix != nil && !slices.Contains(w.Features, wire.FeatureMix) {
		return fail(fmt.Errorf("%w: the agent (linerate %s) does not send a mix of frame sizes (%s): upgrade it, or run the mix from this host",
			wire.ErrFlowRefused, cmp.Or(w.Linerate, "older"), f.Mix.Name))
	}
	if hold <= 0 || f.Search != nil || !slices.Contains(w.Features, wire.FeatureStartBarrier) {
		return p, nil
	}
	p.f.Barrier = wire.Seconds(hold)
	p.held = true
	if err := p.c.write(&Message{Type: wire.MsgFlow, Flow: &p.f}); err != nil {
		return fail(err)
	}
	if _, err := p.c.expect(hold, wire.MsgFlowReady); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			err = fmt.Errorf("not set up within %s", hold)
		}
		return fail(err)
	}
	if ctx.Err() != nil {
		return fail(ctx.Err())
	}
	return p, nil
}

// Held says the agent set the flow up and holds it at the start barrier.
func (p *PendingFlow) Held() bool { return p.held }

// Go starts the flow: the start to an agent that holds it, the flow
// itself to one without the barrier.
func (p *PendingFlow) Go() error {
	if p.held {
		return p.c.write(&Message{Type: wire.MsgStart})
	}
	return p.c.write(&Message{Type: wire.MsgFlow, Flow: &p.f})
}

// Close releases a flow that will not start: the agent, seeing its
// connection end, closes everything it set up.
func (p *PendingFlow) Close() { p.conn.Close() }

// Wait reads the started flow's interval lines (to onInterval, if not
// nil) and returns its result. When ctx ends the agent is told to stop,
// and its partial result is returned. The connection is closed on
// return.
func (p *PendingFlow) Wait(ctx context.Context, onInterval func(results.IntervalStats)) (*results.Result, error) {
	defer p.conn.Close()
	c, f := p.c, p.f
	stop := context.AfterFunc(ctx, func() { _ = c.write(&Message{Type: wire.MsgStop}) })
	defer stop()
	deadline := time.Now().Add(f.wait())
	for {
		m, err := c.read(time.Until(deadline))
		if err != nil {
			return nil, err
		}
		switch m.Type {
		case wire.MsgFlowProgress:
			// A search: each trial's line moves the deadline on.
			deadline = time.Now().Add(f.wait())
			if f.Progress != nil {
				f.Progress(m.Progress)
			}
		case wire.MsgFlowInterval:
			if m.FlowInterval != nil && onInterval != nil {
				onInterval(*m.FlowInterval)
			}
		case wire.MsgFlowResult:
			if m.FlowResult == nil {
				return nil, fmt.Errorf("%w: flow result without a result", wire.ErrProtocol)
			}
			if ctx.Err() != nil {
				stoppedBy(ctx, m.FlowResult)
			}
			return m.FlowResult, nil
		case wire.MsgError:
			return nil, peerError(m)
		default:
			return nil, fmt.Errorf("%w: unexpected %q during a flow", wire.ErrProtocol, m.Type)
		}
	}
}

// RoundStopped is the cause a round of flows' context is cancelled with
// (context.WithCancelCause) when one of its flows stopped early or
// failed: RunFlow marks the others stopped early with its reason, not
// interrupted (that is Ctrl-C's).
type RoundStopped struct {
	Reason string
	At     time.Time
}

func (e *RoundStopped) Error() string { return "another flow stopped: " + e.Reason }

// stoppedBy marks res, a flow's result that ended because ctx did, as
// stopped early by its round, or interrupted.
func stoppedBy(ctx context.Context, res *results.Result) {
	var rs *RoundStopped
	if !errors.As(context.Cause(ctx), &rs) {
		res.Interrupted = true
		return
	}
	at := rs.At.Sub(res.Time).Seconds()
	res.Interrupted = false
	res.StoppedEarly = &results.StoppedEarly{Reason: rs.Error(), At: at, Detected: at}
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

// AgentSampler is an agent recording its counters for this controller.
type AgentSampler struct {
	c     *ctl
	conn  net.Conn
	timer *time.Timer
	mu    sync.Mutex
	// started: the sample request went out and the agent said running;
	// over: Stop was called (a request not yet sent is not sent).
	started, over bool
	err           error
}

// StartSampling greets the agent at the other end of conn now (an agent
// that cannot be reached or refuses the secret is an error at once) and
// asks it to sample its counters once a second after lead — when the
// test's measured window opens — until Stop.
func StartSampling(conn net.Conn, secret string, lead time.Duration) (*AgentSampler, error) {
	if _, err := Greet(conn, secret, authTimeout+helloTimeout); err != nil {
		conn.Close()
		return nil, err
	}
	a := &AgentSampler{c: newCtl(conn), conn: conn}
	a.timer = time.AfterFunc(max(lead, 0), a.begin)
	return a, nil
}

func (a *AgentSampler) begin() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.over {
		return
	}
	if err := a.c.write(&Message{Type: wire.MsgSample}); err != nil {
		a.err = err
		return
	}
	if _, err := a.c.expect(helloTimeout, wire.MsgRunning); err != nil {
		a.err = err
		return
	}
	a.started = true
}

// Stop ends the sampling and returns the agent's samples (none when it
// stops before the window opened).
func (a *AgentSampler) Stop() ([]box.Rates, error) {
	defer a.conn.Close()
	a.timer.Stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.over = true
	if a.err != nil || !a.started {
		return nil, a.err
	}
	if err := a.c.write(&Message{Type: wire.MsgStop}); err != nil {
		return nil, err
	}
	m, err := a.c.expect(flowGrace, wire.MsgSamples)
	if err != nil {
		return nil, err
	}
	if m.Error != "" {
		return m.Samples, errors.New(m.Error)
	}
	return m.Samples, nil
}

// Listen asks an agent started over ssh (serve --stdio, which serves only
// its controller) to listen for the test's other agents too, on these
// addresses, while the ssh channel is open: a flow's receiver reached
// over ssh. Secret is what those agents must prove (the channel carries
// it, encrypted; the agent has none of its own).
type Listen struct {
	// Addresses are IP or IP:PORT; port 0 or none picks a free port.
	Addresses []string `json:"addresses"`
	Secret    string   `json:"secret,omitempty"`
}

// channelIdle is how long an ssh channel whose agent listens for others
// may stay silent: the controller has nothing to say while the test runs.
const channelIdle = 24 * time.Hour

// listen starts listeners for l on this agent until ctx ends, and returns
// their addresses.
func (s *Server) listen(ctx context.Context, l *Listen) ([]string, error) {
	if l == nil || len(l.Addresses) == 0 {
		return nil, fmt.Errorf("%w: listen without an address", wire.ErrTestRefused)
	}
	srv := &Server{Token: cmp.Or(l.Secret, s.Token), Limits: s.Limits, MaxConns: s.MaxConns, CPUs: s.CPUs,
		Sampling: s.Sampling, Setup: s.Setup, Drops: s.Drops, Machine: s.Machine, Logf: s.Logf,
		PeerTimeout: s.PeerTimeout, Allow: s.Allow}
	var lns []net.Listener
	fail := func(err error) ([]string, error) {
		for _, ln := range lns {
			ln.Close()
		}
		return nil, err
	}
	var out []string
	for _, a := range l.Addresses {
		if _, _, err := net.SplitHostPort(a); err != nil {
			a = net.JoinHostPort(a, "0")
		}
		var ln net.Listener
		err := s.setup(func() (err error) {
			ln, err = net.Listen("tcp", a)
			return err
		})
		if err != nil {
			return fail(fmt.Errorf("%w: listen on %s: %v", wire.ErrTestRefused, a, err))
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		go func() { _ = srv.Serve(ctx, ln) }()
	}
	s.logf("listening for the test's agents on %v while the channel is open", out)
	return out, nil
}

// ListenOn asks the agent at the other end of conn (one started over ssh)
// to listen for other agents on l's addresses while conn stays open, and
// returns where it listens. The caller closes conn when the test is over.
func ListenOn(conn net.Conn, l Listen) ([]string, error) {
	if _, err := Greet(conn, "", authTimeout+helloTimeout); err != nil {
		return nil, err
	}
	c := newCtl(conn)
	if err := c.write(&Message{Type: wire.MsgListen, Listen: &l}); err != nil {
		return nil, err
	}
	m, err := c.expect(helloTimeout, wire.MsgListening)
	if err != nil {
		return nil, err
	}
	return m.Listening, nil
}
