package traffic

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"linerate/internal/testenv"
	"linerate/internal/usage"
)

// xdpTestFrame builds an Ethernet frame: IPv4 with the given protocol,
// Header length (words), fragment field and destination port.
func xdpTestFrame(etherType uint16, ihl int, proto byte, frag uint16, dport uint16, payload int) []byte {
	ipLen := ihl * 4
	f := make([]byte, 14+ipLen+8+payload)
	binary.BigEndian.PutUint16(f[12:], etherType)
	ip := f[14:]
	ip[0] = 0x40 | byte(ihl)
	binary.BigEndian.PutUint16(ip[2:], uint16(len(f)-14))
	binary.BigEndian.PutUint16(ip[6:], frag)
	ip[8], ip[9] = 64, proto
	udp := ip[ipLen:]
	binary.BigEndian.PutUint16(udp[0:], 9)
	binary.BigEndian.PutUint16(udp[2:], dport)
	return f
}

// TestXDPCounterProgram runs the program on crafted packets with
// BPF_PROG_TEST_RUN: no interface, no traffic.
func TestXDPCounterProgram(t *testing.T) {
	testenv.RequireRoot(t)
	udp := xdpTestFrame(0x0800, 5, 17, 0x4000, 5300, 18)
	ipv6 := xdpTestFrame(0x86dd, 5, 17, 0, 5300, 18)
	ipv6[14] = 0x60
	badVersion := xdpTestFrame(0x0800, 5, 17, 0, 5300, 18)
	badVersion[14] = 0x65
	cases := []struct {
		name    string
		frame   []byte
		matches bool // counted by a counter for port 5300
		any     bool // counted by a counter for every port
	}{
		{"udp to port", udp, true, true},
		{"udp with options", xdpTestFrame(0x0800, 7, 17, 0, 5300, 18), true, true},
		{"udp full size", xdpTestFrame(0x0800, 5, 17, 0, 5300, 1472), true, true},
		{"udp other port", xdpTestFrame(0x0800, 5, 17, 0, 5301, 18), false, true},
		{"udp port byte-swapped", xdpTestFrame(0x0800, 5, 17, 0, 0xb414, 18), false, true},
		{"later fragment", xdpTestFrame(0x0800, 5, 17, 0x0010, 5300, 18), false, true},
		{"tcp", xdpTestFrame(0x0800, 5, 6, 0, 5300, 18), false, false},
		{"ipv6", ipv6, false, false},
		{"arp", xdpTestFrame(0x0806, 5, 17, 0, 5300, 18), false, false},
		{"ip version 6 in v4 frame", badVersion, false, false},
		{"header length 4", xdpTestFrame(0x0800, 4, 17, 0, 5300, 18), false, false},
		{"truncated ip", udp[:30], false, false},
		{"udp header cut", xdpTestFrame(0x0800, 5, 17, 0, 5300, 18)[:38], false, true},
	}
	for _, mode := range []struct {
		port uint16
		drop bool
	}{{5300, false}, {5300, true}, {0, false}, {0, true}} {
		counts, prog, err := loadXDPCounter(mode.port, mode.drop)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		var wantPkts, wantBytes uint64
		for _, c := range cases {
			counted := c.matches
			if mode.port == 0 {
				counted = c.any
			}
			want := uint32(xdpPass)
			if counted {
				wantPkts++
				wantBytes += uint64(len(c.frame))
				if mode.drop {
					want = xdpDrop
				}
			}
			got, err := prog.Run(&ebpf.RunOptions{Data: c.frame})
			if err != nil {
				t.Fatalf("port %d drop %v, %s: run: %v", mode.port, mode.drop, c.name, err)
			}
			if got != want {
				t.Errorf("port %d drop %v, %s: action %d, want %d", mode.port, mode.drop, c.name, got, want)
			}
		}
		pkts, bytes, err := sumXDPCounts(counts)
		if err != nil {
			t.Fatal(err)
		}
		if pkts != wantPkts || bytes != wantBytes {
			t.Errorf("port %d drop %v: counted %d packets, %d bytes; want %d, %d", mode.port, mode.drop, pkts, bytes, wantPkts, wantBytes)
		}
		prog.Close()
		counts.Close()
	}
}

