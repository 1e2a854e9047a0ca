package traffic

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"linerate/box"
	"linerate/results"
)

// flow is one engine's part of a test on one end: a sender or a receiver
// of test traffic (the UDP socket sender and receiver, the AF_PACKET ring
// sender, the TCP sender and receiver), or a companion that runs beside
// them (latency probes and their echo, the XDP counter). Each engine is a
// type with its own config; the session drives them all through these
// methods and never asks which engine it holds:
//
//	run(tm)      once, in a goroutine of its own, from the test's start
//	progress()   from another goroutine at any time, run or not
//	cut(at)      at most once, before stop, when the test ends early
//	stop(grace)  once, from another goroutine, run returned or not
//	collect()    once, after run returned
//	close()      exactly once, last, whether run ran or not
//
// A flow may start counting before run (a receiver whose peer sends before
// this end's clock starts); run then only waits for stop.
type flow interface {
	// run moves traffic on the test's timing and returns when the flow is
	// over: a sender at tm.End or once stopped, a receiver once stopped
	// (or when its peer ended every stream).
	run(tm Timing)
	// cut says the measured window ended at at, before its planned end
	// (the run was interrupted, or the peer stopped early): a flow that
	// counts by its own clock counts what comes later as late.
	cut(at time.Time)
	// stop makes run return: a sender stops sending now; a receiver takes
	// what is still in flight for at most grace.
	stop(grace time.Duration)
	// progress is the live total sent or received, warmup included;
	// bytes are UDP payload or TCP stream bytes.
	progress() (packets, bytes uint64)
	// collect is what the flow counted.
	collect() flowResult
	// close releases the flow's sockets and threads.
	close() error
}

// flowResult is what a flow counted once its run returned.
type flowResult struct {
	// counts are per stream, in the measured window, by stream id.
	counts  []results.Count
	tcp     []results.TCPStat
	threads []results.ThreadCPU
	// foreign is the test datagrams a receiver got from an address other
	// than its peer's: not counted.
	foreign uint64
	// refused is the datagrams a sender's kernel refused (failed send
	// calls, one datagram each): not counted as sent.
	refused uint64
	// held is the measured datagrams a paced sender did not send while its
	// link was down (the ring and AF_XDP engines): not counted as sent.
	held uint64
	// rr is what a transaction flow counted besides counts.
	rr  *rrOutcome
	err error
}

// role says which way a flow's traffic goes on its end: the session stops
// senders first and adds up their progress apart from receivers'.
type role int

const (
	sending role = iota
	receiving
)

// entry is one flow of a session.
type entry struct {
	f     flow
	role  role
	label string        // prefixes the flow's error (a target's name)
	done  chan struct{} // closed when run returned
	res   flowResult    // valid once the flow's role is stopped
}

// progress is what one end has counted so far.
type progress struct {
	t                   time.Time
	sentPkts, sentBytes uint64
	recvPkts, recvBytes uint64
}

// session is one test on one end, client or server: it starts the flows on
// one timing, ticks once a second, stops them in order (senders, then
// receivers, then the sampling), collects what they counted and closes
// them. Its clock is the only clock it reads, so that tests drive it.
type session struct {
	clk clock
	// sampling records this end's counters over the measured window;
	// each, if set, gets every interval's rates as they come.
	sampling Sampling
	each     func(box.Rates)
	// settle is how long stop waits, after senders that ended on their own,
	// for what is in flight to arrive.
	settle time.Duration
	// grace is how long receivers wait at stop for the peer's streams to
	// end.
	grace time.Duration
	// drops, if set, snapshots the end's drop counters when the measured
	// window starts and after the receivers drained.
	drops *dropWindow
	// links, if set, records the end's test interfaces going down; it
	// stops with the sampling.
	links *linkWatch

	entries []*entry
	tm      Timing
	window  windowSampling

	mu        sync.Mutex
	sending   int           // senders whose run has not returned
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

	// halted is closed by halt: the run ends early, as on an interrupt,
	// for haltErr; the measured window ends at haltAt.
	halted   chan struct{}
	haltErr  error
	haltAt   time.Time
	haltSeen time.Time // when halt was called
	ending   bool      // the senders are being stopped: too late to halt
}

func newSession(clk clock) *session {
	return &session{clk: clk, halted: make(chan struct{})}
}

