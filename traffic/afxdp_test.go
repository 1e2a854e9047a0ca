package traffic

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/results"
	"linerate/traffic/frame"
	"linerate/wire"
)

// skipWithoutAFXDP skips when this process cannot open AF_XDP sockets
// inside ns (a kernel without CONFIG_XDP_SOCKETS, no CAP_NET_RAW).
func skipWithoutAFXDP(t *testing.T, l *lab) {
	t.Helper()
	var why string
	_ = l.a.Do(func() error { why = frame.XDPUnavailable(); return nil })
	if why != "" {
		t.Skipf("AF_XDP unavailable: %s", why)
	}
}

// TestXDPEngine sends through an AF_XDP socket on a veth in copy mode:
// with no XDP program anywhere, and with the server's XDP counter on the
// receiving veth (which puts veth in NAPI mode). The server must count
// every frame, and the counts must agree with the receiving interface's
// (and with the XDP counter's).
func TestXDPEngine(t *testing.T) {
	for _, peerXDP := range []bool{false, true} {
		name := "no XDP program"
		if peerXDP {
			name = "XDP counter on the peer"
		}
		t.Run(name, func(t *testing.T) { testXDPEngine(t, peerXDP) })
	}
}

func testXDPEngine(t *testing.T, peerXDP bool) {
	l := newLab(t, &Server{})
	skipWithoutAFXDP(t, l)
	cfg := l.config(udpSpec(1200*time.Millisecond, wire.Rate{PPS: 20000}))
	cfg.Engine = "xdp"
	cfg.FrameSize = 64
	cfg.Spec.XDP = peerXDP
	before := ifStats(t, l.b, "lrb")
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Engine != "xdp" {
		t.Errorf("engine %q, want xdp", res.Engine)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "copy mode") }) {
		t.Errorf("notes %q: nothing says veth sends in copy mode", res.Notes)
	}
	// The result says so too: veth has no AF_XDP zero-copy, and why.
	if a := res.Targets[0].AFXDP; a == nil || a.Interface != "lra" || a.Sockets < 1 || a.ZeroCopy != 0 || a.Mode != results.XDPGeneric || a.ZeroCopyError == "" {
		t.Errorf("afxdp %+v: want generic (copy mode) sockets on lra and why zero-copy was refused", a)
	}
	if x := res.Targets[0].XDP; peerXDP && (x == nil || x.Mode != results.XDPNative || x.NativeError != "") {
		t.Errorf("xdp counter %+v: veth takes it in native mode", x)
	}
	if len(res.Intervals) == 0 || res.Intervals[0].SentPPS < 10000 {
		t.Errorf("intervals %+v: the first second sent under half the asked 20 kpps", res.Intervals)
	}
	rx := ifStats(t, l.b, "lrb").rxPk - before.rxPk
	s := res.Summary
	t.Logf("xdp: sent %d, received %d, lost %d, lrb rx %d (control included), xdp counter %+v", s.SentPackets, s.ReceivedPackets, s.LostPackets, rx, res.Targets[0].XDP)
	// 1.2 s at 20 kpps: 24000 frames, held on average.
	if !closeTo(s.SentPackets, 24000, 0.01) {
		t.Errorf("sent %d, want 24000 ± 1%%", s.SentPackets)
	}
	if s.LostPackets != 0 || s.ReceivedPackets != s.SentPackets {
		t.Errorf("sent %d, received %d, lost %d: want no loss at 20 kpps", s.SentPackets, s.ReceivedPackets, s.LostPackets)
	}
	// lrb's counter also holds a few ARP and control packets.
	if !closeTo(s.ReceivedPackets, rx, 0.005) {
		t.Errorf("received %d, lrb received %d", s.ReceivedPackets, rx)
	}
	if peerXDP {
		if x := res.Targets[0].XDP; x == nil || (x.Error == "" && !closeTo(x.Packets, s.ReceivedPackets, 0.01)) {
			t.Errorf("xdp counter %+v for %d received", x, s.ReceivedPackets)
		}
	}
}

