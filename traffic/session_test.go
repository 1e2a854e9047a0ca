package traffic

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"linerate/box"
	"linerate/results"
)

// fakeClock is a clock that moves only when a test advances it.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at    time.Time
	every time.Duration // a ticker's period
	c     chan time.Time
	f     func()
	dead  bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) add(t *fakeTimer, d time.Duration) *fakeTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.at = c.t.Add(d)
	c.timers = append(c.timers, t)
	return t
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) after(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.add(&fakeTimer{c: ch}, d)
	return ch
}

func (c *fakeClock) afterFunc(d time.Duration, f func()) func() bool {
	t := c.add(&fakeTimer{f: f}, d)
	return func() bool { return c.kill(t) }
}

func (c *fakeClock) ticker(d time.Duration) (<-chan time.Time, func()) {
	ch := make(chan time.Time, 1)
	t := c.add(&fakeTimer{c: ch, every: d}, d)
	return ch, func() { c.kill(t) }
}

func (c *fakeClock) kill(t *fakeTimer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	was := !t.dead
	t.dead = true
	return was
}

// advance moves the clock by d, firing what falls due in time order: a
// channel gets the time (dropped, as a ticker's, when full), a function
// runs in a goroutine of its own.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	end := c.t.Add(d)
	for {
		var next *fakeTimer
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

// pending counts the live timers, and tickers among them.
func (c *fakeClock) pending() (timers, tickers int) {
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

// waitFor waits until cond holds (another goroutine makes it so), or fails
// the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitRunning waits until every flow runs and the session ticks.
func (ts *testSession) waitRunning(t *testing.T) {
	t.Helper()
	waitFor(t, "a ticker", func() bool { _, n := ts.clk.pending(); return n > 0 })
	for _, f := range ts.flows {
		waitFor(t, f.name+" to run", func() bool { return ts.log.at("run:"+f.name) >= 0 })
	}
}

// eventLog records what fake flows and samplers were asked to do, in
// order.
type eventLog struct {
	mu sync.Mutex
	ev []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	l.ev = append(l.ev, e)
	l.mu.Unlock()
}

func (l *eventLog) events() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ev)
}

// at is the index of event e, -1 when absent.
func (l *eventLog) at(e string) int { return slices.Index(l.events(), e) }

func (l *eventLog) count(e string) int {
	n := 0
	for _, x := range l.events() {
		if x == e {
			n++
		}
	}
	return n
}

// fakeFlow is a flow that moves nothing: a sender's run ends at the test's
// end on the fake clock or at stop, a receiver's at stop. It logs every
// call as "call:name".
type fakeFlow struct {
	name   string
	log    *eventLog
	clk    *fakeClock
	sender bool
	res    flowResult
	pk, by atomic.Uint64
	halt   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	cutAt  time.Time
	grace  time.Duration
}

func newFakeFlow(name string, sender bool, log *eventLog, clk *fakeClock) *fakeFlow {
	return &fakeFlow{name: name, sender: sender, log: log, clk: clk, halt: make(chan struct{})}
}

func (f *fakeFlow) run(tm Timing) {
	var end <-chan time.Time
	if f.sender {
		end = f.clk.after(tm.End.Sub(f.clk.now()))
	}
	f.log.add("run:" + f.name)
	select {
	case <-f.halt:
	case <-end:
	}
	f.log.add("return:" + f.name)
}

func (f *fakeFlow) cut(at time.Time) {
	f.mu.Lock()
	f.cutAt = at
	f.mu.Unlock()
	f.log.add("cut:" + f.name)
}

func (f *fakeFlow) stop(grace time.Duration) {
	f.log.add("stop:" + f.name)
	f.mu.Lock()
	f.grace = grace
	f.mu.Unlock()
	f.once.Do(func() { close(f.halt) })
}

func (f *fakeFlow) progress() (uint64, uint64) { return f.pk.Load(), f.by.Load() }

func (f *fakeFlow) collect() flowResult {
	f.log.add("collect:" + f.name)
	return f.res
}

func (f *fakeFlow) close() error {
	f.log.add("close:" + f.name)
	return nil
}

// fakeSampling is a Sampling that logs its start and stop.
func fakeSampling(log *eventLog, rates []box.Rates) Sampling {
	return func(each func(box.Rates)) func() ([]box.Rates, error) {
		log.add("sampling:start")
		for _, r := range rates {
			if each != nil {
				each(r)
			}
		}
		return func() ([]box.Rates, error) {
			log.add("sampling:stop")
			return rates, nil
		}
	}
}

// testSession is a session on a fake clock with two senders and two
// receivers.
type testSession struct {
	*session
	clk   *fakeClock
	log   *eventLog
	flows []*fakeFlow
}

func newTestSession() *testSession {
	ts := &testSession{clk: newFakeClock(), log: &eventLog{}}
	ts.session = newSession(ts.clk)
	ts.sampling = fakeSampling(ts.log, []box.Rates{{Seconds: 1}})
	for _, n := range []struct {
		name string
		r    role
	}{{"send1", sending}, {"recv1", receiving}, {"send2", sending}, {"recv2", receiving}} {
		f := newFakeFlow(n.name, n.r == sending, ts.log, ts.clk)
		ts.flows = append(ts.flows, f)
		ts.add(n.r, n.name, f)
	}
	return ts
}

