package traffic

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"linerate/internal/testenv"
	"linerate/internal/usage"
	"linerate/traffic/sock"
	"linerate/traffic/tcp"
	"linerate/wire"
)

// tosCount counts the IPv4 packets of one protocol that reach an
// interface from one address: in all, and those whose TOS byte is tos.
type tosCount struct {
	mu          sync.Mutex
	all, marked uint64
	byTOS       map[uint8]uint64 // every packet, by its TOS byte
}

// of is the packets seen with the TOS byte tos.
func (c *tosCount) of(tos int) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byTOS[uint8(tos)]
}

func (c *tosCount) counts() (all, marked uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.all, c.marked
}

// countTOS reads what reaches iface in ns with a packet socket of its own
// until the test ends.
func countTOS(t *testing.T, ns *testenv.NetNS, iface string, from netip.Addr, proto uint8, tos int) *tosCount {
	t.Helper()
	const ethPIP = 0x0800
	proto16 := uint16(ethPIP<<8&0xff00 | ethPIP>>8)
	var fd int
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(iface)
		if err != nil {
			return err
		}
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(proto16))
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto16, Ifindex: ifi.Index}); err != nil {
			unix.Close(fd)
			return err
		}
		return sock.SetTimeout(fd, unix.SO_RCVTIMEO, 50*time.Millisecond)
	})
	if err != nil {
		t.Fatalf("packet socket on %s: %v", iface, err)
	}
	c := &tosCount{byTOS: map[uint8]uint64{}}
	var stop sync.WaitGroup
	var done bool
	var mu sync.Mutex
	stop.Go(func() {
		buf := make([]byte, 128)
		for {
			mu.Lock()
			d := done
			mu.Unlock()
			if d {
				return
			}
			n, sa, err := unix.Recvfrom(fd, buf, unix.MSG_TRUNC)
			if err != nil || n < 20 {
				continue
			}
			if ll, ok := sa.(*unix.SockaddrLinklayer); !ok || ll.Pkttype == unix.PACKET_OUTGOING {
				continue
			}
			if buf[9] != proto || netip.AddrFrom4([4]byte(buf[12:16])) != from {
				continue
			}
			c.mu.Lock()
			c.all++
			c.byTOS[buf[1]]++
			if int(buf[1]) == tos {
				c.marked++
			}
			c.mu.Unlock()
		}
	})
	t.Cleanup(func() {
		mu.Lock()
		done = true
		mu.Unlock()
		stop.Wait()
		unix.Close(fd)
	})
	return c
}

// TestDSCPOnTheWire runs UDP and TCP both ways with --dscp EF and reads
// the TOS byte of what arrives at each end: both ends mark every data
// packet they send.
func TestDSCPOnTheWire(t *testing.T) {
	l := newLab(t, &Server{})
	a, b := mustAddr("10.99.0.1"), mustAddr("10.99.0.2")
	ef, err := wire.ParseDSCP("ef")
	if err != nil || ef != 46 {
		t.Fatalf("ParseDSCP(ef) = %d, %v", ef, err)
	}
	for _, proto := range []wire.Proto{wire.UDP, wire.TCP} {
		t.Run(string(proto), func(t *testing.T) {
			ip := uint8(unix.IPPROTO_UDP)
			sp := udpSpec(500*time.Millisecond, wire.Rate{PPS: 20000})
			sp.Direction = wire.Bidir
			if proto == wire.TCP {
				ip = unix.IPPROTO_TCP
				sp = wire.Spec{Proto: wire.TCP, Direction: wire.Bidir, Duration: wire.Seconds(500 * time.Millisecond),
					Rate: wire.Rate{BPS: 200e6}, Streams: 1, Ports: 1, Threads: 1}
			}
			sp.DSCP = ef
			atB := countTOS(t, l.b, "lrb", a, ip, wire.TOS(ef))
			atA := countTOS(t, l.a, "lra", b, ip, wire.TOS(ef))
			cfg := l.config(sp)
			cfg.Engine = "socket"
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // the last packets read
			for _, c := range []struct {
				name string
				n    *tosCount
				sent uint64
			}{{"client to server", atB, res.Targets[0].Forward.SentPackets}, {"server to client", atA, res.Targets[0].Reverse.SentPackets}} {
				all, marked := c.n.counts()
				t.Logf("%s %s: %d packets marked EF (0x%02x) of %d; %d data packets sent in the window", proto, c.name, marked, wire.TOS(ef), all, c.sent)
				// TCP's segments pass the veth in GSO batches: fewer
				// packets than segments. The unmarked are the control
				// connection's.
				if c.sent == 0 || marked < 100 || all-marked > 50 || proto == wire.UDP && marked < c.sent*19/20 { // a busy machine may drop a few from the packet socket
					t.Errorf("%s %s: %d of %d packets marked, %d sent", proto, c.name, marked, all, c.sent)
				}
			}
		})
	}
}

