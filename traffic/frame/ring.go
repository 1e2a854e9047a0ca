package frame

// The ring engine: UDP test datagrams written as whole Ethernet frames into
// an AF_PACKET transmit ring (PACKET_TX_RING, TPACKET_V2) that the kernel
// sends straight to the driver (PACKET_QDISC_BYPASS). Frames are built once;
// each send rewrites only the 16-byte test header and the destination port,
// so the cost per packet is the kernel's, not ours. This is how trafgen
// (netsniff-ng) gets its speed.
//
// Facts about the ring come from the kernel's packet(7) man page and
// Documentation/networking/packet_mmap.rst: a TPACKET_V2 frame starts with
// struct tpacket2_hdr (32 bytes); on transmit the frame's data starts at
// TPACKET_ALIGN(sizeof(struct tpacket2_hdr)) = 32 bytes into the frame;
// user space hands a frame to the kernel by setting tp_status to
// TP_STATUS_SEND_REQUEST, the kernel sets it back to TP_STATUS_AVAILABLE when
// it is done with it, and send(2) with a zero length makes the kernel walk
// the ring and send every requested frame.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"linerate/internal/usage"
	"linerate/traffic/udp"
	"linerate/wire"
)

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

	// tpacket2DataOffset is TPACKET_ALIGN(sizeof(struct tpacket2_hdr)),
	// where a transmitted frame's bytes start inside its ring slot
	// (net/packet/af_packet.c, tpacket_parse_header, without
	// PACKET_TX_HAS_OFF).
	tpacket2DataOffset = 32

	// ringBytes is the size the ring aims for; ringMaxFrames caps the
	// number of slots for small frames.
	ringBytes     = 1 << 20
	ringMaxFrames = 32768
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

// RingSender sends UDP test datagrams through an AF_PACKET transmit ring.
// It is used by one goroutine at a time.
type RingSender struct {
	frames
	fd       int
	ring     []byte
	slotSize int
	slots    int
	next     int // the slot the next frame goes into
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
// which holds the largest frame) and the socket engine's mixer, which
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

// ringGeometry chooses the slot size (a power of two holding the tpacket2
// header and the frame), the block size (a page, or one slot when slots are
// bigger) and the number of blocks.
func ringGeometry(frameLen, pageSize int) (slotSize, blockSize, blocks int) {
	slotSize = 128
	for slotSize < tpacket2DataOffset+frameLen {
		slotSize *= 2
	}
	blockSize = max(pageSize, slotSize)
	frames := min(ringBytes/slotSize, ringMaxFrames)
	perBlock := blockSize / slotSize
	blocks = max(1, frames/perBlock)
	return slotSize, blockSize, blocks
}

// NewRingSender checks cfg, fills in the addresses it leaves out, opens the
// AF_PACKET socket on cfg.Iface and maps its transmit ring with every frame
// built. Bad configuration is a usage error; a kernel that refuses the ring
// is an error naming the interface.
func NewRingSender(cfg RingConfig) (*RingSender, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	attrs, err := cfg.onLink("ring")
	if err != nil {
		return nil, err
	}

	s := &RingSender{frames: frames{cfg: cfg, frameLen: cfg.FrameSize - ringFCSLen, mix: newFrameMix(cfg)}, fd: -1}
	if err := s.open(attrs.Index); err != nil {
		s.Close()
		return nil, fmt.Errorf("ring sender on %s: %w", cfg.Iface, err)
	}
	return s, nil
}

// onLink checks that frames of cfg fit its interface (an Ethernet address,
// the MTU) and fills in the addresses cfg leaves out: the interface's MAC
// and first IPv4 address, the next hop's MAC. engine names the engine in
// errors ("ring", "xdp").
func (cfg *RingConfig) onLink(engine string) (*netlink.LinkAttrs, error) {
	link, err := netlink.LinkByName(cfg.Iface)
	if err != nil {
		return nil, usage.Errorf("%s sender: interface %q: %w", engine, cfg.Iface, err)
	}
	attrs := link.Attrs()
	if len(attrs.HardwareAddr) != 6 {
		return nil, usage.Errorf("%s sender: interface %s has no Ethernet address (the %s engine sends Ethernet frames)", engine, cfg.Iface, engine)
	}
	if cfg.FrameSize-ringFCSLen-ringEthLen > attrs.MTU {
		what := fmt.Sprintf("frame size %d", cfg.FrameSize)
		if len(cfg.Sizes) > 1 {
			what = fmt.Sprintf("the mix's largest frame, %d bytes,", cfg.FrameSize)
		}
		return nil, usage.Errorf("%s sender: %s needs an MTU of %d, %s has %d", engine, what, cfg.FrameSize-ringFCSLen-ringEthLen, cfg.Iface, attrs.MTU)
	}
	if cfg.SrcMAC == nil {
		cfg.SrcMAC = attrs.HardwareAddr
	}
	if !cfg.SrcIP.IsValid() {
		if cfg.SrcIP, err = firstIPv4(link); err != nil {
			return nil, err
		}
	}
	if cfg.DstMAC == nil {
		if cfg.DstMAC, err = ResolveNextHop(cfg.Iface, cfg.DstIP); err != nil {
			return nil, err
		}
	}
	return attrs, nil
}

// firstIPv4 is the first IPv4 address of link.
func firstIPv4(link netlink.Link) (netip.Addr, error) {
	addrs, err := netlink.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("ring sender: addresses of %s: %w", link.Attrs().Name, err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok {
			return ip, nil
		}
	}
	return netip.Addr{}, usage.Errorf("ring sender: interface %s has no IPv4 address to send from", link.Attrs().Name)
}

// open makes the socket and the ring and writes every frame into it.
func (s *RingSender) open(ifindex int) error {
	// Protocol 0: the socket only sends, so the kernel never hands it a
	// copy of received packets.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("AF_PACKET socket: %w", err)
	}
	s.fd = fd
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return fmt.Errorf("PACKET_VERSION TPACKET_V2: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
		return fmt.Errorf("PACKET_QDISC_BYPASS: %w", err)
	}
	// A bigger send buffer lets more frames be in flight at once; root may
	// exceed wmem_max. Failure only costs speed.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 8<<20)

	slotSize, blockSize, blocks := ringGeometry(s.frameLen, os.Getpagesize())
	req := unix.TpacketReq{
		Block_size: uint32(blockSize),
		Block_nr:   uint32(blocks),
		Frame_size: uint32(slotSize),
		Frame_nr:   uint32(blocks * (blockSize / slotSize)),
	}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &req); err != nil {
		return fmt.Errorf("PACKET_TX_RING of %d frames of %d bytes: %w", req.Frame_nr, slotSize, err)
	}
	s.slotSize, s.slots = slotSize, int(req.Frame_nr)
	s.ring, err = unix.Mmap(fd, 0, blockSize*blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap transmit ring (%d bytes): %w", blockSize*blocks, err)
	}
	sa := &unix.SockaddrLinklayer{Ifindex: ifindex}
	if err := unix.Bind(fd, sa); err != nil {
		return fmt.Errorf("bind AF_PACKET socket: %w", err)
	}
	frame := buildRingFrame(s.cfg)
	for i := range s.slots {
		off := i * s.slotSize
		copy(s.ring[off+tpacket2DataOffset:], frame)
		hdr := (*unix.Tpacket2Hdr)(unsafe.Pointer(&s.ring[off]))
		hdr.Len = uint32(len(frame))
	}
	return nil
}

