// Package session runs one end's part of a test, client or server alike:
// the flows it starts on one timing (the warmup, then the measured
// window), a tick once a second, the stop in order (senders, then
// receivers, then the sampling) and what the flows counted. A flow is any
// engine behind the Flow interface (the UDP socket, ring and AF_XDP
// senders, the TCP loops, the probes, the meters); the session never asks
// which it holds.
//
// Beside the flows it keeps what an end watches over the window: the
// sampling of the machine's counters (Sampling), the drop counters at the
// window's edges (DropWindow) and the links that go down (LinkWatch); and
// what every engine's threads share: pacing (Pacer) and their CPU time.
package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"linerate/box"
	"linerate/results"
)

// Entry is one flow of a session.
type Entry struct {
	f     Flow
	role  Role
	label string        // prefixes the flow's error (a target's name)
	done  chan struct{} // closed when Run returned
	res   Result        // valid once the flow's role is stopped
}

// Role is which way the entry's flow moves traffic.
func (e *Entry) Role() Role { return e.role }

// Result is what the entry's flow counted; valid once its role is stopped.
func (e *Entry) Result() Result { return e.res }

// Session is one test on one end, client or server: it starts the flows on
// one timing, ticks once a second, stops them in order (senders, then
// receivers, then the sampling), collects what they counted and closes
// them. Its clock is the only clock it reads, so that tests drive it.
type Session struct {
	clk Clock
	// Sampling records this end's counters over the measured window;
	// Each, if set, gets every interval's rates as they come.
	Sampling Sampling
	Each     func(box.Rates)
	// Settle is how long Stop waits, after senders that ended on their
	// own, for what is in flight to arrive.
	Settle time.Duration
	// Grace is how long receivers wait at Stop for the peer's streams to
	// end.
	Grace time.Duration
	// Drops, if set, snapshots the end's drop counters when the measured
	// window starts and after the receivers drained.
	Drops *DropWindow
	// Links, if set, records the end's test interfaces going down; it
	// stops with the sampling.
	Links *LinkWatch

	entries []*Entry
	tm      Timing
	window  windowSampling

	mu        sync.Mutex
	sending   int           // senders whose Run has not returned
	waiting   int           // what over waits for: the senders, the clock
	over      chan struct{} // every sender returned and the clock passed tm.End
	endTimer  func() bool
	started   bool
	stopped   bool
	closed    bool
	stoppedAt time.Time // when the senders were stopped, or the window's end a halt set
	sendersAt time.Time // when the senders were stopped, halt or not
	samples   []box.Rates
	began     bool // the measured window started (the sampling ran)
	sampleErr error

	// halted is closed by Halt: the run ends early, as on an interrupt,
	// for haltErr; the measured window ends at haltAt.
	halted   chan struct{}
	haltErr  error
	haltAt   time.Time
	haltSeen time.Time // when Halt was called
	ending   bool      // the senders are being stopped: too late to halt

	trail trail // the flows' progress at the start, the ticks and the senders' stop
}

// New is a session on clk, with no flow yet.
func New(clk Clock) *Session {
	return &Session{clk: clk, halted: make(chan struct{})}
}

// Clock is the clock the session reads.
func (s *Session) Clock() Clock { return s.clk }

// Timing is the test's timing; valid after Start.
func (s *Session) Timing() Timing { return s.tm }

// Entries are the session's flows, in the order they were added.
func (s *Session) Entries() []*Entry { return s.entries }

// Samples are the intervals the sampling recorded and why there are none;
// began says whether the measured window started (the sampling ran).
// Valid after Stop.
func (s *Session) Samples() (rates []box.Rates, began bool, err error) {
	return s.samples, s.began, s.sampleErr
}

// Halt ends the run early because of err (a peer died): Run returns as it
// does on an interrupt, and the measured window ends at at (the last
// moment both ends' figures cover; zero: when the senders stop). Only the
// first call counts; it may come from any goroutine, at any time.
func (s *Session) Halt(at time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.halted:
		return
	default:
	}
	if s.ending {
		return // the run is over: nothing left to end early
	}
	s.haltErr, s.haltAt, s.haltSeen = err, at, s.clk.Now()
	close(s.halted)
}

