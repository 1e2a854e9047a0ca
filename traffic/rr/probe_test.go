package rr

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"linerate/wire"
)

var loopback = netip.MustParseAddr("127.0.0.1")

// slowEcho answers probes on loopback after holding each for hold, and
// writes held (a function of the time it really held it) into the reply.
func slowEcho(t *testing.T, hold time.Duration, held func(time.Duration) time.Duration) netip.AddrPort {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(loopback, 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			got := time.Now()
			time.Sleep(hold)
			buf[1] = wire.FlagReply
			if n >= wire.ProbeLen {
				wire.PutHeld(buf[:n], held(time.Since(got)))
			}
			_, _ = c.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	return netip.MustParseAddrPort(c.LocalAddr().String())
}

// probeFor runs a prober against to for d and returns its round trips.
func probeFor(t *testing.T, to netip.AddrPort, interval, d time.Duration) []time.Duration {
	t.Helper()
	p, err := NewProber(loopback, to, interval, true)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	p.finish(100 * time.Millisecond)
	if len(p.replies) < 3 {
		t.Fatalf("%d replies to %d probes", len(p.replies), p.sent[PhaseIdle])
	}
	var rtts []time.Duration
	for _, r := range p.replies {
		rtts = append(rtts, r.rtt)
	}
	return rtts
}

// The round trip is the path's: the time the echo held the probe (it says
// how long) is left out, and so is the time the reply waited to be read
// (the prober reads replies only at its next probe, 50 ms on; the round
// trip ends at the kernel's receipt). On loopback that leaves well under
// 10 ms; counting either delay would give 20 ms or more.
func TestProbeRoundTripIsThePath(t *testing.T) {
	to := slowEcho(t, 30*time.Millisecond, func(d time.Duration) time.Duration { return d })
	for i, rtt := range probeFor(t, to, 50*time.Millisecond, 400*time.Millisecond) {
		if rtt <= 0 || rtt >= 10*time.Millisecond {
			t.Errorf("probe %d: round trip %s, want the loopback's (under 10 ms) without the echo's 30 ms", i+1, rtt)
		}
	}
}

// A hold time that does not fit in the round trip (an echo that lies, or
// a corrupted reply) is not believed: the round trip is kept whole.
func TestProbeIgnoresImpossibleHold(t *testing.T) {
	to := slowEcho(t, 20*time.Millisecond, func(time.Duration) time.Duration { return time.Hour })
	for i, rtt := range probeFor(t, to, 50*time.Millisecond, 300*time.Millisecond) {
		if rtt < 20*time.Millisecond || rtt > time.Second {
			t.Errorf("probe %d: round trip %s, want the echo's 20 ms hold in it", i+1, rtt)
		}
	}
}

// linerate's echo answers a probe with itself flagged as a reply and how
// long it held it; a probe too short to carry that (an older client's,
// 16 bytes) comes back as it was sent, but flagged.
func TestEchoSaysHowLongItHeld(t *testing.T) {
	e, err := NewEcho(loopback, loopback)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(loopback, e.Port())))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, size := range []int{wire.ProbeLen, wire.HeaderLen} {
		probe := make([]byte, size)
		wire.PutHeader(probe, wire.Header{Flags: wire.FlagProbe, Seq: 7, Sent: time.Now().UnixNano()})
		if _, err := c.Write(probe); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		reply := make([]byte, 64)
		n, err := c.Read(reply)
		if err != nil {
			t.Fatalf("%d-byte probe: %v", size, err)
		}
		h, ok := wire.ParseHeader(reply[:n])
		if n != size || !ok || h.Flags != wire.FlagReply || h.Seq != 7 {
			t.Fatalf("%d-byte probe: reply of %d bytes, %+v", size, n, h)
		}
		if held := wire.Held(reply[:n]); size == wire.ProbeLen && (held <= 0 || held > time.Second) {
			t.Errorf("held %s, want the echo's time between the kernel's receipt and the reply", held)
		}
	}
}
