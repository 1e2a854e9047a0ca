package traffic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"linerate/box"
	"linerate/results"
	"linerate/wire"
)

// A third-party flow: a controller asks an agent (a Server) to run a test
// as the client, against other agents. The agent checks where it is asked
// to send (Server.checkFlow), runs Run with its own secret, streams the
// interval lines back and ends with the whole Result. docs/agents.md has
// the trust model.

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