// HaltedBy is why the run was halted, when it was: the error, where the
// window ends and when the halt came.
func (s *Session) HaltedBy() (err error, at, seen time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.haltErr, s.haltAt, s.haltSeen
}

// Add hands f to the session, which closes it.
func (s *Session) Add(r Role, label string, f Flow) *Entry {
	e := &Entry{f: f, role: r, label: label, done: make(chan struct{})}
	s.entries = append(s.entries, e)
	return e
}

// Start runs every flow from now: the warmup, then the measured window.
// The sampling starts with the window.
func (s *Session) Start(warmup, duration time.Duration) Timing {
	// Without warmup the window starts with the first packet: the counters
	// are read before any flow runs.
	mark := s.Drops.mark
	if warmup <= 0 {
		mark()
		mark = nil
	}
	now := s.clk.Now()
	s.tm = Timing{Start: now, Measure: now.Add(warmup), End: now.Add(warmup + duration)}
	s.mu.Lock()
	s.started = true
	s.over = make(chan struct{})
	s.waiting = 2
	for _, e := range s.entries {
		if e.role == Sending {
			s.sending++
		}
	}
	if s.sending == 0 {
		s.passed()
	}
	s.mu.Unlock()
	s.endTimer = s.clk.AfterFunc(s.tm.End.Sub(now), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.passed()
	})
	s.mark()
	for _, e := range s.entries {
		go s.runFlow(e)
	}
	s.window.startAt(s.clk, s.tm.Measure, s.Sampling, s.Each, mark)
	return s.tm
}

// passed counts one of the two things over waits for. Called with s.mu
// held.
func (s *Session) passed() {
	if s.waiting--; s.waiting == 0 {
		close(s.over)
	}
}

