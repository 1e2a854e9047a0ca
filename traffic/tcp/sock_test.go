package tcp

import (
	"testing"

	"linerate/results"
)

// TestEndOf: an end's stats are those it read, in their order; the
// other end's are left out.
func TestEndOf(t *testing.T) {
	stats := []results.TCPStat{{Stream: 0, Side: "receiver"}, {Stream: 0, Side: "sender"}, {Stream: 1, Side: "sender"}, {Stream: 1, Side: "receiver"}}
	got := SenderEnd.Of(stats)
	if len(got) != 2 || got[0].Stream != 0 || got[1].Stream != 1 || got[0].Side != "sender" || got[1].Side != "sender" {
		t.Errorf("the sender's stats: %+v", got)
	}
	if got := ReceiverEnd.Of(stats[1:3]); got != nil {
		t.Errorf("the receiver's stats among senders': %+v, want none", got)
	}
}
