package session_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"linerate/box"
	"linerate/results"
	"linerate/traffic/session"
	"linerate/traffic/session/sessiontest"
)

// testSession is a session on a fake clock with two senders and two
// receivers.
type testSession struct {
	*session.Session
	clk   *sessiontest.Clock
	log   *sessiontest.Log
	flows []*sessiontest.Flow
}

// newTestSession makes the test's session; the flows named in unlabelled
// are added without a label.
func newTestSession(unlabelled ...string) *testSession {
	ts := &testSession{clk: sessiontest.NewClock(), log: &sessiontest.Log{}}
	ts.Session = session.New(ts.clk)
	ts.Sampling = sessiontest.Sampling(ts.log, []box.Rates{{Seconds: 1}})
	for _, n := range []struct {
		name string
		r    session.Role
	}{{"send1", session.Sending}, {"recv1", session.Receiving}, {"send2", session.Sending}, {"recv2", session.Receiving}} {
		f := sessiontest.NewFlow(n.name, n.r == session.Sending, ts.log, ts.clk)
		ts.flows = append(ts.flows, f)
		label := n.name
		if slices.Contains(unlabelled, n.name) {
			label = ""
		}
		ts.Add(n.r, label, f)
	}
	return ts
}

// checkOrder checks that every sender returned before any receiver was
// stopped, and that the sampling stopped after every receiver returned.
func (ts *testSession) checkOrder(t *testing.T) {
	t.Helper()
	ev := ts.log.Events()
	firstRecvStop := min(ts.log.At("stop:recv1"), ts.log.At("stop:recv2"))
	for _, s := range []string{"send1", "send2"} {
		if r := ts.log.At("return:" + s); r < 0 || r > firstRecvStop {
			t.Errorf("%s returned at %d, a receiver stopped at %d: %q", s, r, firstRecvStop, ev)
		}
	}
	stop := ts.log.At("sampling:stop")
	for _, r := range []string{"recv1", "recv2"} {
		if ret := ts.log.At("return:" + r); ret < 0 || (stop >= 0 && ret > stop) {
			t.Errorf("%s returned at %d, the sampling stopped at %d: %q", r, ret, stop, ev)
		}
	}
}