// TestStreamDSCPOnTheWire runs TCP both ways with RRUL's marks, one per
// stream (BE, CS1, CS5, EF), and reads the TOS byte of what arrives at
// each end: every mark is on the wire in both directions, and each
// stream's socket, on the end that sends it, carries its own.
func TestStreamDSCPOnTheWire(t *testing.T) {
	l := newLab(t, &Server{})
	a, b := mustAddr("10.99.0.1"), mustAddr("10.99.0.2")
	marks := []int{0, 8, 40, 46}
	sp := wire.Spec{Proto: wire.TCP, Direction: wire.Bidir, Duration: wire.Seconds(700 * time.Millisecond),
		Rate: wire.Rate{BPS: 200e6}, Streams: len(marks), Ports: 1, Threads: 1, StreamDSCP: marks}
	atB := countTOS(t, l.b, "lrb", a, unix.IPPROTO_TCP, 0)
	atA := countTOS(t, l.a, "lra", b, unix.IPPROTO_TCP, 0)
	res, err := Run(context.Background(), l.config(sp))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Spec.StreamDSCP; len(got) != len(marks) {
		t.Errorf("the result's spec has marks %v, want %v", got, marks)
	}
	time.Sleep(100 * time.Millisecond) // the last packets read
	for _, c := range []struct {
		name string
		n    *tosCount
	}{{"client to server", atB}, {"server to client", atA}} {
		for _, m := range marks {
			n := c.n.of(wire.TOS(m))
			t.Logf("%s: %d packets marked %s (0x%02x)", c.name, n, wire.DSCPName(m), wire.TOS(m))
			// BE's are the control connection's too; each stream sends
			// 50 Mbit/s for 0.7 s: about 3000 segments, which pass the
			// veth in GSO batches of up to 64 KiB (at least 60 packets).
			if n < 30 {
				t.Errorf("%s: %d packets marked %s", c.name, n, wire.DSCPName(m))
			}
		}
		all, _ := c.n.counts()
		if other := all - c.n.of(0) - c.n.of(32) - c.n.of(160) - c.n.of(184); other > 0 {
			t.Errorf("%s: %d packets with a mark of no stream", c.name, other)
		}
	}
	if len(res.Streams) != 2*len(marks) {
		t.Fatalf("%d streams, want %d each way", len(res.Streams), len(marks))
	}
	for _, st := range res.Streams {
		if st.TCP == nil || st.TCP.TOS != wire.TOS(marks[st.Stream]) {
			t.Errorf("stream %d %s: TOS read back %+v, want 0x%02x", st.Stream, st.Direction, st.TCP, wire.TOS(marks[st.Stream]))
		}
	}
}

// TestTCPKnobs runs TCP both ways with every knob and reads them back
// from each sending end's sockets (the result's TCP_INFO and
// getsockopt): the window, the congestion control, Nagle off, the pacing
// cap, which the goodput of each stream stays under.
func TestTCPKnobs(t *testing.T) {
	l := newLab(t, &Server{})
	const window, fq = 256 << 10, 80e6
	sp := wire.Spec{Proto: wire.TCP, Direction: wire.Bidir, Duration: wire.Seconds(time.Second), Warmup: wire.Seconds(300 * time.Millisecond),
		Streams: 2, Ports: 1, Threads: 1, Window: window, Congestion: "reno", FQRate: fq}
	res, err := Run(context.Background(), l.config(sp))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Streams) != 4 {
		t.Fatalf("%d streams, want 2 each way", len(res.Streams))
	}
	for _, st := range res.Streams {
		tcp := st.TCP
		if tcp == nil {
			t.Fatalf("stream %d %s: no TCP_INFO", st.Stream, st.Direction)
		}
		t.Logf("stream %d %s: %.1f Mbit/s under a pacing cap of %.0f Mbit/s; %s, sndbuf %d rcvbuf %d, nodelay %v, max pacing %d bit/s",
			st.Stream, st.Direction, st.ReceivedBPS/1e6, fq/1e6, tcp.Congestion, tcp.SndBuf, tcp.RcvBuf, tcp.NoDelay, tcp.MaxPacingRate)
		if tcp.Congestion != "reno" || tcp.SndBuf != 2*window || tcp.RcvBuf != 2*window || !tcp.NoDelay || tcp.MaxPacingRate != fq {
			t.Errorf("stream %d %s: options read back %+v", st.Stream, st.Direction, *tcp)
		}
		if st.ReceivedBPS > fq*1.05 || st.ReceivedBPS < fq/4 {
			t.Errorf("stream %d %s: %.1f Mbit/s, paced at %.0f", st.Stream, st.Direction, st.ReceivedBPS/1e6, fq/1e6)
		}
	}
}

