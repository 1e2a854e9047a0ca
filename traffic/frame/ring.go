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
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The ring's geometry.
const (
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

// RingSender sends UDP test datagrams through an AF_PACKET transmit ring.
// It is used by one goroutine at a time.
type RingSender struct {
	pacedSender
	fd       int
	ring     []byte
	slotSize int
	slots    int
	next     int // the slot the next frame goes into
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

	s := &RingSender{pacedSender: pacedSender{cfg: cfg, frameLen: cfg.FrameSize - ringFCSLen, mix: newFrameMix(cfg)}, fd: -1}
	if err := s.open(attrs.Index); err != nil {
		s.Close()
		return nil, fmt.Errorf("ring sender on %s: %w", cfg.Iface, err)
	}
	return s, nil
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
	return s.runPaced(ctx, start, s, "ring")
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
		length, port = r.stampNext(s.ring[s.next*s.slotSize+tpacket2DataOffset:], port, sent)
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
	r.fillDone(n, port)
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