// Close unmaps the ring and closes the socket.
func (s *RingSender) Close() error {
	var errs []error
	if s.ring != nil {
		errs = append(errs, unix.Munmap(s.ring))
		s.ring = nil
	}
	if s.fd >= 0 {
		errs = append(errs, unix.Close(s.fd))
		s.fd = -1
	}
	return errors.Join(errs...)
}

// status is the tp_status word of slot i, read and written atomically
// because the kernel changes it concurrently.
func (s *RingSender) status(i int) *uint32 {
	return (*uint32)(unsafe.Pointer(&s.ring[i*s.slotSize]))
}

// kick asks the kernel to send every requested frame, without waiting.
// A full device queue or socket buffer (EAGAIN, ENOBUFS) leaves frames
// requested for the next kick.
func (s *RingSender) kick() error {
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0, unix.EAGAIN, unix.ENOBUFS, unix.EINTR:
		return nil
	}
	return kickError(s.cfg.Iface, e)
}

// waitWritable waits up to a millisecond for the kernel to free a slot.
func (s *RingSender) waitWritable() {
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLOUT}}
	_, _ = unix.Poll(fds, 1)
}

// Run sends until the warmup and Duration have passed, Count measured
// packets have been sent, or ctx ends, then waits (at most a second) for the
// kernel to finish with the frames it was handed and returns what it sent.
// When ctx ends first, Run returns the counts so far together with
// ctx.Err(), so that the caller can print a partial result.
func (s *RingSender) Run(ctx context.Context) (RingCounts, error) {
	return s.RunFrom(ctx, time.Time{})
}

// RunFrom is Run with the warmup starting at start (zero: now), so that
// the measured window is the session's even when the sending thread
// starts late: what a late start owes is sent at once, in the warmup.
func (s *RingSender) RunFrom(ctx context.Context, start time.Time) (RingCounts, error) {
	if s.ring == nil {
		return RingCounts{}, errors.New("ring sender: run after close")
	}
	return s.run(ctx, start, s, "ring")
}

// settle has nothing to ready: the kernel hands a slot back by its status
// word, which fill reads.
func (s *RingSender) settle(context.Context, *pacedRun, time.Time) (bool, error) { return false, nil }

