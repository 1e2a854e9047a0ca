package frame

import (
	"encoding/binary"
	"net"
	"net/netip"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"linerate/internal/usage"
	"linerate/traffic/udp"
	"linerate/wire"
)

// What a frame sender sends: the settings (RingConfig), the one frame
// built per size (its Ethernet, IPv4 and UDP headers and a zero payload),
// what each send rewrites in it (the ports and the test header), and what
// a run counts (RingCounts). The ring and AF_XDP senders share all of it.

// Sizes of the headers a ring frame carries.
const (
	ringEthLen  = 14
	ringIPv4Len = 20
	ringUDPLen  = 8
	ringFCSLen  = 4 // the frame check sequence the NIC appends

	// ringFrameOverhead is what a UDP/IPv4 Ethernet frame carries besides
	// its payload, FCS included: FrameSize - ringFrameOverhead = payload.
	ringFrameOverhead = ringEthLen + ringIPv4Len + ringUDPLen + ringFCSLen

	// MinRingFrameSize is the smallest frame the ring engine builds: the
	// 64-byte Ethernet minimum, which leaves an 18-byte UDP payload.
	MinRingFrameSize = 64
)

// Offsets inside a ring frame of the fields the sender rewrites.
const (
	frameSrcPortOff = ringEthLen + ringIPv4Len
	frameDstPortOff = ringEthLen + ringIPv4Len + 2
	framePayloadOff = ringEthLen + ringIPv4Len + ringUDPLen
)

// RingConfig says what a RingSender sends and how fast.
type RingConfig struct {
	// Iface is the interface the frames leave by.
	Iface string
	// SrcMAC defaults to Iface's address; DstMAC to the next hop towards
	// DstIP, resolved with ResolveNextHop.
	SrcMAC, DstMAC net.HardwareAddr
	// SrcIP defaults to Iface's first IPv4 address. DstIP must be IPv4.
	SrcIP, DstIP netip.Addr
	// SrcPort and DstPort of the UDP datagrams; SrcPort 0 becomes 9 (discard).
	SrcPort, DstPort uint16
	// SrcPorts spreads the datagrams to each destination port round-robin
	// over source ports SrcPort .. SrcPort+SrcPorts-1 as well (0 or 1:
	// SrcPort only), so that a flow hash that reads the ports spreads them.
	// Each pair of ports is a stream of its own (RingConfig.streams).
	SrcPorts int
	// Ports spreads the datagrams round-robin over destination ports
	// DstPort .. DstPort+Ports-1 (0 or 1: DstPort only), so that RSS
	// spreads them over receive queues. Each port is a stream of its own.
	Ports int
	// DstPorts, when set, are the destination ports instead, in their
	// order, whatever their numbers (a server's ports need not follow one
	// another); DstPort and Ports are then DstPorts[0] and its length.
	DstPorts []uint16
	// FrameSize is the Ethernet frame size including the 4-byte FCS, as on
	// the wire without preamble: 64 (the minimum) carries 18 bytes of UDP
	// payload. 0 means 64, or the largest part of Sizes.
	FrameSize int
	// Sizes, with two parts or more, is a mix of UDP payloads (as
	// wire.Spec.Sizes) sent in its ratio: each stream's datagram number n
	// has the payload of part wire.MixPattern(Sizes)[n mod its length], as
	// the socket engine sends them, so both ends count each size alike.
	// FrameSize is then the largest part's frame.
	Sizes []wire.SizePart
	// Rate is the packet rate to hold on average, in packets per second (a
	// sender that was descheduled catches up in bursts); 0 sends as fast as
	// the interface takes frames.
	Rate float64
	// Duration bounds the measured part of the run. Warmup, sent before it,
	// is excluded from the counts and marked as warmup in each header.
	Duration, Warmup time.Duration
	// Count, when not 0, stops the run after that many measured packets.
	Count uint64
	// Stream is the stream id in the test header of the datagrams to
	// DstPort from SrcPort; stream Stream+k goes to DstPort+k/SrcPorts
	// (DstPorts[k/SrcPorts]) from SrcPort+k%SrcPorts. Each stream numbers
	// its datagrams from 0.
	Stream uint16
	// CPU pins the sending thread to one CPU; -1 leaves it to the scheduler.
	CPU int
}

// RingCounts is what a ring run handed to the interface: packets whose
// frames the kernel took from the ring, and their bytes from the Ethernet
// header to the end of the payload (no FCS), which is what the interface's
// tx_bytes counter counts.
type RingCounts struct {
	Packets, Bytes uint64
	// WarmupPackets were sent during the warmup and are not in Packets.
	WarmupPackets uint64
	// HeldBack is the measured frames a paced run did not send while its
	// link was down: the rate allowed them, the link did not, and they are
	// not sent late in a burst. Not in Packets.
	HeldBack uint64
	// StreamPackets splits Packets by stream: index k is stream Stream+k
	// (RingConfig.Stream), and StreamWarmup splits WarmupPackets so.
	StreamPackets, StreamWarmup []uint64
	// CPU is the sending thread's CPU time (user + system) during Run, from
	// getrusage(RUSAGE_THREAD); close to Run's wall time means the sender
	// itself was the limit.
	CPU time.Duration
}

