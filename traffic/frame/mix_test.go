package frame

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"linerate/ceiling"
	"linerate/internal/usage"
	"linerate/wire"
)

// TestFrameMix: each part's headers carry its lengths and a right IPv4
// checksum, and datagram n gets the pattern's part n.
func TestFrameMix(t *testing.T) {
	var sizes []wire.SizePart
	for _, p := range ceiling.SimpleIMIX.Parts {
		sizes = append(sizes, wire.SizePart{Payload: p.Bytes - ringFrameOverhead, Weight: p.Weight})
	}
	c := RingConfig{Iface: "x", SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"), DstPort: 5300, Duration: time.Second, CPU: -1, Sizes: sizes}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if c.FrameSize != 1518 {
		t.Fatalf("frame size %d, want the largest part's 1518", c.FrameSize)
	}
	m := newFrameMix(c)
	slot := buildRingFrame(c)
	pattern := wire.MixPattern(sizes)
	for n := range uint64(30) {
		l := m.put(slot, n)
		want := sizes[pattern[n%uint64(len(pattern))]].Payload
		if int(l) != framePayloadOff+want {
			t.Errorf("datagram %d: length %d, want %d", n, l, framePayloadOff+want)
		}
		ip := slot[ringEthLen:framePayloadOff]
		if got := int(binary.BigEndian.Uint16(ip[2:])); got != int(l)-ringEthLen {
			t.Errorf("datagram %d: IP total length %d, want %d", n, got, int(l)-ringEthLen)
		}
		if got := int(binary.BigEndian.Uint16(slot[frameSrcPortOff+4:])); got != want+ringUDPLen {
			t.Errorf("datagram %d: UDP length %d, want %d", n, got, want+ringUDPLen)
		}
		if ipv4HeaderChecksum(ip[:ringIPv4Len]) != 0 {
			t.Errorf("datagram %d: IPv4 header checksum wrong", n)
		}
	}
	bad := c
	bad.FrameSize = 1000
	if err := bad.validate(); err == nil || !usage.Is(err) {
		t.Errorf("frame size 1000 with a 1518-byte part: %v, want a usage error", err)
	}
}