// checkOrder checks that every sender returned before any receiver was
// stopped, and that the sampling stopped after every receiver returned.
func (ts *testSession) checkOrder(t *testing.T) {
	t.Helper()
	ev := ts.log.events()
	firstRecvStop := min(ts.log.at("stop:recv1"), ts.log.at("stop:recv2"))
	for _, s := range []string{"send1", "send2"} {
		if r := ts.log.at("return:" + s); r < 0 || r > firstRecvStop {
			t.Errorf("%s returned at %d, a receiver stopped at %d: %q", s, r, firstRecvStop, ev)
		}
	}
	stop := ts.log.at("sampling:stop")
	for _, r := range []string{"recv1", "recv2"} {
		if ret := ts.log.at("return:" + r); ret < 0 || (stop >= 0 && ret > stop) {
			t.Errorf("%s returned at %d, the sampling stopped at %d: %q", r, ret, stop, ev)
		}
	}
}

// checkClosed checks that every flow was closed exactly once, after its
// run returned.
func (ts *testSession) checkClosed(t *testing.T) {
	t.Helper()
	ev := ts.log.events()
	for _, f := range ts.flows {
		if n := ts.log.count("close:" + f.name); n != 1 {
			t.Errorf("%s closed %d times: %q", f.name, n, ev)
		}
		if r, c := ts.log.at("return:"+f.name), ts.log.at("close:"+f.name); r >= 0 && c < r {
			t.Errorf("%s closed (%d) before its run returned (%d): %q", f.name, c, r, ev)
		}
	}
}

// TestSessionTicksAndStopsInOrder runs a 3.5 s test (0.5 s of warmup) on a
// fake clock: three ticks, one a second, with the clock's times; the run
// ends when the senders are done and the time is up; the stop goes
// senders, settle, between, receivers, sampling; the sampling covers the
// measured window only.
func TestSessionTicksAndStopsInOrder(t *testing.T) {
	ts := newTestSession()
	ts.settle, ts.grace = 300*time.Millisecond, 2*time.Second
	tm := ts.start(500*time.Millisecond, 3*time.Second)
	ts.flows[0].pk.Store(10)
	ts.flows[1].pk.Store(7)
	ts.flows[2].pk.Store(5)
	ticks := make(chan progress)
	done := make(chan bool)
	go func() {
		done <- ts.run(context.Background(), ts.overC(), func(now time.Time) { ticks <- ts.progress(now) })
	}()
	ts.waitRunning(t)
	ts.clk.advance(400 * time.Millisecond)
	if ts.log.at("sampling:start") >= 0 {
		t.Fatal("sampling started in the warmup")
	}
	ts.clk.advance(600 * time.Millisecond)
	for i := 1; i <= 3; i++ {
		p := <-ticks
		if want := tm.Start.Add(time.Duration(i) * time.Second); !p.t.Equal(want) {
			t.Errorf("tick %d at %s, want %s", i, p.t, want)
		}
		if p.sentPkts != 15 || p.recvPkts != 7 {
			t.Errorf("tick %d: progress %+v, want 15 sent and 7 received", i, p)
		}
		if i < 3 {
			ts.clk.advance(time.Second)
		}
	}
	waitFor(t, "the sampling's start", func() bool { return ts.log.at("sampling:start") >= 0 })
	ts.clk.advance(500 * time.Millisecond) // the end: the senders finish
	if interrupted := <-done; interrupted {
		t.Fatal("run says interrupted")
	}
	stopped := make(chan struct{})
	var between atomic.Bool
	go func() {
		ts.stop(false, func() {
			between.Store(true)
			if ts.log.at("stop:recv1") >= 0 || ts.log.at("stop:recv2") >= 0 {
				t.Error("receivers stopped before between")
			}
		})
		close(stopped)
	}()
	// The senders ended on their own: settle for what is in flight.
	waitFor(t, "the settle", func() bool { n, _ := ts.clk.pending(); return n == 1 })
	if between.Load() {
		t.Fatal("between ran before the settle")
	}
	ts.clk.advance(300 * time.Millisecond)
	<-stopped
	if !between.Load() {
		t.Error("between did not run")
	}
	ts.checkOrder(t)
	for _, f := range ts.flows {
		if !f.cutAt.IsZero() {
			t.Errorf("%s cut at %s in a run that ended on time", f.name, f.cutAt)
		}
		if !f.sender && f.grace != 2*time.Second {
			t.Errorf("%s stopped with grace %s, want 2s", f.name, f.grace)
		}
	}
	if s := ts.seconds(); s != 3 {
		t.Errorf("window %.3f s, want 3", s)
	}
	if !ts.began || len(ts.samples) != 1 {
		t.Errorf("sampling began %v with %d samples", ts.began, len(ts.samples))
	}
	if err := ts.close(); err != nil {
		t.Fatal(err)
	}
	ts.checkClosed(t)
}