// validate checks what can be checked without the machine, and fills
// defaults.
func (c *RingConfig) validate() error {
	if c.Iface == "" {
		return usage.Errorf("ring sender: no interface given")
	}
	if !c.DstIP.IsValid() || !c.DstIP.Unmap().Is4() {
		return usage.Errorf("ring sender: destination %v is not an IPv4 address (the ring engine builds IPv4 frames)", c.DstIP)
	}
	c.DstIP = c.DstIP.Unmap()
	if c.SrcIP.IsValid() {
		if !c.SrcIP.Unmap().Is4() {
			return usage.Errorf("ring sender: source %v is not an IPv4 address", c.SrcIP)
		}
		c.SrcIP = c.SrcIP.Unmap()
	}
	if err := c.validateSizes(); err != nil {
		return err
	}
	if c.FrameSize == 0 {
		c.FrameSize = MinRingFrameSize
	}
	if c.FrameSize < MinRingFrameSize {
		return usage.Errorf("ring sender: frame size %d is below the Ethernet minimum of %d bytes", c.FrameSize, MinRingFrameSize)
	}
	if c.FrameSize > 65535 {
		return usage.Errorf("ring sender: frame size %d is above 65535 bytes", c.FrameSize)
	}
	if len(c.DstPorts) > 0 {
		if slices.Contains(c.DstPorts, 0) {
			return usage.Errorf("ring sender: destination port 0 in %v", c.DstPorts)
		}
		c.DstPort, c.Ports = c.DstPorts[0], len(c.DstPorts)
	}
	if c.Ports < 0 || c.Ports > 65536-int(c.DstPort) && len(c.DstPorts) == 0 {
		return usage.Errorf("ring sender: %d destination ports from %d do not fit below 65536", c.Ports, c.DstPort)
	}
	if c.Ports == 0 {
		c.Ports = 1
	}
	if c.SrcPorts == 0 {
		c.SrcPorts = 1
	}
	if c.SrcPorts < 0 || c.SrcPorts > 65536-max(int(c.SrcPort), 9) {
		return usage.Errorf("ring sender: %d source ports from %d do not fit below 65536", c.SrcPorts, c.SrcPort)
	}
	if int(c.Stream)+c.streams() > 65536 {
		return usage.Errorf("ring sender: %d streams from stream %d do not fit below 65536", c.streams(), c.Stream)
	}
	if c.DstPort == 0 {
		return usage.Errorf("ring sender: destination port 0")
	}
	if len(c.DstPorts) == 0 {
		// One list for stamp, whichever way the ports were given.
		c.DstPorts = make([]uint16, c.Ports)
		for i := range c.DstPorts {
			c.DstPorts[i] = c.DstPort + uint16(i)
		}
	}
	if c.SrcPort == 0 {
		c.SrcPort = 9
	}
	if c.Rate < 0 || c.Rate != c.Rate {
		return usage.Errorf("ring sender: rate %v pps is not a positive number (0 means as fast as possible)", c.Rate)
	}
	if c.Duration <= 0 && c.Count == 0 {
		return usage.Errorf("ring sender: duration %v: give a positive duration", c.Duration)
	}
	if c.Warmup < 0 {
		return usage.Errorf("ring sender: warmup %v is negative", c.Warmup)
	}
	if c.CPU < -1 {
		return usage.Errorf("ring sender: CPU %d (use -1 for any)", c.CPU)
	}
	if c.SrcMAC != nil && len(c.SrcMAC) != 6 {
		return usage.Errorf("ring sender: source MAC %v is not an Ethernet address", c.SrcMAC)
	}
	if c.DstMAC != nil && len(c.DstMAC) != 6 {
		return usage.Errorf("ring sender: destination MAC %v is not an Ethernet address", c.DstMAC)
	}
	return nil
}

