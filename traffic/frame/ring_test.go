package frame

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"linerate/internal/testenv"
	"linerate/internal/usage"
	"linerate/wire"
)

func TestRingConfigValidate(t *testing.T) {
	good := func() RingConfig {
		return RingConfig{Iface: "veth0", DstIP: netip.MustParseAddr("10.0.0.2"), DstPort: 5300, Duration: time.Second, CPU: -1}
	}
	tests := []struct {
		name   string
		change func(*RingConfig)
		want   string // "" = valid
	}{
		{"defaults", func(*RingConfig) {}, ""},
		{"count instead of duration", func(c *RingConfig) { c.Duration, c.Count = 0, 10 }, ""},
		{"jumbo", func(c *RingConfig) { c.FrameSize = 9018 }, ""},
		{"mapped v4", func(c *RingConfig) { c.DstIP = netip.MustParseAddr("::ffff:10.0.0.2") }, ""},
		{"no iface", func(c *RingConfig) { c.Iface = "" }, "no interface"},
		{"ipv6 dst", func(c *RingConfig) { c.DstIP = netip.MustParseAddr("fd00::2") }, "not an IPv4"},
		{"no dst", func(c *RingConfig) { c.DstIP = netip.Addr{} }, "not an IPv4"},
		{"ipv6 src", func(c *RingConfig) { c.SrcIP = netip.MustParseAddr("fd00::1") }, "source fd00::1"},
		{"tiny frame", func(c *RingConfig) { c.FrameSize = 60 }, "below the Ethernet minimum"},
		{"huge frame", func(c *RingConfig) { c.FrameSize = 70000 }, "above 65535"},
		{"negative ports", func(c *RingConfig) { c.Ports = -1 }, "destination ports"},
		{"ports past 65535", func(c *RingConfig) { c.DstPort, c.Ports = 65530, 7 }, "do not fit"},
		{"streams past 65535", func(c *RingConfig) { c.Stream, c.Ports = 65535, 2 }, "streams from stream"},
		{"port zero", func(c *RingConfig) { c.DstPort = 0 }, "port 0"},
		{"negative rate", func(c *RingConfig) { c.Rate = -5 }, "rate"},
		{"NaN rate", func(c *RingConfig) { c.Rate = math.NaN() }, "rate"},
		{"no duration", func(c *RingConfig) { c.Duration = 0 }, "duration"},
		{"negative warmup", func(c *RingConfig) { c.Warmup = -time.Second }, "warmup"},
		{"bad cpu", func(c *RingConfig) { c.CPU = -2 }, "CPU -2"},
		{"short mac", func(c *RingConfig) { c.DstMAC = net.HardwareAddr{1, 2, 3} }, "destination MAC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good()
			tt.change(&c)
			err := c.validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				if c.FrameSize < MinRingFrameSize || c.Ports < 1 || c.SrcPort == 0 || !c.DstIP.Is4() {
					t.Errorf("defaults not filled: %+v", c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("validate = %v, want an error containing %q", err, tt.want)
			}
			if !usage.Is(err) {
				t.Errorf("%v is not a usage error", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestBuildRingFrame(t *testing.T) {
	for _, size := range []int{64, 65, 128, 1518, 9018} {
		c := RingConfig{
			SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
			SrcIP: netip.MustParseAddr("192.0.2.1"), DstIP: netip.MustParseAddr("198.51.100.7"),
			SrcPort: 4000, DstPort: 5300, FrameSize: size,
		}
		f := buildRingFrame(c)
		if len(f) != size-4 {
			t.Fatalf("size %d: frame is %d bytes, want %d (no FCS)", size, len(f), size-4)
		}
		if got := net.HardwareAddr(f[0:6]).String(); got != "02:00:00:00:00:02" {
			t.Errorf("size %d: dst mac %s", size, got)
		}
		if got := net.HardwareAddr(f[6:12]).String(); got != "02:00:00:00:00:01" {
			t.Errorf("size %d: src mac %s", size, got)
		}
		if et := binary.BigEndian.Uint16(f[12:]); et != 0x0800 {
			t.Errorf("size %d: ethertype %#x", size, et)
		}
		ip := f[14:34]
		if ip[0] != 0x45 || ip[9] != 17 || ip[8] != 64 {
			t.Errorf("size %d: ip header % x", size, ip)
		}
		if tl := int(binary.BigEndian.Uint16(ip[2:])); tl != size-18 {
			t.Errorf("size %d: ip total length %d, want %d", size, tl, size-18)
		}
		if sum := ipv4HeaderChecksum(ip); sum != 0 {
			t.Errorf("size %d: checksum over the filled header is %#x, want 0", size, sum)
		}
		if got := netip.AddrFrom4([4]byte(ip[12:16])); got != c.SrcIP {
			t.Errorf("size %d: src ip %v", size, got)
		}
		if got := netip.AddrFrom4([4]byte(ip[16:20])); got != c.DstIP {
			t.Errorf("size %d: dst ip %v", size, got)
		}
		udp := f[34:]
		if sp, dp := binary.BigEndian.Uint16(udp[0:]), binary.BigEndian.Uint16(udp[2:]); sp != 4000 || dp != 5300 {
			t.Errorf("size %d: ports %d -> %d", size, sp, dp)
		}
		if ul := int(binary.BigEndian.Uint16(udp[4:])); ul != size-38 {
			t.Errorf("size %d: udp length %d, want %d", size, ul, size-38)
		}
		if cs := binary.BigEndian.Uint16(udp[6:]); cs != 0 {
			t.Errorf("size %d: udp checksum %#x, want 0 (none)", size, cs)
		}
		if len(f)-framePayloadOff < wire.HeaderLen {
			t.Errorf("size %d: payload %d bytes cannot hold the %d-byte header", size, len(f)-framePayloadOff, wire.HeaderLen)
		}
		if binary.BigEndian.Uint16(f[frameDstPortOff:]) != 5300 {
			t.Errorf("frameDstPortOff %d does not point at the destination port", frameDstPortOff)
		}
	}
}

func TestIPv4HeaderChecksum(t *testing.T) {
	// The header of RFC 1071's neighbour, the classic worked example
	// (Wikipedia, "Internet checksum"): checksum 0xb861.
	h := []byte{0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
		0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7}
	if got := ipv4HeaderChecksum(h); got != 0xb861 {
		t.Fatalf("checksum = %#x, want 0xb861", got)
	}
	binary.BigEndian.PutUint16(h[10:], 0xb861)
	if got := ipv4HeaderChecksum(h); got != 0 {
		t.Fatalf("checksum over a valid header = %#x, want 0", got)
	}
}

func TestRingGeometry(t *testing.T) {
	for _, tt := range []struct{ frameLen, page int }{
		{60, 4096}, {124, 4096}, {1514, 4096}, {9014, 4096}, {60, 16384}, {1514, 65536}, {65531, 4096},
	} {
		slot, block, blocks := ringGeometry(tt.frameLen, tt.page)
		if slot < tpacket2DataOffset+tt.frameLen || slot&(slot-1) != 0 || slot%16 != 0 {
			t.Errorf("%+v: slot %d cannot hold the frame or is not a power of two", tt, slot)
		}
		if block%tt.page != 0 || block%slot != 0 {
			t.Errorf("%+v: block %d is not a multiple of the page and of the slot %d", tt, block, slot)
		}
		frames := blocks * block / slot
		if blocks < 1 || frames > ringMaxFrames || block*blocks > ringBytes+block {
			t.Errorf("%+v: %d blocks of %d bytes, %d frames", tt, blocks, block, frames)
		}
	}
}

// ringLab is a veth pair between two namespaces the test made: the sender
// end "lrs0" (10.201.0.1/24) in A and the receiver end "lrs1"
// (10.201.0.2/24) in B.
type ringLab struct {
	a, b     *testenv.NetNS
	src, dst netip.Addr
}

func newRingLab(t testing.TB) *ringLab {
	t.Helper()
	testenv.RequireRoot(t)
	l := &ringLab{a: testenv.NewNetNS(t), b: testenv.NewNetNS(t),
		src: netip.MustParseAddr("10.201.0.1"), dst: netip.MustParseAddr("10.201.0.2")}
	testenv.Veth(t, l.a, "lrs0", l.b, "lrs1", 1)
	l.a.AddAddr(t, "lrs0", "10.201.0.1/24")
	l.b.AddAddr(t, "lrs1", "10.201.0.2/24")
	return l
}

// linkStats reads an interface's counters inside ns.
func linkStats(t testing.TB, ns *testenv.NetNS, name string) netlink.LinkStatistics {
	t.Helper()
	l, err := ns.Netlink(t).LinkByName(name)
	if err != nil {
		t.Fatalf("find %s in %s: %v", name, ns.Name, err)
	}
	return *l.Attrs().Statistics
}

// send builds a ring sender in A and runs it there.
func (l *ringLab) send(t testing.TB, ctx context.Context, cfg RingConfig) RingCounts {
	t.Helper()
	var counts RingCounts
	err := l.a.Do(func() error {
		s, err := NewRingSender(cfg)
		if err != nil {
			return err
		}
		defer s.Close()
		counts, err = s.Run(ctx)
		return err
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("ring run: %v", err)
	}
	return counts
}

// resolve resolves B's MAC from A, so that later counter reads see no ARP.
func (l *ringLab) resolve(t testing.TB) net.HardwareAddr {
	t.Helper()
	var mac net.HardwareAddr
	if err := l.a.Do(func() (err error) { mac, err = ResolveNextHop("lrs0", l.dst); return err }); err != nil {
		t.Fatalf("resolve: %v", err)
	}
	return mac
}

// ringSink receives test datagrams on a UDP port in B.
type ringSink struct {
	conn   *net.UDPConn
	mu     sync.Mutex
	n      int            // datagrams with a valid header
	warm   int            // of which marked as warmup
	bad    int            // datagrams without a valid header
	seen   map[uint32]int // times each sequence number arrived
	stream map[uint16]int
	done   chan struct{}
}

func (l *ringLab) listen(t testing.TB, port int) *ringSink {
	t.Helper()
	s := &ringSink{seen: map[uint32]int{}, stream: map[uint16]int{}, done: make(chan struct{})}
	err := l.b.Do(func() (err error) {
		s.conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: l.dst.AsSlice(), Port: port})
		return err
	})
	if err != nil {
		t.Fatalf("listen in %s: %v", l.b.Name, err)
	}
	_ = s.conn.SetReadBuffer(8 << 20)
	t.Cleanup(func() { s.conn.Close() })
	go s.loop()
	return s
}

func (s *ringSink) loop() {
	defer close(s.done)
	buf := make([]byte, 65536)
	for {
		n, err := s.conn.Read(buf)
		if err != nil {
			return
		}
		h, ok := wire.ParseHeader(buf[:n])
		s.mu.Lock()
		if !ok {
			s.bad++
		} else {
			s.n++
			s.seen[h.Seq]++
			s.stream[h.Stream]++
			if h.Flags&wire.FlagWarmup != 0 {
				s.warm++
			}
		}
		s.mu.Unlock()
	}
}

// settle waits until no datagram has arrived for 100 ms (at most 2 s),
// then stops the sink.
func (s *ringSink) settle() {
	last, deadline := -1, time.Now().Add(2*time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		n := s.n + s.bad
		s.mu.Unlock()
		if n == last {
			break
		}
		last = n
		time.Sleep(100 * time.Millisecond)
	}
	s.conn.Close()
	<-s.done
}

func within(got, want uint64, frac float64) bool {
	return math.Abs(float64(got)-float64(want)) <= frac*float64(want)
}

func TestRingSenderMatchesInterfaceCounters(t *testing.T) {
	l := newRingLab(t)
	mac := l.resolve(t)
	sink := l.listen(t, 5300) // so that the peer does not answer with ICMP
	txBefore := linkStats(t, l.a, "lrs0")
	rxBefore := linkStats(t, l.b, "lrs1")
	const n = 50000
	c := l.send(t, context.Background(), RingConfig{Iface: "lrs0", DstIP: l.dst, DstPort: 5300, Count: n, Duration: 10 * time.Second, CPU: -1})
	sink.settle()
	tx := linkStats(t, l.a, "lrs0").TxPackets - txBefore.TxPackets
	rx := linkStats(t, l.b, "lrs1").RxPackets - rxBefore.RxPackets
	txBytes := linkStats(t, l.a, "lrs0").TxBytes - txBefore.TxBytes
	t.Logf("next hop %v; ring sent %d packets, %d bytes; lrs0 tx %d (%d bytes); lrs1 rx %d; socket got %d", mac, c.Packets, c.Bytes, tx, txBytes, rx, sink.n)
	if c.Packets != n {
		t.Errorf("ring sent %d packets, asked for %d", c.Packets, n)
	}
	if c.Bytes != c.Packets*60 {
		t.Errorf("ring counted %d bytes for %d 64-byte frames, want %d", c.Bytes, c.Packets, c.Packets*60)
	}
	if !within(tx, c.Packets, 0.005) {
		t.Errorf("sender interface counted %d packets, ring %d: more than 0.5%% apart", tx, c.Packets)
	}
	if !within(txBytes, c.Bytes, 0.005) {
		t.Errorf("sender interface counted %d bytes, ring %d: more than 0.5%% apart", txBytes, c.Bytes)
	}
	if !within(rx, c.Packets, 0.005) {
		t.Errorf("receiver interface counted %d packets, ring %d: more than 0.5%% apart", rx, c.Packets)
	}
}

func TestRingSenderDatagramsReachSocket(t *testing.T) {
	l := newRingLab(t)
	l.resolve(t)
	// Two ports: the sender alternates between them.
	sinks := []*ringSink{l.listen(t, 5400), l.listen(t, 5401)}
	c := l.send(t, context.Background(), RingConfig{
		Iface: "lrs0", DstIP: l.dst, DstPort: 5400, Ports: 2, FrameSize: 100, Stream: 7,
		Rate: 40000, Warmup: 100 * time.Millisecond, Duration: 400 * time.Millisecond, CPU: -1,
	})
	t.Logf("ring sent %d + %d warmup, per port %v", c.Packets, c.WarmupPackets, c.StreamPackets)
	if !within(c.WarmupPackets, 4000, 0.1) || !within(c.Packets, 16000, 0.01) {
		t.Errorf("ring sent %d warmup + %d, want about 4000 + 16000 at 40 kpps", c.WarmupPackets, c.Packets)
	}
	if len(c.StreamPackets) != 2 || c.StreamPackets[0]+c.StreamPackets[1] != c.Packets {
		t.Fatalf("per port %v does not add up to %d", c.StreamPackets, c.Packets)
	}
	var warm int
	for i, s := range sinks {
		s.settle()
		port, stream := 5400+i, uint16(7+i)
		// Each port is one stream, numbered from 0, warmup first.
		sent := c.StreamPackets[i] + framesToPort(c.WarmupPackets, i, 2)
		t.Logf("port %d received %d (%d warmup) of %d", port, s.n, s.warm, sent)
		if s.bad != 0 {
			t.Errorf("port %d: %d datagrams without a test header", port, s.bad)
		}
		if s.stream[stream] != s.n {
			t.Errorf("port %d: %d of %d datagrams carry stream %d: %v", port, s.stream[stream], s.n, stream, s.stream)
		}
		if uint64(s.n) != sent {
			t.Errorf("port %d received %d datagrams, the ring sent %d there", port, s.n, sent)
		}
		for seq, k := range s.seen {
			if k != 1 || uint64(seq) >= sent {
				t.Errorf("port %d: sequence %d arrived %d times (%d sent)", port, seq, k, sent)
				break
			}
		}
		warm += s.warm
	}
	if uint64(warm) != c.WarmupPackets {
		t.Errorf("received %d warmup datagrams, ring sent %d", warm, c.WarmupPackets)
	}
}

func TestFramesToPort(t *testing.T) {
	for _, tt := range []struct {
		n    uint64
		i, p int
		want uint64
	}{
		{0, 0, 1, 0}, {5, 0, 1, 5}, {5, 0, 2, 3}, {5, 1, 2, 2}, {1, 1, 2, 0}, {2, 1, 2, 1},
		{10, 2, 3, 3}, {11, 2, 3, 3}, {9, 0, 3, 3}, {3, 3, 4, 0}, {4, 3, 4, 1},
	} {
		if got := framesToPort(tt.n, tt.i, tt.p); got != tt.want {
			t.Errorf("framesToPort(%d, %d, %d) = %d, want %d", tt.n, tt.i, tt.p, got, tt.want)
		}
	}
}

func TestRingSenderHoldsRate(t *testing.T) {
	l := newRingLab(t)
	l.resolve(t)
	l.listen(t, 5300)
	rxBefore := linkStats(t, l.b, "lrs1")
	start := time.Now()
	c := l.send(t, context.Background(), RingConfig{Iface: "lrs0", DstIP: l.dst, DstPort: 5300, Rate: 20000, Duration: time.Second, CPU: -1})
	took := time.Since(start)
	rx := linkStats(t, l.b, "lrs1").RxPackets - rxBefore.RxPackets
	t.Logf("20 kpps for 1s: ring sent %d, peer received %d, in %v", c.Packets, rx, took)
	if !within(c.Packets, 20000, 0.01) {
		t.Errorf("ring sent %d packets, want 20000 ±1%%", c.Packets)
	}
	if !within(rx, c.Packets, 0.005) {
		t.Errorf("peer received %d, ring sent %d", rx, c.Packets)
	}
}

func TestRingSenderStopsOnCancel(t *testing.T) {
	l := newRingLab(t)
	l.resolve(t)
	l.listen(t, 5300)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var (
		counts RingCounts
		runErr error
	)
	start := time.Now()
	err := l.a.Do(func() error {
		s, err := NewRingSender(RingConfig{Iface: "lrs0", DstIP: l.dst, DstPort: 5300, Duration: time.Minute, CPU: 0})
		if err != nil {
			return err
		}
		defer s.Close()
		counts, runErr = s.Run(ctx)
		if p, b := s.Progress(); p != counts.Packets || b != counts.Bytes {
			t.Errorf("progress %d packets, %d bytes; run counted %d, %d", p, b, counts.Packets, counts.Bytes)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("run took %v after its context ended at 200ms", took)
	}
	if !errors.Is(runErr, context.DeadlineExceeded) {
		t.Errorf("run error = %v, want the context's", runErr)
	}
	if counts.Packets == 0 {
		t.Errorf("no packets counted before the cancel")
	}
	if counts.CPU <= 0 || counts.CPU > 2*time.Second {
		t.Errorf("sending thread used %v of CPU in a 200ms run", counts.CPU)
	}
}

func TestResolveNextHop(t *testing.T) {
	l := newRingLab(t)
	peer, err := l.b.Netlink(t).LinkByName("lrs1")
	if err != nil {
		t.Fatal(err)
	}
	want := peer.Attrs().HardwareAddr.String()
	if got := l.resolve(t).String(); got != want {
		t.Errorf("on-link next hop = %s, want the peer's %s", got, want)
	}
	// A destination behind the peer resolves to the peer.
	h := l.a.Netlink(t)
	link, err := h.LinkByName("lrs0")
	if err != nil {
		t.Fatal(err)
	}
	_, dst, _ := net.ParseCIDR("10.202.0.0/24")
	if err := h.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: dst, Gw: net.IP{10, 201, 0, 2}}); err != nil {
		t.Fatal(err)
	}
	err = l.a.Do(func() error {
		mac, err := ResolveNextHop("lrs0", netip.MustParseAddr("10.202.0.9"))
		if err != nil {
			return err
		}
		if mac.String() != want {
			t.Errorf("next hop via gateway = %s, want the peer's %s", mac, want)
		}
		// Nobody answers for .99: an error, after the wait.
		if _, err := ResolveNextHop("lrs0", netip.MustParseAddr("10.201.0.99")); err == nil {
			t.Errorf("resolved 10.201.0.99, which nobody owns")
		}
		if _, err := ResolveNextHop("nosuch0", l.dst); err == nil || !usage.Is(err) {
			t.Errorf("unknown interface: %v, want a usage error", err)
		}
		if _, err := NewRingSender(RingConfig{Iface: "lo", DstIP: l.dst, DstPort: 9, Duration: time.Second}); err == nil || !usage.Is(err) {
			t.Errorf("ring sender on lo: %v, want a usage error (no Ethernet address)", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRingSender reports the packet rate of the ring engine over a veth
// pair with 64-byte frames into a socket on the peer. A timing, not a test.
func BenchmarkRingSender(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	l := newRingLab(b)
	l.resolve(b)
	l.listen(b, 5300)
	b.ResetTimer()
	start := time.Now()
	c := l.send(b, context.Background(), RingConfig{Iface: "lrs0", DstIP: l.dst, DstPort: 5300, Count: uint64(b.N), Duration: time.Minute, CPU: -1})
	b.ReportMetric(float64(c.Packets)/time.Since(start).Seconds(), "pps")
}
