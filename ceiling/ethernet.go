package ceiling

import (
	"fmt"
	"strings"

	"linerate/wire"
)

// Sizes of what surrounds a payload on Ethernet, in bytes.
// Preamble, SFD, minimum frame and inter-packet gap: IEEE 802.3-2018
// clause 4.4.2 and 3.1.1; VLAN tag: IEEE 802.1Q-2018 clause 9.
// IPv4 header without options: RFC 791; IPv6 fixed header: RFC 8200;
// TCP header without options: RFC 9293; timestamps option: RFC 7323 (10
// bytes, padded to 12 with two NOPs as Linux sends it); UDP: RFC 768.
const (
	PreambleBytes  = 7
	SFDBytes       = 1
	IFGBytes       = 12
	HeaderBytes    = 14 // destination, source, EtherType
	FCSBytes       = 4
	VLANTagBytes   = 4
	MinFrameBytes  = 64 // destination MAC through FCS, padding included
	IPv4Bytes      = 20
	IPv6Bytes      = 40
	TCPBytes       = 20
	TCPTSOptBytes  = 12
	UDPBytes       = 8
	WireExtraBytes = PreambleBytes + SFDBytes + IFGBytes // 20 bytes each frame costs beyond itself
)

// MaxFrameBytes bounds the frames this package reasons about: an IPv4
// packet of 65535 bytes in a VLAN-tagged frame. No NIC sends larger.
const MaxFrameBytes = 65535 + HeaderBytes + VLANTagBytes + FCSBytes

// Proto is the L4 protocol of a payload: the test's protocol.
type Proto = wire.Proto

// The protocols a payload can ride on.
const (
	TCP = wire.TCP
	UDP = wire.UDP
)

// ParseProto reads "tcp" or "udp", in any case, as a user writes them.
func ParseProto(s string) (Proto, error) {
	p, err := wire.ParseProto(strings.ToLower(strings.TrimSpace(s)))
	if err != nil {
		return "", fmt.Errorf("bad protocol %q: want tcp or udp", s)
	}
	return p, nil
}

// Headers says what wraps an L4 payload in a frame.
type Headers struct {
	Proto Proto `json:"proto"`
	IPv6  bool  `json:"ipv6,omitempty"`
	// TCPTimestamps adds the 12-byte timestamps option Linux puts on every
	// segment by default (net.ipv4.tcp_timestamps=1).
	TCPTimestamps bool `json:"tcp_timestamps,omitempty"`
	// VLAN adds one 802.1Q tag.
	VLAN bool `json:"vlan,omitempty"`
}

// L3Bytes is the IP and L4 header size.
func (h Headers) L3Bytes() (int, error) {
	n := IPv4Bytes
	if h.IPv6 {
		n = IPv6Bytes
	}
	switch h.Proto {
	case TCP:
		n += TCPBytes
		if h.TCPTimestamps {
			n += TCPTSOptBytes
		}
	case UDP:
		if h.TCPTimestamps {
			return 0, fmt.Errorf("the timestamps option is TCP's; a UDP payload has none")
		}
		n += UDPBytes
	default:
		return 0, fmt.Errorf("bad protocol %q: want tcp or udp", h.Proto)
	}
	return n, nil
}

func (h Headers) l2Bytes() int {
	if h.VLAN {
		return HeaderBytes + VLANTagBytes + FCSBytes
	}
	return HeaderBytes + FCSBytes
}

func (h Headers) String() string {
	ip := "IPv4"
	if h.IPv6 {
		ip = "IPv6"
	}
	s := strings.ToUpper(string(h.Proto)) + "/" + ip
	if h.TCPTimestamps {
		s += "+timestamps"
	}
	if h.VLAN {
		s += "/VLAN"
	}
	return s
}

// Frame is one Ethernet frame as the arithmetic sees it.
type Frame struct {
	// Bytes runs from the destination MAC through the FCS, padding included.
	Bytes int `json:"bytes"`
	// Pad is the padding added to reach the 64-byte minimum.
	Pad int `json:"pad,omitempty"`
	// L3Bytes is the IP packet (header and all); 0 when not known.
	L3Bytes int `json:"l3_bytes,omitempty"`
	// Payload is the L4 payload (what iperf counts); 0 when not known.
	Payload int `json:"payload,omitempty"`
	// Headers is set when the frame was built from a payload or an MTU.
	Headers *Headers `json:"headers,omitempty"`
}

// WireBytes is what the frame occupies on the wire: the frame plus
// preamble, SFD and the inter-frame gap.
func (f Frame) WireBytes() int { return f.Bytes + WireExtraBytes }

func (f Frame) String() string {
	s := fmt.Sprintf("%d-byte frame", f.Bytes)
	if f.Headers != nil {
		s += fmt.Sprintf(" (%s, payload %d", f.Headers, f.Payload)
		if f.Pad > 0 {
			s += fmt.Sprintf(", %d padding", f.Pad)
		}
		s += ")"
	}
	return s
}