// validateSizes checks a mix of sizes: every part a frame of at least
// the Ethernet minimum, FrameSize (when given) the largest part's, which
// it fills in.
func (c *RingConfig) validateSizes() error {
	if len(c.Sizes) < 2 {
		c.Sizes = nil
		return nil
	}
	if len(c.Sizes) > wire.MaxSizeParts {
		return usage.Errorf("ring sender: %d sizes in the mix, at most %d", len(c.Sizes), wire.MaxSizeParts)
	}
	largest := 0
	for _, p := range c.Sizes {
		if f := p.Payload + ringFrameOverhead; f < MinRingFrameSize || p.Payload < wire.HeaderLen {
			return usage.Errorf("ring sender: a %d-byte payload in the mix makes a %d-byte frame: want at least %d bytes and a %d-byte payload", p.Payload, f, MinRingFrameSize, wire.HeaderLen)
		}
		if p.Weight < 1 {
			return usage.Errorf("ring sender: weight %d of the %d-byte payload: want 1 or more", p.Weight, p.Payload)
		}
		largest = max(largest, p.Payload+ringFrameOverhead)
	}
	if c.FrameSize != 0 && c.FrameSize != largest {
		return usage.Errorf("ring sender: frame size %d with a mix whose largest frame is %d bytes", c.FrameSize, largest)
	}
	c.FrameSize = largest
	return nil
}

// frameMix is a mix of frame sizes in the ring and AF_XDP engines: the
// headers of each part's frame (its payload is zeros, as in every slot,
// which holds the largest frame) and the socket engine's udp.Mixer, which
// gives the part of each stream's datagram number.
type frameMix struct {
	*udp.Mixer
	heads [][]byte // Ethernet, IPv4 and UDP headers of each part, lengths and checksum filled in
}

// newFrameMix is the frames of c's mix; nil for one size.
func newFrameMix(c RingConfig) *frameMix {
	m := udp.NewMixer(c.Sizes)
	if m == nil {
		return nil
	}
	fm := &frameMix{Mixer: m}
	for _, p := range c.Sizes {
		pc := c
		pc.FrameSize = p.Payload + ringFrameOverhead
		fm.heads = append(fm.heads, buildRingFrame(pc)[:framePayloadOff])
	}
	return fm
}

// put writes the headers of a stream's datagram number n into frame, a
// slot that holds a frame built by buildRingFrame, and returns the
// frame's length (no FCS). stamp then writes the ports and test header.
func (m *frameMix) put(frame []byte, n uint64) uint32 {
	copy(frame, m.heads[m.Part(n)])
	return uint32(framePayloadOff + m.Payload(n))
}

// frameBytes is the bytes (no FCS) of a stream's datagrams first to
// first+n-1.
func (m *frameMix) frameBytes(first, n uint64) uint64 {
	return m.Count(nil, first, int(n)) + n*framePayloadOff
}

// buildRingFrame returns the Ethernet + IPv4 + UDP frame the ring sends, without
// FCS, its payload zero and the IPv4 header checksum filled in. The UDP
// checksum is 0, which means "none" for UDP over IPv4 (RFC 768).
func buildRingFrame(c RingConfig) []byte {
	n := c.FrameSize - ringFCSLen
	f := make([]byte, n)
	copy(f[0:6], c.DstMAC)
	copy(f[6:12], c.SrcMAC)
	binary.BigEndian.PutUint16(f[12:], unix.ETH_P_IP)

	ip := f[ringEthLen : ringEthLen+ringIPv4Len]
	ip[0] = 0x45 // version 4, 5 words of header
	binary.BigEndian.PutUint16(ip[2:], uint16(n-ringEthLen))
	binary.BigEndian.PutUint16(ip[6:], 0x4000) // don't fragment
	ip[8] = 64                                 // TTL
	ip[9] = unix.IPPROTO_UDP
	src, dst := c.SrcIP.As4(), c.DstIP.As4()
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
	binary.BigEndian.PutUint16(ip[10:], ipv4HeaderChecksum(ip))

	udp := f[ringEthLen+ringIPv4Len:]
	binary.BigEndian.PutUint16(udp[0:], c.SrcPort)
	binary.BigEndian.PutUint16(udp[2:], c.DstPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(len(udp)))
	return f
}

// streams is how many streams the datagrams go round-robin over: each
// destination port from each source port.
func (c *RingConfig) streams() int { return c.Ports * max(c.SrcPorts, 1) }

// stamp writes stream k's ports and the test header h into a frame built
// by buildRingFrame (of a validated config: DstPorts holds every port). The UDP checksum stays 0 (none), so the ports change
// nothing else.
func (c *RingConfig) stamp(frame []byte, k uint16, h wire.Header) {
	n := uint16(max(c.SrcPorts, 1))
	binary.BigEndian.PutUint16(frame[frameSrcPortOff:], c.SrcPort+k%n)
	binary.BigEndian.PutUint16(frame[frameDstPortOff:], c.DstPorts[k/n])
	h.Stream = c.Stream + k
	wire.PutHeader(frame[framePayloadOff:], h)
}

// ipv4HeaderChecksum is the Internet checksum (RFC 1071) of an IPv4 header whose
// checksum field holds zero: the complement of the one's-complement sum of
// its 16-bit words. Over a header with its checksum filled in it returns 0.
func ipv4HeaderChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	if len(h)%2 == 1 {
		sum += uint32(h[len(h)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
