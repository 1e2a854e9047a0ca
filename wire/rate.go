package wire

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"linerate/internal/units"
)

// Frame sizes: an Ethernet frame is a 14-byte header, the IP packet and a
// 4-byte FCS (IEEE 802.3). IPv4 headers are 20 bytes without options
// (RFC 791), IPv6 40 (RFC 8200), UDP 8 (RFC 768), TCP 20 without options
// (RFC 9293).
const (
	EthOverhead  = 14 + 4
	ipv4Header   = 20
	ipv6Header   = 40
	udpHeader    = 8
	tcpHeader    = 20
	MinFrameSize = 64
)

// UDPOverhead is the bytes of an Ethernet frame around a UDP payload.
func UDPOverhead(v4 bool) int {
	if v4 {
		return EthOverhead + ipv4Header + udpHeader
	}
	return EthOverhead + ipv6Header + udpHeader
}

// The fastest rates a test may ask: what the fastest standard Ethernet
// link carries, 1.6 Tb/s (IEEE 802.3dj), in bits and in 64-byte frames
// (84 bytes on the wire with preamble and gap). Anything faster could only
// be a typo, and a pacer asked for it would spin without sending.
const (
	MaxRateBPS = 1.6e12
	MaxRatePPS = MaxRateBPS / (84 * 8)
)

// check says what is wrong with an asked rate: negative, not a number, or
// faster than any link.
func (r Rate) check() error {
	switch {
	case math.IsNaN(r.PPS) || math.IsNaN(r.BPS) || math.IsInf(r.PPS, 0) || math.IsInf(r.BPS, 0):
		return fmt.Errorf("rate %s: not a number", r)
	case r.PPS < 0 || r.BPS < 0:
		return fmt.Errorf("rate %s: negative", r)
	case r.PPS > MaxRatePPS:
		return fmt.Errorf("rate %s: faster than any Ethernet link carries (%s pps of 64-byte frames at 1.6 Tb/s)", r, units.Sig(4).Format(MaxRatePPS))
	case r.BPS > MaxRateBPS:
		return fmt.Errorf("rate %s: faster than any Ethernet link (1.6 Tb/s)", r)
	}
	return nil
}

// Rate is an asked sending rate: packets or bits per second. The zero value
// means as fast as possible.
type Rate struct {
	PPS float64 `json:"pps,omitempty"`
	BPS float64 `json:"bps,omitempty"`
}

// Unlimited reports whether the rate asks for as fast as possible.
func (r Rate) Unlimited() bool { return r.PPS <= 0 && r.BPS <= 0 }

// PacketsPerSecond converts the rate to packets of frame bytes per second.
func (r Rate) PacketsPerSecond(frame int) float64 { return r.perSecond(float64(frame)) }

// perSecond is PacketsPerSecond for a mean frame of frame bytes.
func (r Rate) perSecond(frame float64) float64 {
	if r.PPS > 0 {
		return r.PPS
	}
	if r.BPS > 0 && frame > 0 {
		return r.BPS / (frame * 8)
	}
	return 0
}

func (r Rate) String() string {
	switch {
	case r.PPS > 0:
		return units.Sig(4).Format(r.PPS) + "pps"
	case r.BPS > 0:
		return units.Sig(4).Format(r.BPS) + "bps"
	}
	return "unlimited"
}

// ParseRate reads a rate as the user writes it: "0" (as fast as possible),
// "100kpps", "1.5Mpps", "250000pps", "940Mbps", "1Gbit", or "940M" (bits
// per second, as iperf3 -b). Prefixes k, M, G, T are powers of 1000.
func ParseRate(s string) (Rate, error) {
	t := strings.TrimSpace(s)
	if t == "0" || t == "" {
		return Rate{}, nil
	}
	low := strings.ToLower(t)
	var pps bool
	switch {
	case strings.HasSuffix(low, "pps"):
		pps, t = true, t[:len(t)-3]
	case strings.HasSuffix(low, "bps"):
		t = t[:len(t)-3]
	case strings.HasSuffix(low, "bit/s"):
		t = t[:len(t)-5]
	case strings.HasSuffix(low, "bit"):
		t = t[:len(t)-3]
	case strings.HasSuffix(low, "b/s"):
		t = t[:len(t)-3]
	default:
		if _, err := strconv.ParseFloat(t, 64); err == nil {
			return Rate{}, fmt.Errorf("rate %q: give a unit, pps or bps (\"100kpps\", \"900Mbps\"), or 0 for as fast as possible", s)
		}
	}
	v, err := units.Parse(t)
	if err != nil {
		return Rate{}, fmt.Errorf("rate %q: %w", s, err)
	}
	switch {
	case v < 0:
		return Rate{}, fmt.Errorf("rate %q: negative", s)
	case v == 0:
		return Rate{}, fmt.Errorf("rate %q sends nothing: use --rate 0 for as fast as possible", s)
	}
	r := Rate{BPS: v}
	if pps {
		r = Rate{PPS: v}
	}
	if err := r.check(); err != nil {
		return Rate{}, fmt.Errorf("%q: %w", s, err)
	}
	return r, nil
}