// halt ends the run early because of err (a peer died): run returns as it
// does on an interrupt, and the measured window ends at at (the last
// moment both ends' figures cover; zero: when the senders stop). Only the
// first call counts; it may come from any goroutine, at any time.
func (s *session) halt(at time.Time, err error) {
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
	s.haltErr, s.haltAt, s.haltSeen = err, at, s.clk.now()
	close(s.halted)
}

// haltedBy is why the run was halted, when it was: the error, where the
// window ends and when the halt came.
func (s *session) haltedBy() (err error, at, seen time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.haltErr, s.haltAt, s.haltSeen
}

// Add hands f to the session, which closes it.
func (s *session) add(r role, label string, f flow) *entry {
	e := &entry{f: f, role: r, label: label, done: make(chan struct{})}
	s.entries = append(s.entries, e)
	return e
}

// start runs every flow from now: the warmup, then the measured window.
// The sampling starts with the window.
func (s *session) start(warmup, duration time.Duration) Timing {
	// Without warmup the window starts with the first packet: the counters
	// are read before any flow runs.
	mark := s.drops.mark
	if warmup <= 0 {
		mark()
		mark = nil
	}
	now := s.clk.now()
	s.tm = Timing{Start: now, Measure: now.Add(warmup), End: now.Add(warmup + duration)}
	s.mu.Lock()
	s.started = true
	s.over = make(chan struct{})
	s.waiting = 2
	for _, e := range s.entries {
		if e.role == sending {
			s.sending++
		}
	}
	if s.sending == 0 {
		s.passed()
	}
	s.mu.Unlock()
	s.endTimer = s.clk.afterFunc(s.tm.End.Sub(now), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.passed()
	})
	for _, e := range s.entries {
		go s.runFlow(e)
	}
	s.window.startAt(s.clk, s.tm.Measure, s.sampling, s.each, mark)
	return s.tm
}

// passed counts one of the two things over waits for. Called with s.mu
// held.
func (s *session) passed() {
	if s.waiting--; s.waiting == 0 {
		close(s.over)
	}
}