// TestSessionInterrupted: ctx ends mid-window: run says so, the senders
// stop at once, every flow's window is cut where they stopped, there is no
// settling, and the window is as long as it ran.
func TestSessionInterrupted(t *testing.T) {
	ts := newTestSession()
	ts.settle = time.Hour // would hang the test if waited for
	tm := ts.start(time.Second, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- ts.run(ctx, ts.overC(), func(time.Time) {}) }()
	ts.waitRunning(t)
	ts.clk.advance(2500 * time.Millisecond)
	cancel()
	if !<-done {
		t.Fatal("run does not say interrupted")
	}
	ts.stop(true, nil)
	ts.checkOrder(t)
	want := tm.Start.Add(2500 * time.Millisecond)
	for _, f := range ts.flows {
		if !f.cutAt.Equal(want) {
			t.Errorf("%s cut at %s, want %s", f.name, f.cutAt, want)
		}
		if ts.log.at("cut:"+f.name) < ts.log.at("return:send2") || ts.log.at("cut:"+f.name) < ts.log.at("return:send1") {
			t.Errorf("%s cut before the senders returned: %q", f.name, ts.log.events())
		}
	}
	if s := ts.seconds(); s != 1.5 {
		t.Errorf("window %.3f s, want 1.5", s)
	}
	_ = ts.close()
	ts.checkClosed(t)
}

// TestSessionStopBeforeWindow: a stop in the warmup leaves the window
// empty and the sampling never started.
func TestSessionStopBeforeWindow(t *testing.T) {
	ts := newTestSession()
	ts.start(2*time.Second, time.Second)
	ts.clk.advance(time.Second)
	ts.stop(true, nil)
	if ts.began || ts.log.at("sampling:start") >= 0 {
		t.Errorf("sampling began in a test stopped in its warmup: %q", ts.log.events())
	}
	if s := ts.seconds(); s != 0 {
		t.Errorf("window %.3f s, want 0", s)
	}
	// A start timer that fires late does nothing.
	ts.clk.advance(time.Hour)
	if ts.log.at("sampling:start") >= 0 {
		t.Error("sampling started after the stop")
	}
	_ = ts.close()
	ts.checkOrder(t)
	ts.checkClosed(t)
}

// TestSessionCloseWithoutStop: a way out after the start that skips stop
// still stops every flow in order and closes each once; closing twice
// closes nothing more.
func TestSessionCloseWithoutStop(t *testing.T) {
	ts := newTestSession()
	ts.start(0, 5*time.Second)
	ts.clk.advance(time.Second)
	waitFor(t, "the sampling", func() bool { return ts.log.at("sampling:start") >= 0 })
	if err := ts.close(); err != nil {
		t.Fatal(err)
	}
	if err := ts.close(); err != nil {
		t.Fatal(err)
	}
	ts.checkOrder(t)
	ts.checkClosed(t)
	if ts.log.at("sampling:stop") < 0 {
		t.Error("the sampling outlived the session")
	}
}

// TestSessionCloseBeforeStart: flows made before a failure that came ahead
// of the start are closed once and never run or stopped.
func TestSessionCloseBeforeStart(t *testing.T) {
	ts := newTestSession()
	_ = ts.close()
	_ = ts.close()
	ts.checkClosed(t)
	for _, e := range ts.log.events() {
		if !strings.HasPrefix(e, "close:") {
			t.Errorf("%s before a start", e)
		}
	}
}

// TestSessionCollects: each flow's result is collected once its role is
// stopped (the senders' in time for between), errors carry their flow's
// label, threads keep the order the flows were added in.
func TestSessionCollects(t *testing.T) {
	ts := newTestSession()
	ts.flows[0].res = flowResult{counts: []results.Count{{Stream: 0, Packets: 100}}, threads: []results.ThreadCPU{{Role: "a"}}}
	ts.flows[1].res = flowResult{threads: []results.ThreadCPU{{Role: "b"}}, err: errors.New("recv failed")}
	ts.flows[2].res = flowResult{err: errors.New("send failed")}
	ts.flows[3].res = flowResult{threads: []results.ThreadCPU{{Role: "c"}}}
	ts.entries[2].label = ""
	ts.start(0, time.Second)
	ts.clk.advance(time.Second)
	var atBetween []results.Count
	ts.stop(false, func() { atBetween = ts.entries[0].res.counts })
	if len(atBetween) != 1 || atBetween[0].Packets != 100 {
		t.Errorf("sender's counts at between: %+v", atBetween)
	}
	var roles []string
	for _, th := range ts.threads() {
		roles = append(roles, th.Role)
	}
	if !slices.Equal(roles, []string{"a", "b", "c"}) {
		t.Errorf("threads %q", roles)
	}
	var errs []string
	for _, err := range ts.errs() {
		errs = append(errs, err.Error())
	}
	if !slices.Equal(errs, []string{"recv1: recv failed", "send failed"}) {
		t.Errorf("errors %q", errs)
	}
	for _, f := range ts.flows {
		if n := ts.log.count("collect:" + f.name); n != 1 {
			t.Errorf("%s collected %d times", f.name, n)
		}
	}
	_ = ts.close()
	ts.checkClosed(t)
}