// attachXDP attaches a counter to lrs1 in B and detaches it when the test
// ends.
func (l *ringLab) attachXDP(t testing.TB, port uint16, drop bool) *XDPCounter {
	t.Helper()
	var c *XDPCounter
	err := l.b.Do(func() error {
		link, err := net.InterfaceByName("lrs1")
		if err != nil {
			return err
		}
		c, err = AttachXDPCounter(link.Index, port, drop)
		return err
	})
	if errors.Is(err, ErrXDPUnsupported) {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

func TestXDPCounterCountsSent(t *testing.T) {
	l := newRingLab(t)
	l.resolve(t)
	l.listen(t, 5300)
	l.listen(t, 5301)
	c := l.attachXDP(t, 5300, false)
	t.Logf("attached in %s mode", c.Mode())
	sent := l.send(t, context.Background(), RingConfig{Iface: "lrs0", DstIP: l.dst, DstPort: 5300, Count: 3000, Rate: 100000, Duration: time.Minute, CPU: -1})
	other := l.send(t, context.Background(), RingConfig{Iface: "lrs0", DstIP: l.dst, DstPort: 5301, Count: 500, FrameSize: 200, Duration: time.Minute, CPU: -1})
	if sent.Packets != 3000 || other.Packets != 500 {
		t.Fatalf("ring sent %d and %d, want 3000 and 500", sent.Packets, other.Packets)
	}
	pkts, bytes, err := c.Count()
	if err != nil {
		t.Fatal(err)
	}
	if pkts != sent.Packets || bytes != sent.Bytes {
		t.Errorf("counter for port 5300: %d packets, %d bytes; sent %d, %d", pkts, bytes, sent.Packets, sent.Bytes)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Count(); err == nil {
		t.Errorf("count after close did not fail")
	}

	all := l.attachXDP(t, 0, false)
	sent = l.send(t, context.Background(), RingConfig{Iface: "lrs0", DstIP: l.dst, DstPort: 5300, Ports: 2, Count: 2000, Duration: time.Minute, CPU: -1})
	pkts, bytes, err = all.Count()
	if err != nil {
		t.Fatal(err)
	}
	if pkts != sent.Packets || bytes != sent.Bytes {
		t.Errorf("counter for every port: %d packets, %d bytes; sent %d, %d", pkts, bytes, sent.Packets, sent.Bytes)
	}
}

func TestXDPDropMode(t *testing.T) {
	l := newRingLab(t)
	l.resolve(t)
	dropped := l.listen(t, 5300)
	passed := l.listen(t, 5301)
	c := l.attachXDP(t, 5300, true)
	// A second program on the same interface is refused, as unavailable.
	err := l.b.Do(func() error {
		link, err := net.InterfaceByName("lrs1")
		if err != nil {
			return err
		}
		second, err := AttachXDPCounter(link.Index, 0, false)
		if err == nil {
			second.Close()
			t.Errorf("a second XDP program attached beside the first")
		} else if !errors.Is(err, ErrXDPUnsupported) {
			t.Errorf("second attach: %v, want ErrXDPUnsupported", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := l.send(t, context.Background(), RingConfig{Iface: "lrs0", DstIP: l.dst, DstPort: 5300, Count: 5000, Duration: time.Minute, CPU: -1})
	other := l.send(t, context.Background(), RingConfig{Iface: "lrs0", DstIP: l.dst, DstPort: 5301, Count: 300, Rate: 50000, Duration: time.Minute, CPU: -1})
	dropped.settle()
	passed.settle()
	pkts, _, err := c.Count()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s mode: sent %d, counted and dropped %d; socket behind got %d; other port got %d of %d", c.Mode(), sent.Packets, pkts, dropped.n, passed.n, other.Packets)
	if pkts != sent.Packets {
		t.Errorf("counter counted %d, ring sent %d", pkts, sent.Packets)
	}
	if dropped.n != 0 {
		t.Errorf("socket on the dropped port received %d datagrams", dropped.n)
	}
	if uint64(passed.n) != other.Packets {
		t.Errorf("socket on another port received %d of %d: drop mode must pass what it does not count", passed.n, other.Packets)
	}
}

func TestAttachXDPCounterBadIndex(t *testing.T) {
	if _, err := AttachXDPCounter(0, 0, false); err == nil || !usage.Is(err) {
		t.Errorf("ifindex 0: %v, want a usage error", err)
	}
}

// BenchmarkRingIntoXDPDrop reports the packet rate of the ring engine into
// an XDP drop program on the peer, 64-byte frames. A timing, not a test.
func BenchmarkRingIntoXDPDrop(b *testing.B) {
	l := newRingLab(b)
	l.resolve(b)
	c := l.attachXDP(b, 5300, true)
	b.ResetTimer()
	start := time.Now()
	sent := l.send(b, context.Background(), RingConfig{Iface: "lrs0", DstIP: l.dst, DstPort: 5300, Count: uint64(b.N), Duration: time.Minute, CPU: -1})
	took := time.Since(start)
	pkts, _, err := c.Count()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(sent.Packets)/took.Seconds(), "sent-pps")
	b.ReportMetric(float64(pkts)/took.Seconds(), "xdp-pps")
}
