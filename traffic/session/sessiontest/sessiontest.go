// Package sessiontest holds the fakes that tests of a session and of its
// users drive it with: a clock that moves only when the test advances it,
// flows that move nothing and log what they are asked, and a sampling
// that logs its start and stop.
package sessiontest

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"linerate/box"
	"linerate/traffic/session"
)

// Clock is a session.Clock that moves only when a test advances it.
type Clock struct {
	mu     sync.Mutex
	t      time.Time
	timers []*timer
}

type timer struct {
	at    time.Time
	every time.Duration // a ticker's period
	c     chan time.Time
	f     func()
	dead  bool
}

// NewClock is a clock at a fixed time.
func NewClock() *Clock {
	return &Clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *Clock) add(t *timer, d time.Duration) *timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.at = c.t.Add(d)
	c.timers = append(c.timers, t)
	return t
}

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *Clock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.add(&timer{c: ch}, d)
	return ch
}

func (c *Clock) AfterFunc(d time.Duration, f func()) func() bool {
	t := c.add(&timer{f: f}, d)
	return func() bool { return c.kill(t) }
}

func (c *Clock) Ticker(d time.Duration) (<-chan time.Time, func()) {
	ch := make(chan time.Time, 1)
	t := c.add(&timer{c: ch, every: d}, d)
	return ch, func() { c.kill(t) }
}

func (c *Clock) kill(t *timer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	was := !t.dead
	t.dead = true
	return was
}

// Advance moves the clock by d, firing what falls due in time order: a
// channel gets the time (dropped, as a ticker's, when full), a function
// runs in a goroutine of its own.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	end := c.t.Add(d)
	for {
		var next *timer
		for _, t := range c.timers {
			if !t.dead && !t.at.After(end) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			break
		}
		c.t = next.at
		if next.c != nil {
			select {
			case next.c <- c.t:
			default:
			}
		}
		if next.f != nil {
			go next.f()
		}
		if next.every > 0 {
			next.at = next.at.Add(next.every)
		} else {
			next.dead = true
		}
	}
	c.t = end
}

// Pending counts the live timers, and tickers among them.
func (c *Clock) Pending() (timers, tickers int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.timers {
		if !t.dead {
			timers++
			if t.every > 0 {
				tickers++
			}
		}
	}
	return timers, tickers
}

// WaitFor waits until cond holds (another goroutine makes it so), or fails
// the test after 10 s.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Log records what fake flows and samplers were asked to do, in order.
type Log struct {
	mu sync.Mutex
	ev []string
}

// Add records event e.
func (l *Log) Add(e string) {
	l.mu.Lock()
	l.ev = append(l.ev, e)
	l.mu.Unlock()
}

// Events is every event so far, in order.
func (l *Log) Events() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ev)
}

// At is the index of event e, -1 when absent.
func (l *Log) At(e string) int { return slices.Index(l.Events(), e) }

// Count is how many times event e was recorded.
func (l *Log) Count(e string) int {
	n := 0
	for _, x := range l.Events() {
		if x == e {
			n++
		}
	}
	return n
}

// Flow is a flow that moves nothing: a sender's Run ends at the test's end
// on the fake clock or at Stop, a receiver's at Stop. It logs every call
// as "call:name" and its Collect returns Res.
type Flow struct {
	Name string
	// Res is what Collect returns.
	Res session.Result
	// Pk and By are what Progress returns.
	Pk, By atomic.Uint64

	log    *Log
	clk    *Clock
	sender bool
	halt   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	cutAt  time.Time
	grace  time.Duration
}

// NewFlow is a flow called name, a sender or a receiver, logging to log
// and ending on clk.
func NewFlow(name string, sender bool, log *Log, clk *Clock) *Flow {
	return &Flow{Name: name, sender: sender, log: log, clk: clk, halt: make(chan struct{})}
}

// Sender says whether the flow is a sender.
func (f *Flow) Sender() bool { return f.sender }

// CutAt is where Cut ended the flow's window (zero: never cut).
func (f *Flow) CutAt() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cutAt
}

// Grace is what Stop gave the flow.
func (f *Flow) Grace() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.grace
}

func (f *Flow) Run(tm session.Timing) {
	var end <-chan time.Time
	if f.sender {
		end = f.clk.After(tm.End.Sub(f.clk.Now()))
	}
	f.log.Add("run:" + f.Name)
	select {
	case <-f.halt:
	case <-end:
	}
	f.log.Add("return:" + f.Name)
}

func (f *Flow) Cut(at time.Time) {
	f.mu.Lock()
	f.cutAt = at
	f.mu.Unlock()
	f.log.Add("cut:" + f.Name)
}

func (f *Flow) Stop(grace time.Duration) {
	f.log.Add("stop:" + f.Name)
	f.mu.Lock()
	f.grace = grace
	f.mu.Unlock()
	f.once.Do(func() { close(f.halt) })
}

func (f *Flow) Progress() (uint64, uint64) { return f.Pk.Load(), f.By.Load() }

func (f *Flow) Collect() session.Result {
	f.log.Add("collect:" + f.Name)
	return f.Res
}

func (f *Flow) Close() error {
	f.log.Add("close:" + f.Name)
	return nil
}

// Sampling is a session.Sampling that logs its start and stop and hands
// out rates.
func Sampling(log *Log, rates []box.Rates) session.Sampling {
	return func(each func(box.Rates)) func() ([]box.Rates, error) {
		log.Add("sampling:start")
		for _, r := range rates {
			if each != nil {
				each(r)
			}
		}
		return func() ([]box.Rates, error) {
			log.Add("sampling:stop")
			return rates, nil
		}
	}
}