func TestTXQueuesInUse(t *testing.T) {
	l := newLab(t, &Server{})
	testenv.Veth(t, l.a, "lrq", l.b, "lrq1", 3)
	count := func(iface string) int {
		var n int
		err := l.a.Do(func() error {
			var err error
			n, err = frame.TXQueuesInUse(iface)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("lra"); n != 1 {
		t.Errorf("lra uses %d TX queues, want 1", n)
	}
	if n := count("lrq"); n != 3 {
		t.Errorf("lrq uses %d TX queues, want 3", n)
	}
	if err := l.a.Do(func() error { _, err := frame.TXQueuesInUse("nosuch0"); return err }); err == nil {
		t.Error("no error for an interface that does not exist")
	}
}

// TestXDPEngineSharesAQueue: three ports with two flows each on a veth
// using one TX queue: one AF_XDP socket sends all six streams (it was a
// usage error: a socket per port, a queue per socket), the result says so,
// and each stream arrives whole at its port.
func TestXDPEngineSharesAQueue(t *testing.T) {
	l := newLab(t, &Server{})
	skipWithoutAFXDP(t, l)
	sp := udpSpec(400*time.Millisecond, wire.Rate{PPS: 12000})
	sp.Ports, sp.Streams, sp.Warmup = 3, 2, 0
	cfg := l.config(sp)
	cfg.Engine, cfg.FrameSize = "xdp", 64
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	note := strings.Join(res.Notes, "; ")
	t.Logf("engine %s; notes: %s", res.Engine, note)
	if res.Engine != "xdp" || !strings.Contains(note, "lra uses 1 TX queue(s) for 3 ports: 1 AF_XDP socket(s), each sending the flows of 3 ports") {
		t.Errorf("engine %q, notes %q: want xdp and a note on the shared queue", res.Engine, note)
	}
	if n := len(res.Streams); n != 6 {
		t.Fatalf("%d streams, want 6", n)
	}
	for _, st := range res.Streams {
		if !closeTo(st.SentPackets, 800, 0.02) || st.ReceivedPackets != st.SentPackets || st.LostPackets != 0 {
			t.Errorf("stream %d: sent %d, received %d, lost %d: want 800 ± 2%% each, all received", st.Stream, st.SentPackets, st.ReceivedPackets, st.LostPackets)
		}
	}
}

// Back-to-back tests on one queue: each binds as soon as the one before
// let go (the kernel releases a closed AF_XDP socket a little later).
// With the queue held by another socket for good, --engine auto runs the
// ring and says why.
func TestXDPQueueBusy(t *testing.T) {
	l := newLab(t, &Server{})
	skipWithoutAFXDP(t, l)
	cfg := l.config(udpSpec(300*time.Millisecond, wire.Rate{PPS: 5000}))
	cfg.Spec.Warmup = 0
	cfg.Engine, cfg.FrameSize = "xdp", 64
	for i := range 3 {
		if res, err := Run(context.Background(), cfg); err != nil || res.Engine != "xdp" {
			t.Fatalf("test %d right after the one before: %v", i+1, err)
		}
	}
	var holder *frame.XDPSender
	err := l.a.Do(func() error {
		var err error
		holder, err = frame.NewXDPSender(frame.XDPConfig{RingConfig: frame.RingConfig{Iface: "lra", SrcIP: netip.MustParseAddr("10.99.0.1"),
			DstIP: netip.MustParseAddr("10.99.0.2"), DstPort: 9, Ports: 1, FrameSize: 64, Duration: time.Second}, Queue: 0})
		return err
	})
	if err != nil {
		t.Fatalf("hold queue 0: %v", err)
	}
	defer holder.Close()
	cfg.Engine = "auto"
	cfg.Spec.Threads, cfg.Spec.Ports = 1, 1
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("engine %s; notes %q", res.Engine, res.Notes)
	if res.Engine != "ring" || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "it could not start") }) {
		t.Errorf("engine %q, notes %q: want the ring, saying AF_XDP could not start", res.Engine, res.Notes)
	}
}
