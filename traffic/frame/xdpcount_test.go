package frame

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"linerate/source/xdpcount"
)

// attachXDP attaches a counter to lrs1 in B and detaches it when the test
// ends.
func (l *ringLab) attachXDP(t testing.TB, port uint16, drop bool) *xdpcount.Counter {
	t.Helper()
	var c *xdpcount.Counter
	err := l.b.Do(func() error {
		link, err := net.InterfaceByName("lrs1")
		if err != nil {
			return err
		}
		c, err = xdpcount.Attach(link.Index, port, drop)
		return err
	})
	if errors.Is(err, xdpcount.ErrUnsupported) {
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
		second, err := xdpcount.Attach(link.Index, 0, false)
		if err == nil {
			second.Close()
			t.Errorf("a second XDP program attached beside the first")
		} else if !errors.Is(err, xdpcount.ErrUnsupported) {
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
