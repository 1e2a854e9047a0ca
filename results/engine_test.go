package results

import "testing"

// The ring and AF_XDP send below the socket, from the interface, past
// its qdiscs; the socket engine and auto's choice of it do not.
func TestEngineBelowSocket(t *testing.T) {
	for e, want := range map[Engine]bool{EngineAuto: false, EngineSocket: false, EngineRing: true, EngineXDP: true, "": false} {
		if got := e.BelowSocket(); got != want {
			t.Errorf("%q.BelowSocket() = %v, want %v", e, got, want)
		}
		if got := BypassesQdisc(string(e)); got != want {
			t.Errorf("BypassesQdisc(%q) = %v, want %v", e, got, want)
		}
	}
}