// fill requests up to want frames of r, as many as the ring has free
// slots for.
func (s *RingSender) fill(r *pacedRun, want uint64) (uint64, error) {
	var (
		port = r.port
		sent = time.Now().UnixNano()
		n    uint64
		err  error
	)
	for n < want {
		st := s.status(s.next)
		v := atomic.LoadUint32(st)
		if v != unix.TP_STATUS_AVAILABLE {
			if v&unix.TP_STATUS_WRONG_FORMAT != 0 {
				err = fmt.Errorf("ring sender on %s: the kernel rejected a frame as malformed", s.cfg.Iface)
			}
			break
		}
		var length uint32
		length, port = r.stamp(s.ring[s.next*s.slotSize+tpacket2DataOffset:], port, sent)
		if s.mix != nil {
			hdr := (*unix.Tpacket2Hdr)(unsafe.Pointer(&s.ring[s.next*s.slotSize]))
			hdr.Len = length
		}
		atomic.StoreUint32(st, unix.TP_STATUS_SEND_REQUEST)
		n++
		s.next++
		if s.next == s.slots {
			s.next = 0
		}
	}
	r.filled(n, port)
	return n, err
}

// drain kicks the kernel until every frame is back in user space, for at
// most a second, and returns how many frames it still holds.
func (s *RingSender) drain() uint64 {
	deadline := time.Now().Add(time.Second)
	for {
		var pending uint64
		for i := range s.slots {
			if v := atomic.LoadUint32(s.status(i)); v != unix.TP_STATUS_AVAILABLE {
				pending++
			}
		}
		if pending == 0 || time.Now().After(deadline) {
			return pending
		}
		_ = s.kick()
		s.waitWritable()
	}
}

// ResolveNextHop returns the Ethernet address of the next hop from iface
// towards dst: the gateway of the route to dst through iface, or dst itself
// when it is on the link. It reads the neighbour table and, when the entry
// is missing, sends one empty UDP datagram to dst's discard port (9)
// through iface so that the kernel resolves it (ARP), then waits up to two
// seconds for the entry.
func ResolveNextHop(iface string, dst netip.Addr) (net.HardwareAddr, error) {
	dst = dst.Unmap()
	if !dst.Is4() {
		return nil, usage.Errorf("resolve next hop: %v is not an IPv4 address", dst)
	}
	link, err := netlink.LinkByName(iface)
	if err != nil {
		return nil, usage.Errorf("resolve next hop: interface %q: %w", iface, err)
	}
	ifindex := link.Attrs().Index
	hop := dst
	routes, err := netlink.RouteGetWithOptions(dst.AsSlice(), &netlink.RouteGetOptions{OifIndex: ifindex})
	if err != nil {
		return nil, usage.Errorf("resolve next hop: no route to %v through %s: %w", dst, iface, err)
	}
	for _, r := range routes {
		if r.Gw != nil {
			if gw, ok := netip.AddrFromSlice(r.Gw.To4()); ok {
				hop = gw
			}
		}
	}
	if mac, err := neighMAC(ifindex, hop); err != nil || mac != nil {
		return mac, err
	}
	if err := probeNextHop(iface, dst); err != nil {
		return nil, fmt.Errorf("resolve next hop %v on %s: %w", hop, iface, err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		mac, err := neighMAC(ifindex, hop)
		if err != nil || mac != nil {
			return mac, err
		}
	}
	return nil, fmt.Errorf("resolve next hop %v on %s: no ARP answer within 2s", hop, iface)
}

// neighMAC returns hop's address from the neighbour table of ifindex, or
// nil when there is no usable entry.
func neighMAC(ifindex int, hop netip.Addr) (net.HardwareAddr, error) {
	neighs, err := netlink.NeighList(ifindex, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("neighbour table: %w", err)
	}
	const usable = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY |
		netlink.NUD_PROBE | netlink.NUD_PERMANENT | netlink.NUD_NOARP
	for _, n := range neighs {
		ip, ok := netip.AddrFromSlice(n.IP.To4())
		if ok && ip == hop && n.State&usable != 0 && len(n.HardwareAddr) == 6 {
			return n.HardwareAddr, nil
		}
	}
	return nil, nil
}

// probeNextHop sends one empty UDP datagram to dst's discard port out of iface,
// which makes the kernel resolve the next hop.
func probeNextHop(iface string, dst netip.Addr) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("probe socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.BindToDevice(fd, iface); err != nil {
		return fmt.Errorf("probe socket bound to %s: %w", iface, err)
	}
	err = unix.Sendto(fd, nil, unix.MSG_DONTWAIT, &unix.SockaddrInet4{Port: 9, Addr: dst.As4()})
	if err != nil && !errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("probe %v: %w", dst, err)
	}
	return nil
}
