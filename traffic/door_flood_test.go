package traffic

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"linerate/internal/admit"
	"linerate/wire"
)

// fillDoor enters n handshakes from addrs (round robin) and fails the test
// if one is refused.
func fillDoor(t *testing.T, d *door, n int, addr func(i int) netip.Addr) []*admit.Slot {
	t.Helper()
	var ts []*admit.Slot
	for i := range n {
		tk, err := d.enter(addr(i), nil)
		if err != nil {
			t.Fatalf("enter %s: %v", addr(i), err)
		}
		ts = append(ts, tk)
	}
	return ts
}

// What docs/security.md promises about a handshake under way while the
// slots are flooded.
func TestDoorKeepsHandshakeUnderFlood(t *testing.T) {
	v6 := func(site, n int) netip.Addr {
		return netip.MustParseAddr(fmt.Sprintf("2001:db8:%x:%x::1", site, n))
	}
	client := netip.MustParseAddr("2001:db8:1:1::7")
	for _, tc := range []struct {
		name    string
		flood   func(i int) netip.Addr
		evicted int // arrivals after the client's that take its slot; 0: none ever
	}{
		// A whole /48 (65536 /64s) other than the client's is one site.
		{"one /48", func(i int) netip.Addr { return v6(0xaaaa, i) }, 0},
		// Fewer than 31 sites: one of them holds two slots.
		{"30 /48s", func(i int) netip.Addr { return v6(0x100+i%30, i) }, 0},
		// One address, or a few, in the client's own /64.
		{"8 addresses in the client's /64", func(i int) netip.Addr {
			return netip.MustParseAddr(fmt.Sprintf("2001:db8:1:1::%x", 0x100+i%8))
		}, 0},
		// The limit: 32 sites, or addresses of the client's own /64, each
		// holding one slot, must open 32 connections while the client's
		// handshake is under way.
		{"32 /48s", func(i int) netip.Addr { return v6(0x100+i, i) }, maxPending},
		{"the client's /64", func(i int) netip.Addr {
			return netip.MustParseAddr(fmt.Sprintf("2001:db8:1:1::%x", 0x100+i))
		}, maxPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDoor(nil)
			fillDoor(t, d, maxPending, tc.flood)
			c, err := d.enter(client, nil)
			if err != nil {
				t.Fatalf("the client is refused: %v", err)
			}
			for i := range 1000 {
				if _, err := d.enter(tc.flood(maxPending+i), nil); err != nil && tc.evicted == 0 {
					continue // refused: its address holds its share
				}
				if c.Gone() {
					if tc.evicted == 0 || i+1 < tc.evicted {
						t.Fatalf("the client's slot given up after %d arrivals (want %d)", i+1, tc.evicted)
					}
					return
				}
				if n := d.slots.Len(); n > maxPending {
					t.Fatalf("%d handshakes pending", n)
				}
			}
			if tc.evicted != 0 {
				t.Fatalf("the client kept its slot through 1000 arrivals; want it given up after %d", tc.evicted)
			}
		})
	}
}

// The flood of issue 18: 4 silent connections from each of 8 addresses,
// re-opened as they close, used to turn away a client with the secret
// ("busy: 32 connections are authenticating"). It gets in.
func TestSilentFloodDoesNotLockOut(t *testing.T) {
	s := &Server{Token: "s3cret", authTimeout: 300 * time.Millisecond}
	s.init()
	addr := startServer(t, s)
	flooders := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9"}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, from := range flooders {
		for range maxPendingPerSource {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
				// Bounded: at most 200 connections each, until stop.
				for range 200 {
					select {
					case <-stop:
						return
					default:
					}
					c, err := d.Dial("tcp", addr)
					if err != nil {
						time.Sleep(10 * time.Millisecond)
						continue
					}
					// Silent until the server closes it.
					_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
					_, _ = c.Read(make([]byte, 512))
					c.Close()
				}
			}()
		}
	}
	defer func() { close(stop); wg.Wait() }()
	// Wait (bounded) until the flood holds every slot.
	waitPending(t, s, maxPending)
	for i := range 3 {
		rc := dialRaw(t, addr)
		if m := rc.handshake("s3cret"); m == nil || m.Type != wire.MsgWelcome {
			t.Fatalf("attempt %d during the flood: %+v, want welcome", i, m)
		}
		rc.c.Close()
	}
}

// pending is how many handshakes s has under way.
func pending(s *Server) int { return s.door.slots.Len() }

// waitPending waits (at most 5 s) until s has n handshakes under way.
func waitPending(t *testing.T, s *Server, n int) {
	t.Helper()
	for i := 0; pending(s) != n; i++ {
		if i == 1000 {
			t.Fatalf("%d handshakes under way, want %d", pending(s), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holdRelay forwards connections to addr; the first one's bytes from the
// client are held until release is closed, so that its handshake is
// still under way when a flood comes. It stops with the test.
func holdRelay(t *testing.T, addr string, release <-chan struct{}) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for first := true; ; first = false {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				c.Close()
				continue
			}
			held := first
			wg.Add(2)
			go func() {
				defer wg.Done()
				if held {
					<-release
				}
				_, _ = io.Copy(s, c)
				s.Close()
			}()
			go func() { defer wg.Done(); _, _ = io.Copy(c, s); c.Close() }()
			t.Cleanup(func() { c.Close(); s.Close() })
		}
	}()
	return ln.Addr().String()
}

// A client whose handshake slot is given to a newer connection (32 silent
// ones from as many /24s arrive while its hello is held: it is the oldest
// of equals) is answered busy; it tries once more a moment later and gets
// in while the flood still holds every slot. It used to fail with "busy:
// 32 connections are authenticating; this one's slot went to a newer one".
func TestClientRetriesWhenItsSlotIsGiven(t *testing.T) {
	s := &Server{Token: "s3cret", authTimeout: 10 * time.Second}
	s.init()
	addr := startServer(t, s)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	relay := holdRelay(t, addr, release)
	tg := &target{name: "server", addr: netip.MustParseAddrPort(relay)}
	done := make(chan error, 1)
	go func() { done <- tg.connect(context.Background(), &Config{Token: "s3cret"}) }()
	t.Cleanup(func() {
		if tg.conn != nil {
			tg.conn.Close()
		}
	})
	waitPending(t, s, 1)
	// The flood: silent, held open until the test ends.
	for i := range maxPending {
		d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, byte(i+1), 1)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	waitPending(t, s, maxPending)
	free()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("connect during the flood: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("connect did not return")
	}
	if tg.serverID == "" {
		t.Error("no welcome")
	}
	// Its second try took the oldest flood connection's slot.
	if n := pending(s); n != maxPending-1 {
		t.Errorf("%d handshakes pending after the client got in, want the flood's %d", n, maxPending-1)
	}
}
