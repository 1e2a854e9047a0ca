package ceiling

import (
	"math"
	"strings"
	"testing"

	"linerate/internal/units"
)

func TestParseSpeed(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"100M", 100_000_000},
		{"1G", 1_000_000_000},
		{"1g", 1_000_000_000},
		{"2.5G", 2_500_000_000},
		{"10G", 10_000_000_000},
		{"25G", 25_000_000_000},
		{"1000000000", 1_000_000_000},
		{"2.5Gb/s", 2_500_000_000},
		{"10Gbps", 10_000_000_000},
		{" 1000M ", 1_000_000_000},
		{"100Mbit/s", 100_000_000},
		{"1.544M", 1_544_000},
	} {
		got, err := ParseSpeed(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSpeed(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "G", "fast", "1X", "-1G", "0", "1e9", "1.5", "0.0001K", "1,000M", "2000000T"} {
		if got, err := ParseSpeed(in); err == nil {
			t.Errorf("ParseSpeed(%q) = %d, want an error", in, got)
		} else if !strings.Contains(err.Error(), "speed") {
			t.Errorf("ParseSpeed(%q) error %q does not say what was wrong", in, err)
		}
	}
}

// ParseSpeed reads what units.Speed writes.
func TestParseSpeedReadsUnitsSpeed(t *testing.T) {
	for _, bps := range []int64{100_000_000, 1_000_000_000, 2_500_000_000, 10_000_000_000, 999, 1500} {
		if back, err := ParseSpeed(units.Speed(bps)); err != nil || back != bps {
			t.Errorf("ParseSpeed(units.Speed(%d)) = %d, %v", bps, back, err)
		}
	}
}

func TestPayloadFrame(t *testing.T) {
	tcp4 := Headers{Proto: TCP}
	for _, c := range []struct {
		name       string
		payload    int
		h          Headers
		bytes, pad int
		l3         int
	}{
		// seeds/002: "88 bytes for a total frame size of 142 bytes plus a 4 byte FCS".
		{"tcp 88 (seed 002)", 88, tcp4, 146, 0, 128},
		{"tcp 0 pads to 64", 0, tcp4, 64, 6, 40},
		{"udp 18 exactly fills 64", 18, Headers{Proto: UDP}, 64, 0, 46},
		{"udp 0", 0, Headers{Proto: UDP}, 64, 18, 28},
		{"udp 1 (64-byte iperf-style probe)", 1, Headers{Proto: UDP}, 64, 17, 29},
		{"tcp 1460 fills MTU 1500", 1460, tcp4, 1518, 0, 1500},
		{"tcp+ts 1448 fills MTU 1500", 1448, Headers{Proto: TCP, TCPTimestamps: true}, 1518, 0, 1500},
		{"udp 1472 fills MTU 1500", 1472, Headers{Proto: UDP}, 1518, 0, 1500},
		{"tcp6 1440 fills MTU 1500", 1440, Headers{Proto: TCP, IPv6: true}, 1518, 0, 1500},
		{"udp6 1452", 1452, Headers{Proto: UDP, IPv6: true}, 1518, 0, 1500},
		{"tcp 88 vlan", 88, Headers{Proto: TCP, VLAN: true}, 150, 0, 128},
		{"udp 0 vlan pads less", 0, Headers{Proto: UDP, VLAN: true}, 64, 14, 28},
		{"udp6 0", 0, Headers{Proto: UDP, IPv6: true}, 66, 0, 48},
	} {
		f, err := PayloadFrame(c.payload, c.h)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if f.Bytes != c.bytes || f.Pad != c.pad || f.L3Bytes != c.l3 || f.Payload != c.payload {
			t.Errorf("%s: got frame %d pad %d l3 %d payload %d; want %d %d %d %d",
				c.name, f.Bytes, f.Pad, f.L3Bytes, f.Payload, c.bytes, c.pad, c.l3, c.payload)
		}
	}
}

func TestFrameErrors(t *testing.T) {
	if _, err := RawFrame(63); err == nil || !strings.Contains(err.Error(), "64-byte Ethernet minimum") {
		t.Errorf("RawFrame(63): %v", err)
	}
	if _, err := RawFrame(MaxFrameBytes + 1); err == nil {
		t.Error("RawFrame(too big): no error")
	}
	if _, err := PayloadFrame(-1, Headers{Proto: TCP}); err == nil {
		t.Error("negative payload: no error")
	}
	if _, err := PayloadFrame(65496, Headers{Proto: TCP}); err == nil {
		t.Error("payload beyond one IPv4 packet: no error")
	}
	if _, err := PayloadFrame(65495, Headers{Proto: TCP}); err != nil {
		t.Errorf("largest IPv4 TCP payload: %v", err)
	}
	if _, err := PayloadFrame(10, Headers{Proto: "sctp"}); err == nil {
		t.Error("sctp: no error")
	}
	if _, err := PayloadFrame(10, Headers{Proto: UDP, TCPTimestamps: true}); err == nil {
		t.Error("UDP with TCP timestamps: no error")
	}
	if _, err := ParseProto("sctp"); err == nil {
		t.Error("ParseProto(sctp): no error")
	}
	if p, err := ParseProto("UDP"); err != nil || p != UDP {
		t.Errorf("ParseProto(UDP) = %q, %v", p, err)
	}
	if _, err := MTUFrame(1280, Headers{Proto: TCP, IPv6: true}); err != nil {
		t.Errorf("IPv6 minimum MTU: %v", err)
	}
	for _, c := range []struct {
		mtu int
		h   Headers
	}{{1279, Headers{Proto: TCP, IPv6: true}}, {67, Headers{Proto: UDP}}, {65536, Headers{Proto: UDP}}} {
		if _, err := MTUFrame(c.mtu, c.h); err == nil || !strings.Contains(err.Error(), "MTU") {
			t.Errorf("MTUFrame(%d, %s): %v", c.mtu, c.h, err)
		}
	}
}

func TestMTUFrame(t *testing.T) {
	for _, c := range []struct {
		mtu            int
		h              Headers
		bytes, payload int
	}{
		{1500, Headers{Proto: TCP}, 1518, 1460},
		{1500, Headers{Proto: TCP, TCPTimestamps: true}, 1518, 1448},
		{9000, Headers{Proto: TCP}, 9018, 8960},
		{9000, Headers{Proto: UDP}, 9018, 8972},
		{1500, Headers{Proto: TCP, IPv6: true}, 1518, 1440},
		{68, Headers{Proto: UDP}, 86, 40},
	} {
		f, err := MTUFrame(c.mtu, c.h)
		if err != nil || f.Bytes != c.bytes || f.Payload != c.payload {
			t.Errorf("MTUFrame(%d, %s) = %d bytes, payload %d, %v; want %d, %d", c.mtu, c.h, f.Bytes, f.Payload, err, c.bytes, c.payload)
		}
	}
}

func TestLineRate(t *testing.T) {
	raw := func(n int) Frame {
		f, err := RawFrame(n)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	tcp88, _ := PayloadFrame(88, Headers{Proto: TCP})
	jumbo, _ := MTUFrame(9000, Headers{Proto: TCP})
	for _, c := range []struct {
		name  string
		speed int64
		f     Frame
		wire  int
		pps   int64
	}{
		{"1G 64-byte frames", 1e9, raw(64), 84, 1_488_095},
		// seeds/002: "166 bytes ... maximum of 753,012 PPS across a gigabit connection".
		{"1G TCP payload 88 (seed 002)", 1e9, tcp88, 166, 753_012},
		{"100M 64", 1e8, raw(64), 84, 148_809},
		{"2.5G 64", 2_500_000_000, raw(64), 84, 3_720_238},
		{"10G 64", 1e10, raw(64), 84, 14_880_952},
		{"25G 64", 25e9, raw(64), 84, 37_202_380},
		{"1G 1518", 1e9, raw(1518), 1538, 81_274},
		{"2.5G 1518", 2_500_000_000, raw(1518), 1538, 203_185},
		{"10G 1518", 1e10, raw(1518), 1538, 812_743},
		{"1G jumbo MTU 9000", 1e9, jumbo, 9038, 13_830},
		{"10G jumbo MTU 9000", 1e10, jumbo, 9038, 138_304},
	} {
		r := LineRate(c.speed, c.f)
		if r.WireBytes != c.wire || r.PPS != c.pps {
			t.Errorf("%s: wire %d pps %d; want %d %d", c.name, r.WireBytes, r.PPS, c.wire, c.pps)
		}
		if r.L1Bps != float64(c.speed) {
			t.Errorf("%s: L1 %g, want the link speed", c.name, r.L1Bps)
		}
		if want := float64(c.speed) * float64(c.f.Bytes) / float64(c.wire); math.Abs(r.L2Bps-want) > 1e-3 {
			t.Errorf("%s: L2 %g, want %g", c.name, r.L2Bps, want)
		}
		if fps := r.FramesPerSecond(); int64(fps) != c.pps {
			t.Errorf("%s: FramesPerSecond %g does not round down to %d", c.name, fps, c.pps)
		}
	}
	// iperf's familiar 941 Mb/s: TCP with timestamps at MTU 1500 on 1 Gb/s.
	f, _ := MTUFrame(1500, Headers{Proto: TCP, TCPTimestamps: true})
	r := LineRate(1e9, f)
	if math.Abs(r.GoodputBps-941_482_444.7) > 1 {
		t.Errorf("1G TCP goodput %f, want 941482444.7", r.GoodputBps)
	}
	if math.Abs(r.L3Bps-1e9*1500/1538) > 1 {
		t.Errorf("1G L3 %f", r.L3Bps)
	}
	// A raw frame has no known payload.
	if r := LineRate(1e9, raw(64)); r.GoodputBps != 0 || r.L3Bps != 0 {
		t.Errorf("raw frame goodput %g l3 %g, want 0", r.GoodputBps, r.L3Bps)
	}
	if got := LineBps(1_488_095.238095238, raw(64)); math.Abs(got-1e9) > 1 {
		t.Errorf("LineBps back to 1G: %g", got)
	}
}