// RawFrame is a frame of n bytes, destination MAC through FCS.
func RawFrame(n int) (Frame, error) {
	if n < MinFrameBytes {
		return Frame{}, fmt.Errorf("a %d-byte frame is under the %d-byte Ethernet minimum (FCS included)", n, MinFrameBytes)
	}
	if n > MaxFrameBytes {
		return Frame{}, fmt.Errorf("a %d-byte frame is larger than any frame a NIC sends (%d)", n, MaxFrameBytes)
	}
	return Frame{Bytes: n}, nil
}

// PayloadFrame is the frame that carries an L4 payload of n bytes: L2
// header, IP and L4 headers, payload, padding to 64 bytes, FCS. TCP
// payload 88 over IPv4 gives a 146-byte frame.
func PayloadFrame(n int, h Headers) (Frame, error) {
	l3h, err := h.L3Bytes()
	if err != nil {
		return Frame{}, err
	}
	if n < 0 {
		return Frame{}, fmt.Errorf("a payload of %d bytes: it cannot be negative", n)
	}
	max := 65535 - l3h
	if h.IPv6 {
		max = 65535 + IPv6Bytes - l3h // IPv6 payload length excludes the fixed header
	}
	if n > max {
		return Frame{}, fmt.Errorf("a payload of %d bytes is more than one %s packet holds (%d)", n, h, max)
	}
	f := Frame{L3Bytes: l3h + n, Payload: n, Headers: &h}
	f.Bytes = f.L3Bytes + h.l2Bytes()
	if f.Bytes < MinFrameBytes {
		f.Pad = MinFrameBytes - f.Bytes
		f.Bytes = MinFrameBytes
	}
	return f, nil
}

// MTUFrame is the largest frame an interface with that MTU sends, filled
// with one L4 payload: MTU 1500 is a 1518-byte frame carrying 1460 bytes of
// TCP payload (1448 with timestamps); MTU 9000 a 9018-byte frame.
func MTUFrame(mtu int, h Headers) (Frame, error) {
	l3h, err := h.L3Bytes()
	if err != nil {
		return Frame{}, err
	}
	min := 68 // RFC 791: every IPv4 host takes 68-byte datagrams
	if h.IPv6 {
		min = 1280 // RFC 8200 section 5
	}
	if mtu < min || mtu > 65535 {
		return Frame{}, fmt.Errorf("MTU %d is out of range for %s (%d to 65535)", mtu, h, min)
	}
	return PayloadFrame(mtu-l3h, h)
}

// Rate is what a link of one speed carries when every frame is the same.
type Rate struct {
	SpeedBps  int64 `json:"speed_bps"`
	Frame     Frame `json:"frame"`
	WireBytes int   `json:"wire_bytes"`
	// PPS is whole frames per second, rounded down as the seeds print it
	// (1 Gb/s, 64-byte frames: 1,488,095).
	PPS int64 `json:"pps"`
	// L1Bps counts preamble, SFD and gap too: it is the link speed.
	L1Bps float64 `json:"l1_bps"`
	// L2Bps counts frames from destination MAC through FCS.
	L2Bps float64 `json:"l2_bps"`
	// L3Bps counts IP packets; 0 when the frame has no known IP content.
	L3Bps float64 `json:"l3_bps,omitempty"`
	// GoodputBps counts L4 payload (what iperf reports); 0 when unknown.
	GoodputBps float64 `json:"goodput_bps,omitempty"`
}

// LineRate is what a link of speedBps carries in frames like f, back to
// back with the minimum gap.
func LineRate(speedBps int64, f Frame) Rate {
	w := int64(f.WireBytes())
	r := Rate{SpeedBps: speedBps, Frame: f, WireBytes: int(w)}
	if w <= 0 || speedBps <= 0 {
		return r
	}
	r.PPS = speedBps / (w * 8)
	s := float64(speedBps)
	r.L1Bps = s
	r.L2Bps = s * float64(f.Bytes) / float64(w)
	r.L3Bps = s * float64(f.L3Bytes) / float64(w)
	r.GoodputBps = s * float64(f.Payload) / float64(w)
	return r
}

// FramesPerSecond is the exact (fractional) frame rate behind Rate.PPS.
func (r Rate) FramesPerSecond() float64 {
	if r.WireBytes == 0 {
		return 0
	}
	return float64(r.SpeedBps) / float64(r.WireBytes*8)
}

// LineBps turns a frame rate into the link speed it would fill: fps frames
// of f each, preamble, SFD and gap counted.
func LineBps(fps float64, f Frame) float64 {
	return fps * float64(f.WireBytes()*8)
}

// StandardFrames are the frame sizes RFC 2544 section 9.1 lists for
// Ethernet, plus the 9018-byte frame of MTU 9000.
var StandardFrames = []int{64, 128, 256, 512, 1024, 1280, 1518, 9018}
