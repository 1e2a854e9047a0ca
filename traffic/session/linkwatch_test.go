package session

import (
	"net/netip"
	"testing"
	"time"

	"linerate/results"
)

// TestLinkWatchStopIsNoError starts and stops watches of loopback's link
// (in this test's namespace, nothing goes down): the stop closes the
// subscription under a waiting receive, and that is no error of the run's
// (it was "Receive failed: resource temporarily unavailable" in every
// bench's notes).
func TestLinkWatchStopIsNoError(t *testing.T) {
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	for i := range 10 {
		w := NewLinkWatch(results.SideClient, RealClock{}, lo, func(f func() error) error { return f() })
		time.Sleep(20 * time.Millisecond)
		start := time.Now()
		w.stop()
		if ev, err := w.result(start); err != nil || len(ev) != 0 {
			t.Fatalf("watch %d: events %+v, error %v; want neither", i, ev, err)
		}
	}
}
