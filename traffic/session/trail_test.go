package session_test

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestProgressAt: what a flow had counted at a moment the session did not
// stop at (a dead peer's last report) is read from its progress at the
// start, at each tick and at the senders' stop, in a straight line
// between the two readings around it; the count after the last reading
// (the senders' stop) is never taken for an earlier moment.
func TestProgressAt(t *testing.T) {
	ts := newTestSession()
	tm := ts.Start(0, 10*time.Second)
	send := ts.flows[0]
	e := ts.Entries()[0]
	ticked := make(chan struct{})
	done := make(chan bool)
	go func() { done <- ts.Run(context.Background(), ts.Over(), func(time.Time) { ticked <- struct{}{} }) }()
	ts.waitRunning(t)
	for _, n := range []uint64{1000, 3000} {
		send.Pk.Store(n)
		send.By.Store(n * 100)
		ts.clk.Advance(time.Second)
		<-ticked
	}
	ts.Halt(tm.Start.Add(1500*time.Millisecond), errors.New("the peer died"))
	if !<-done {
		t.Fatal("run does not say stopped early")
	}
	send.Pk.Store(5000) // sent after the last tick, before the stop
	send.By.Store(500000)
	ts.Stop(true, nil)
	for _, c := range []struct {
		at     time.Duration
		pk, by float64
	}{{0, 0, 0}, {500 * time.Millisecond, 500, 50000}, {1500 * time.Millisecond, 2000, 200000}, {2 * time.Second, 3000, 300000}, {5 * time.Second, 5000, 500000}} {
		pk, by, ok := ts.ProgressAt(e, tm.Start.Add(c.at))
		if !ok || pk != c.pk || by != c.by {
			t.Errorf("at %s: %v packets, %v bytes (ok %v); want %v, %v", c.at, pk, by, ok, c.pk, c.by)
		}
	}
	if _, _, ok := ts.ProgressAt(nil, tm.Start); ok {
		t.Error("an entry not of the session has a progress")
	}
	_ = ts.Close()
}