func (s *Session) runFlow(e *Entry) {
	e.f.Run(s.tm)
	close(e.done)
	if e.role != Sending {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sending--; s.sending == 0 {
		s.passed()
	}
}

// Over is closed once every sender is done and the test's time is up.
func (s *Session) Over() <-chan struct{} { return s.over }

// Run ticks once a second from the start, with the tick's time, until
// until is closed (false) or ctx ends or the session is halted (true:
// stopped early; HaltedBy says whether it was a halt). A last second
// that ends a few ms before its tick would have come (the ticker starts
// a little after the window) still gets its tick: when until closes 900 ms
// or more after the last tick, it ticks once more.
func (s *Session) Run(ctx context.Context, until <-chan struct{}, tick func(now time.Time)) (interrupted bool) {
	c, stop := s.clk.Ticker(time.Second)
	defer stop()
	last := s.clk.Now()
	for {
		select {
		case <-until:
			if now := s.clk.Now(); now.Sub(last) >= 900*time.Millisecond {
				tick(now)
			}
			return false
		case <-ctx.Done():
			return true
		case <-s.halted:
			return true
		case now := <-c:
			s.mark()
			tick(now)
			last = now
		}
	}
}

// Progress adds up what the senders and the receivers counted so far, at
// now.
func (s *Session) Progress(now time.Time) Progress {
	p := Progress{T: now}
	for _, e := range s.entries {
		pk, by := e.f.Progress()
		if e.role == Sending {
			p.SentPkts += pk
			p.SentBytes += by
		} else {
			p.RecvPkts += pk
			p.RecvBytes += by
		}
	}
	return p
}

// Stop ends the test in order. The senders are told to stop and waited
// for; if that is before the planned end, the measured window ends there
// for every flow. When the run was not interrupted, what the senders sent
// is given Settle to arrive. Then between runs (the client tells its
// servers and waits for their results); then the receivers stop, with
// Grace for what is in flight; then the sampling, and the drop counters
// are read. Each flow's result is collected as its role stops.
func (s *Session) Stop(interrupted bool, between func()) {
	s.stopSenders()
	if !interrupted && s.Settle > 0 {
		<-s.clk.After(s.Settle)
	}
	if between != nil {
		between()
	}
	s.stopRole(Receiving, s.Grace)
	s.finish()
	s.Drops.drained()
}

// stopSenders stops the senders and, when that ends the window early, cuts
// it for every flow.
func (s *Session) stopSenders() {
	s.mu.Lock()
	s.ending = true
	s.mu.Unlock()
	s.stopRole(Sending, 0)
	s.stoppedAt = s.clk.Now()
	s.sendersAt = s.stoppedAt
	s.mark()
	if _, at, _ := s.HaltedBy(); !at.IsZero() && at.Before(s.stoppedAt) {
		// A halt: the window ends where both ends' figures end.
		s.stoppedAt = at
		if at.Before(s.tm.Start) {
			s.stoppedAt = s.tm.Start
		}
	}
	if s.stoppedAt.Before(s.tm.End) {
		for _, e := range s.entries {
			e.f.Cut(s.stoppedAt)
		}
	}
}

// stopRole stops every flow of role r and waits until each one's Run
// returned.
func (s *Session) stopRole(r Role, grace time.Duration) {
	var es []*Entry
	for _, e := range s.entries {
		if e.role == r {
			e.f.Stop(grace)
			es = append(es, e)
		}
	}
	for _, e := range es {
		<-e.done
		e.res = e.f.Collect()
	}
}

// finish ends the sampling and the timer of the test's end.
func (s *Session) finish() {
	s.samples, s.began, s.sampleErr = s.window.finish()
	s.Links.stop()
	if s.endTimer != nil {
		s.endTimer()
	}
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}

// WindowEnd is when the measured window ended: the test's planned end, or
// the moment the senders were stopped if that came first.
func (s *Session) WindowEnd() time.Time {
	if s.stoppedAt.Before(s.tm.End) {
		return s.stoppedAt
	}
	return s.tm.End
}

// SendersSeconds is the measured window up to when the senders stopped
// (a halt's cut ignored), the part flows of a live peer counted; valid
// after Stop.
func (s *Session) SendersSeconds() float64 {
	end := s.sendersAt
	if end.After(s.tm.End) {
		end = s.tm.End
	}
	return max(end.Sub(s.tm.Measure).Seconds(), 0)
}

// Seconds is the length of the measured window as this end's clock saw
// it; valid after Stop.
func (s *Session) Seconds() float64 {
	return max(s.WindowEnd().Sub(s.tm.Measure).Seconds(), 0)
}

// Threads is every flow's engine threads, in the order the flows were
// added; valid after Stop.
func (s *Session) Threads() []results.ThreadCPU {
	var out []results.ThreadCPU
	for _, e := range s.entries {
		out = append(out, e.res.Threads...)
	}
	return out
}

// Refused is the datagrams the senders saw refused; valid after Stop.
func (s *Session) Refused() uint64 {
	var n uint64
	for _, e := range s.entries {
		n += e.res.Refused
	}
	return n
}

// LinkEvents is the end's link events since the test's start (nil when
// not watched) and why some are missing; valid after Stop.
func (s *Session) LinkEvents() ([]results.LinkEvent, error) {
	return s.Links.result(s.tm.Start)
}

// HeldBack is the datagrams the senders held back while their link was
// down; valid after Stop.
func (s *Session) HeldBack() uint64 {
	var n uint64
	for _, e := range s.entries {
		n += e.res.Held
	}
	return n
}

// Errs is every flow's error, prefixed with its label; valid after Stop.
func (s *Session) Errs() []error {
	var out []error
	for _, e := range s.entries {
		switch {
		case e.res.Err == nil:
		case e.label != "":
			out = append(out, fmt.Errorf("%s: %w", e.label, e.res.Err))
		default:
			out = append(out, e.res.Err)
		}
	}
	return out
}

// Close stops what is still running (a way out that skipped Stop) and
// closes every flow, once.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	halt := s.started && !s.stopped
	s.mu.Unlock()
	if halt {
		s.stopSenders()
		s.stopRole(Receiving, 0)
		s.finish()
	}
	s.Links.stop()
	var errs []error
	for _, e := range s.entries {
		errs = append(errs, e.f.Close())
	}
	return errors.Join(errs...)
}
