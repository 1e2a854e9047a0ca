package iperf3

import (
	"net/netip"
	"testing"
	"time"

	"linerate/internal/testenv"
)

// accepted waits (at most 5 s) until the listener on port in ns has no
// connection waiting to be accepted: the server has taken the flood's.
func accepted(t *testing.T, ns *testenv.NetNS, port int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		waiting := -1
		for _, s := range ns.TCPSockets(t) {
			if s.Local.Port() == uint16(port) && s.State == testenv.TCPListen {
				waiting = s.RxQueue
			}
		}
		if waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still wait to be accepted on port %d", waiting, port)
		}
	}
}

// flood holds per silent connections from each of from (addresses added
// to the client's namespace) to the server until the test ends, and
// returns once the server accepted them.
func flood(t *testing.T, p *pair, from []string, per int) {
	t.Helper()
	for _, a := range from {
		p.a.AddAddr(t, "ia", a+"/24")
	}
	p.a.Hold(t, from, serverIP+":5201", per, "")
	accepted(t, p.b, DefaultPort)
}

// Silent connections cannot hold the iperf3 door shut. From an address
// outside --allow they are refused before anything is read (8 of them used
// to turn the allowed client away, "the server is busy running a test",
// for 15 s); from addresses that may use it they hold at most half the
// slots each, and a newcomer takes the slot of whichever address holds
// the most: the real iperf3 client runs its test through either flood.
func TestSilentFloodDoesNotHoldIperf3Door(t *testing.T) {
	for _, tc := range []struct {
		name  string
		allow string
		from  []string
		per   int
	}{
		{"outside --allow", clientIP + "/32", []string{"10.77.0.20"}, 8},
		{"allowed addresses", "", []string{"10.77.0.20", "10.77.0.21"}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &Server{Sampling: fakeSampling}
			if tc.allow != "" {
				srv.Allow = []netip.Prefix{netip.MustParsePrefix(tc.allow)}
			}
			p, done := serverPair(t, srv)
			flood(t, p, tc.from, tc.per)
			js, out := iperf3Client(t, p, "-t", "1", "-P", "4")
			if e, ok := js["error"]; ok {
				t.Fatalf("the allowed client during the flood: %v\n%s", e, out)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("no result from the server")
			}
		})
	}
}