func (s *session) runFlow(e *entry) {
	e.f.run(s.tm)
	close(e.done)
	if e.role != sending {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sending--; s.sending == 0 {
		s.passed()
	}
}

// overC is closed once every sender is done and the test's time is up.
func (s *session) overC() <-chan struct{} { return s.over }

// run ticks once a second from the start, with the tick's time, until
// until is closed (false) or ctx ends or the session is halted (true:
// stopped early; haltedBy says whether it was a halt). A last second
// that ends a few ms before its tick would have come (the ticker starts
// a little after the window) still gets its tick: when until closes 900 ms
// or more after the last tick, it ticks once more.
func (s *session) run(ctx context.Context, until <-chan struct{}, tick func(now time.Time)) (interrupted bool) {
	c, stop := s.clk.ticker(time.Second)
	defer stop()
	last := s.clk.now()
	for {
		select {
		case <-until:
			if now := s.clk.now(); now.Sub(last) >= 900*time.Millisecond {
				tick(now)
			}
			return false
		case <-ctx.Done():
			return true
		case <-s.halted:
			return true
		case now := <-c:
			tick(now)
			last = now
		}
	}
}

// progress adds up what the senders and the receivers counted so far, at
// now.
func (s *session) progress(now time.Time) progress {
	p := progress{t: now}
	for _, e := range s.entries {
		pk, by := e.f.progress()
		if e.role == sending {
			p.sentPkts += pk
			p.sentBytes += by
		} else {
			p.recvPkts += pk
			p.recvBytes += by
		}
	}
	return p
}

// stop ends the test in order. The senders are told to stop and waited
// for; if that is before the planned end, the measured window ends there
// for every flow. When the run was not interrupted, what the senders sent
// is given settle to arrive. Then between runs (the client tells its
// servers and waits for their results); then the receivers stop, with
// grace for what is in flight; then the sampling, and the drop counters
// are read. Each flow's result is collected as its role stops.
func (s *session) stop(interrupted bool, between func()) {
	s.stopSenders()
	if !interrupted && s.settle > 0 {
		<-s.clk.after(s.settle)
	}
	if between != nil {
		between()
	}
	s.stopRole(receiving, s.grace)
	s.finish()
	s.drops.drained()
}

// stopSenders stops the senders and, when that ends the window early, cuts
// it for every flow.
func (s *session) stopSenders() {
	s.mu.Lock()
	s.ending = true
	s.mu.Unlock()
	s.stopRole(sending, 0)
	s.stoppedAt = s.clk.now()
	s.sendersAt = s.stoppedAt
	if _, at, _ := s.haltedBy(); !at.IsZero() && at.Before(s.stoppedAt) {
		// A halt: the window ends where both ends' figures end.
		s.stoppedAt = at
		if at.Before(s.tm.Start) {
			s.stoppedAt = s.tm.Start
		}
	}
	if s.stoppedAt.Before(s.tm.End) {
		for _, e := range s.entries {
			e.f.cut(s.stoppedAt)
		}
	}
}

// stopRole stops every flow of role r and waits until each one's run
// returned.
func (s *session) stopRole(r role, grace time.Duration) {
	var es []*entry
	for _, e := range s.entries {
		if e.role == r {
			e.f.stop(grace)
			es = append(es, e)
		}
	}
	for _, e := range es {
		<-e.done
		e.res = e.f.collect()
	}
}

// finish ends the sampling and the timer of the test's end.
func (s *session) finish() {
	s.samples, s.began, s.sampleErr = s.window.finish()
	s.links.stop()
	if s.endTimer != nil {
		s.endTimer()
	}
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}

// windowEnd is when the measured window ended: the test's planned end, or
// the moment the senders were stopped if that came first.
func (s *session) windowEnd() time.Time {
	if s.stoppedAt.Before(s.tm.End) {
		return s.stoppedAt
	}
	return s.tm.End
}

// sendersSeconds is the measured window up to when the senders stopped
// (a halt's cut ignored), the part flows of a live peer counted; valid
// after stop.
func (s *session) sendersSeconds() float64 {
	end := s.sendersAt
	if end.After(s.tm.End) {
		end = s.tm.End
	}
	return max(end.Sub(s.tm.Measure).Seconds(), 0)
}

// seconds is the length of the measured window as this end's clock saw
// it; valid after stop.
func (s *session) seconds() float64 {
	return max(s.windowEnd().Sub(s.tm.Measure).Seconds(), 0)
}

// threads is every flow's engine threads, in the order the flows were
// added; valid after stop.
func (s *session) threads() []results.ThreadCPU {
	var out []results.ThreadCPU
	for _, e := range s.entries {
		out = append(out, e.res.threads...)
	}
	return out
}

// refused is the datagrams the senders saw refused; valid after stop.
func (s *session) refused() uint64 {
	var n uint64
	for _, e := range s.entries {
		n += e.res.refused
	}
	return n
}

// linkEvents is the end's link events since the test's start (nil when
// not watched) and why some are missing; valid after stop.
func (s *session) linkEvents() ([]results.LinkEvent, error) {
	return s.links.result(s.tm.Start)
}

// heldBack is the datagrams the senders held back while their link was
// down; valid after stop.
func (s *session) heldBack() uint64 {
	var n uint64
	for _, e := range s.entries {
		n += e.res.held
	}
	return n
}

// errs is every flow's error, prefixed with its label; valid after stop.
func (s *session) errs() []error {
	var out []error
	for _, e := range s.entries {
		switch {
		case e.res.err == nil:
		case e.label != "":
			out = append(out, fmt.Errorf("%s: %w", e.label, e.res.err))
		default:
			out = append(out, e.res.err)
		}
	}
	return out
}

// close stops what is still running (a way out that skipped stop) and
// closes every flow, once.
func (s *session) close() error {
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
		s.stopRole(receiving, 0)
		s.finish()
	}
	s.links.stop()
	var errs []error
	for _, e := range s.entries {
		errs = append(errs, e.f.close())
	}
	return errors.Join(errs...)
}

// clock is the time a session reads: the real one, or a test's.
type clock interface {
	now() time.Time
	after(d time.Duration) <-chan time.Time
	// afterFunc calls f in its own goroutine after d; stop cancels it and
	// says whether it did.
	afterFunc(d time.Duration, f func()) (stop func() bool)
	ticker(d time.Duration) (c <-chan time.Time, stop func())
}

// realClock is the time package's clock.
type realClock struct{}

func (realClock) now() time.Time                         { return time.Now() }
func (realClock) after(d time.Duration) <-chan time.Time { return time.After(d) }
func (realClock) afterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}
func (realClock) ticker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