// TestCongestionRefused asks for an algorithm no kernel has: the run is
// refused in one line that names those this kernel has.
func TestCongestionRefused(t *testing.T) {
	l := newLab(t, &Server{})
	sp := wire.Spec{Proto: wire.TCP, Direction: wire.Forward, Duration: wire.Seconds(200 * time.Millisecond), Streams: 1, Ports: 1, Threads: 1,
		Congestion: "nosuchcc"}
	_, err := Run(context.Background(), l.config(sp))
	t.Logf("%v", err)
	if !errors.Is(err, tcp.ErrNoCongestion) || !usage.Is(err) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "this kernel has: ") ||
		!strings.Contains(err.Error(), "reno") {
		t.Fatalf("got %v, want one line naming the kernel's algorithms", err)
	}
}

// TestDSCPEngines: the ring and AF_XDP, which build their own headers,
// refuse a mark by name; IPv6 sockets are marked by traffic class.
func TestDSCPEngines(t *testing.T) {
	sp := udpSpec(time.Second, wire.Rate{})
	sp.DSCP = 46
	for _, fits := range []func(*wire.Spec) error{ringFits, xdpFits} {
		if err := fits(&sp); !errors.Is(err, ErrDSCPEngine) || !usage.Is(err) {
			t.Errorf("got %v, want ErrDSCPEngine", err)
		}
	}
	fd, err := sock.DialUDP(netip.MustParseAddrPort("[::1]:0"), netip.AddrPort{}, 0)
	if err != nil {
		t.Skip("no IPv6:", err)
	}
	defer sock.CloseFD(fd)
	if err := sock.SetDSCP(fd, 46); err != nil {
		t.Fatal(err)
	}
	if tc, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS); err != nil || tc != 0xb8 {
		t.Errorf("IPV6_TCLASS %#x, %v; want 0xb8", tc, err)
	}
}

func TestParseDSCP(t *testing.T) {
	for in, want := range map[string]int{"EF": 46, "bk": 8, "af41": 34, "CS6": 48, "be": 0, "LE": 1, "10": 10, "63": 63} {
		if got, err := wire.ParseDSCP(in); err != nil || got != want {
			t.Errorf("ParseDSCP(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"64", "-1", "AF44", "x"} {
		if _, err := wire.ParseDSCP(in); err == nil {
			t.Errorf("ParseDSCP(%q): no error", in)
		}
	}
}

// TestTCPOverTime: each sending stream of a TCP bench, on both ends,
// carries its TCP_INFO once a second with sane values, the bytes its
// receiver acknowledged growing.
func TestTCPOverTime(t *testing.T) {
	l := newLab(t, &Server{})
	sp := wire.Spec{Proto: wire.TCP, Direction: wire.Bidir, Duration: wire.Seconds(2 * time.Second), Warmup: wire.Seconds(300 * time.Millisecond),
		Streams: 2, Ports: 1, Threads: 1}
	res, err := Run(context.Background(), l.config(sp))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range res.Streams {
		if st.TCP == nil {
			t.Fatalf("stream %d %s: no TCP_INFO", st.Stream, st.Direction)
		}
		ot := st.TCP.OverTime
		t.Logf("stream %d %s: %+v", st.Stream, st.Direction, ot)
		if len(ot) < 2 || len(ot) > 3 {
			t.Errorf("stream %d %s: %d samples over 2.3 s", st.Stream, st.Direction, len(ot))
		}
		for k, s := range ot {
			// A sample is taken on a 1 s ticker from the start: never
			// before its second, late only by how busy the machine is,
			// and within the run.
			if s.T < float64(k)+0.9 || s.T > 2.3+0.5 || k > 0 && s.T <= ot[k-1].T ||
				s.Cwnd == 0 || s.RTTMicros == 0 || s.RTTMicros > 1e6 || s.PacingRate == 0 {
				t.Errorf("stream %d %s: sample %d %+v", st.Stream, st.Direction, k, s)
			}
			// As fast as possible: the receiver acknowledges more every
			// second.
			if s.Acked == 0 || k > 0 && s.Acked <= ot[k-1].Acked {
				t.Errorf("stream %d %s: sample %d acknowledged %d bytes so far", st.Stream, st.Direction, k, s.Acked)
			}
		}
	}
}