// checkClosed checks that every flow was closed exactly once, after its
// run returned.
func (ts *testSession) checkClosed(t *testing.T) {
	t.Helper()
	ev := ts.log.Events()
	for _, f := range ts.flows {
		if n := ts.log.Count("close:" + f.Name); n != 1 {
			t.Errorf("%s closed %d times: %q", f.Name, n, ev)
		}
		if r, c := ts.log.At("return:"+f.Name), ts.log.At("close:"+f.Name); r >= 0 && c < r {
			t.Errorf("%s closed (%d) before its run returned (%d): %q", f.Name, c, r, ev)
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
	ts.Settle, ts.Grace = 300*time.Millisecond, 2*time.Second
	tm := ts.Start(500*time.Millisecond, 3*time.Second)
	ts.flows[0].Pk.Store(10)
	ts.flows[1].Pk.Store(7)
	ts.flows[2].Pk.Store(5)
	ticks := make(chan session.Progress)
	done := make(chan bool)
	go func() {
		done <- ts.Run(context.Background(), ts.Over(), func(now time.Time) { ticks <- ts.Progress(now) })
	}()
	ts.waitRunning(t)
	ts.clk.Advance(400 * time.Millisecond)
	if ts.log.At("sampling:start") >= 0 {
		t.Fatal("sampling started in the warmup")
	}
	ts.clk.Advance(600 * time.Millisecond)
	for i := 1; i <= 3; i++ {
		p := <-ticks
		if want := tm.Start.Add(time.Duration(i) * time.Second); !p.T.Equal(want) {
			t.Errorf("tick %d at %s, want %s", i, p.T, want)
		}
		if p.SentPkts != 15 || p.RecvPkts != 7 {
			t.Errorf("tick %d: progress %+v, want 15 sent and 7 received", i, p)
		}
		if i < 3 {
			ts.clk.Advance(time.Second)
		}
	}
	sessiontest.WaitFor(t, "the sampling's start", func() bool { return ts.log.At("sampling:start") >= 0 })
	ts.clk.Advance(500 * time.Millisecond) // the end: the senders finish
	if interrupted := <-done; interrupted {
		t.Fatal("run says interrupted")
	}
	stopped := make(chan struct{})
	var between atomic.Bool
	go func() {
		ts.Stop(false, func() {
			between.Store(true)
			if ts.log.At("stop:recv1") >= 0 || ts.log.At("stop:recv2") >= 0 {
				t.Error("receivers stopped before between")
			}
		})
		close(stopped)
	}()
	// The senders ended on their own: settle for what is in flight.
	sessiontest.WaitFor(t, "the settle", func() bool { n, _ := ts.clk.Pending(); return n == 1 })
	if between.Load() {
		t.Fatal("between ran before the settle")
	}
	ts.clk.Advance(300 * time.Millisecond)
	<-stopped
	if !between.Load() {
		t.Error("between did not run")
	}
	ts.checkOrder(t)
	for _, f := range ts.flows {
		if !f.CutAt().IsZero() {
			t.Errorf("%s cut at %s in a run that ended on time", f.Name, f.CutAt())
		}
		if !f.Sender() && f.Grace() != 2*time.Second {
			t.Errorf("%s stopped with grace %s, want 2s", f.Name, f.Grace())
		}
	}
	if s := ts.Seconds(); s != 3 {
		t.Errorf("window %.3f s, want 3", s)
	}
	if samples, began, _ := ts.Samples(); !began || len(samples) != 1 {
		t.Errorf("sampling began %v with %d samples", began, len(samples))
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	ts.checkClosed(t)
}

// TestSessionInterrupted: ctx ends mid-window: run says so, the senders
// stop at once, every flow's window is cut where they stopped, there is no
// settling, and the window is as long as it ran.
func TestSessionInterrupted(t *testing.T) {
	ts := newTestSession()
	ts.Settle = time.Hour // would hang the test if waited for
	tm := ts.Start(time.Second, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- ts.Run(ctx, ts.Over(), func(time.Time) {}) }()
	ts.waitRunning(t)
	ts.clk.Advance(2500 * time.Millisecond)
	cancel()
	if !<-done {
		t.Fatal("run does not say interrupted")
	}
	ts.Stop(true, nil)
	ts.checkOrder(t)
	want := tm.Start.Add(2500 * time.Millisecond)
	for _, f := range ts.flows {
		if !f.CutAt().Equal(want) {
			t.Errorf("%s cut at %s, want %s", f.Name, f.CutAt(), want)
		}
		if ts.log.At("cut:"+f.Name) < ts.log.At("return:send2") || ts.log.At("cut:"+f.Name) < ts.log.At("return:send1") {
			t.Errorf("%s cut before the senders returned: %q", f.Name, ts.log.Events())
		}
	}
	if s := ts.Seconds(); s != 1.5 {
		t.Errorf("window %.3f s, want 1.5", s)
	}
	_ = ts.Close()
	ts.checkClosed(t)
}

// TestSessionStopBeforeWindow: a stop in the warmup leaves the window
// empty and the sampling never started.
func TestSessionStopBeforeWindow(t *testing.T) {
	ts := newTestSession()
	ts.Start(2*time.Second, time.Second)
	ts.clk.Advance(time.Second)
	ts.Stop(true, nil)
	if _, began, _ := ts.Samples(); began || ts.log.At("sampling:start") >= 0 {
		t.Errorf("sampling began in a test stopped in its warmup: %q", ts.log.Events())
	}
	if s := ts.Seconds(); s != 0 {
		t.Errorf("window %.3f s, want 0", s)
	}
	// A start timer that fires late does nothing.
	ts.clk.Advance(time.Hour)
	if ts.log.At("sampling:start") >= 0 {
		t.Error("sampling started after the stop")
	}
	_ = ts.Close()
	ts.checkOrder(t)
	ts.checkClosed(t)
}

// TestSessionCloseWithoutStop: a way out after the start that skips stop
// still stops every flow in order and closes each once; closing twice
// closes nothing more.
func TestSessionCloseWithoutStop(t *testing.T) {
	ts := newTestSession()
	ts.Start(0, 5*time.Second)
	ts.clk.Advance(time.Second)
	sessiontest.WaitFor(t, "the sampling", func() bool { return ts.log.At("sampling:start") >= 0 })
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	ts.checkOrder(t)
	ts.checkClosed(t)
	if ts.log.At("sampling:stop") < 0 {
		t.Error("the sampling outlived the session")
	}
}

// TestSessionCloseBeforeStart: flows made before a failure that came ahead
// of the start are closed once and never run or stopped.
func TestSessionCloseBeforeStart(t *testing.T) {
	ts := newTestSession()
	_ = ts.Close()
	_ = ts.Close()
	ts.checkClosed(t)
	for _, e := range ts.log.Events() {
		if !strings.HasPrefix(e, "close:") {
			t.Errorf("%s before a start", e)
		}
	}
}

// TestSessionCollects: each flow's result is collected once its role is
// stopped (the senders' in time for between), errors carry their flow's
// label, threads keep the order the flows were added in.
func TestSessionCollects(t *testing.T) {
	ts := newTestSession("send2")
	ts.flows[0].Res = session.Result{Counts: []results.Count{{Stream: 0, Packets: 100}}, Threads: []results.ThreadCPU{{Role: "a"}}}
	ts.flows[1].Res = session.Result{Threads: []results.ThreadCPU{{Role: "b"}}, Err: errors.New("recv failed")}
	ts.flows[2].Res = session.Result{Err: errors.New("send failed")}
	ts.flows[3].Res = session.Result{Threads: []results.ThreadCPU{{Role: "c"}}}
	ts.Start(0, time.Second)
	ts.clk.Advance(time.Second)
	var atBetween []results.Count
	ts.Stop(false, func() { atBetween = ts.Entries()[0].Result().Counts })
	if len(atBetween) != 1 || atBetween[0].Packets != 100 {
		t.Errorf("sender's counts at between: %+v", atBetween)
	}
	var roles []string
	for _, th := range ts.Threads() {
		roles = append(roles, th.Role)
	}
	if !slices.Equal(roles, []string{"a", "b", "c"}) {
		t.Errorf("threads %q", roles)
	}
	var errs []string
	for _, err := range ts.Errs() {
		errs = append(errs, err.Error())
	}
	if !slices.Equal(errs, []string{"recv1: recv failed", "send failed"}) {
		t.Errorf("errors %q", errs)
	}
	for _, f := range ts.flows {
		if n := ts.log.Count("collect:" + f.Name); n != 1 {
			t.Errorf("%s collected %d times", f.Name, n)
		}
	}
	_ = ts.Close()
	ts.checkClosed(t)
}

// waitRunning waits until every flow runs and the session ticks.
func (ts *testSession) waitRunning(t *testing.T) {
	t.Helper()
	sessiontest.WaitFor(t, "a ticker", func() bool { _, n := ts.clk.Pending(); return n > 0 })
	for _, f := range ts.flows {
		sessiontest.WaitFor(t, f.Name+" to run", func() bool { return ts.log.At("run:"+f.Name) >= 0 })
	}
}
