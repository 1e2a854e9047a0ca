package frame

// The AF_XDP engine: the ring engine's frames (buildRingFrame, the same
// test header) handed to the kernel through an AF_XDP socket instead of an
// AF_PACKET ring. The frames live in a UMEM, memory this process maps and
// registers with the socket, cut in equal chunks, one frame per chunk.
// Sending a frame is writing a descriptor (chunk address, length) into the
// socket's TX ring and kicking the kernel with sendto; the kernel hands
// the chunk back through the UMEM's completion ring once the frame is
// gone. The pacing and the counting are the ring engine's (paced.go); only
// the way a frame reaches the kernel differs.
//
// Facts about AF_XDP come from the kernel's include/uapi/linux/if_xdp.h
// and Documentation/networking/af_xdp.rst: a UMEM needs both a fill and a
// completion ring before bind, even to send only; each ring is a power of
// two of entries, mapped at its own page offset (XDP_PGOFF_TX_RING,
// XDP_UMEM_PGOFF_COMPLETION_RING) with the producer, consumer and flags
// words at the offsets XDP_MMAP_OFFSETS reports; TX descriptors are
// struct xdp_desc (addr, len, options), completion entries 64-bit chunk
// addresses. Zero-copy (XDP_ZEROCOPY) needs driver support; every other
// interface (veth among them) sends in copy mode (XDP_COPY), where the
// kernel copies each frame into an skb and hands it straight to the
// driver (no qdisc), at most a budget of frames per sendto
// (XDP_MAX_TX_SKB_BUDGET, 32 unless raised).

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"linerate/internal/usage"
	"linerate/wire"
)

// ErrAFXDPUnavailable is wrapped by the errors of NewXDPSender that come
// from a kernel without AF_XDP sockets (CONFIG_XDP_SOCKETS) or refusing
// them (no CAP_NET_RAW).
var ErrAFXDPUnavailable = errors.New("AF_XDP unavailable")

const (
	// xdpRingEntries is the size of the TX and completion rings and the
	// number of UMEM chunks: every chunk can be in flight at once.
	xdpRingEntries = 4096
	// xdpFillEntries is the fill ring's size: the socket receives
	// nothing, but a UMEM must have one.
	xdpFillEntries = 64
	// xdpTxBudget is the copy-mode budget asked for: frames the kernel
	// sends per sendto (the default 32 costs a system call per 32 frames).
	xdpTxBudget = 512
	// MaxXDPFrameSize is the largest frame (with FCS) the AF_XDP engine
	// sends: one frame per 4096-byte chunk, no multi-buffer frames.
	MaxXDPFrameSize = 4096 + ringFCSLen
)

// XDPConfig says what an XDPSender sends: the ring engine's settings, and
// the queue of the interface the socket binds to.
type XDPConfig struct {
	RingConfig
	// Queue is the interface's TX queue; one AF_XDP socket per queue.
	Queue int
	// CopyOnly skips the zero-copy attempt.
	CopyOnly bool
}

// XDPSender sends UDP test datagrams through an AF_XDP socket. It is used
// by one goroutine at a time.
type XDPSender struct {
	pacedSender
	queue    int
	zeroCopy bool
	// zcErr is why the driver refused zero-copy, when it did.
	zcErr error
	fd    int
	umem  []byte
	chunk int
	txMap []byte
	cqMap []byte
	tx    xdpRing
	cq    xdpRing
	free  []uint64 // chunk addresses that hold no frame in flight
	// took is how fast the kernel took frames off the TX ring in the
	// current run's warmup.
	took txTook
}

// xdpRing is a mapped AF_XDP ring: the shared producer and consumer
// indexes (free-running, masked into the entries) and flags word.
type xdpRing struct {
	producer, consumer, flags *uint32
	entries                   unsafe.Pointer
	mask                      uint32
	// prod and cons are this side's cached indexes.
	prod, cons uint32
}

// ZeroCopy says whether the socket was bound in zero-copy mode.
func (s *XDPSender) ZeroCopy() bool { return s.zeroCopy }

// ZeroCopyError is why a socket in copy mode is not zero-copy: the
// zero-copy bind's error (nil when zero-copy was not tried).
func (s *XDPSender) ZeroCopyError() error { return s.zcErr }

// Queue is the interface queue the socket is bound to.
func (s *XDPSender) Queue() int { return s.queue }

// NewXDPSender checks cfg, fills in the addresses it leaves out, opens an
// AF_XDP socket bound to cfg.Queue of cfg.Iface (zero-copy when the driver
// has it, else copy mode) and writes the frame into every UMEM chunk. Bad
// configuration is a usage error; a kernel without AF_XDP gives an error
// wrapping ErrAFXDPUnavailable.
func NewXDPSender(cfg XDPConfig) (*XDPSender, error) {
	rc := cfg.RingConfig
	if err := rc.validate(); err != nil {
		return nil, fmt.Errorf("xdp: %w", err)
	}
	if rc.FrameSize > MaxXDPFrameSize {
		return nil, usage.Errorf("xdp sender: frame size %d is above %d bytes (one UMEM chunk per frame)", rc.FrameSize, MaxXDPFrameSize)
	}
	if cfg.Queue < 0 {
		return nil, usage.Errorf("xdp sender: queue %d is negative", cfg.Queue)
	}
	attrs, err := rc.onLink("xdp")
	if err != nil {
		return nil, err
	}
	if q := attrs.NumTxQueues; q > 0 && cfg.Queue >= q {
		return nil, usage.Errorf("xdp sender: %s has %d TX queues, no queue %d", rc.Iface, q, cfg.Queue)
	}
	frameLen := rc.FrameSize - ringFCSLen
	chunk := 2048
	if frameLen > chunk {
		chunk = 4096
	}
	// Zero-copy first; copy mode when the driver has none. The error
	// reported is the last mode's: copy mode's, which works everywhere.
	var lastErr, zcErr error
	modes := []bool{true, false}
	if cfg.CopyOnly {
		modes = modes[1:]
	}
	for _, zc := range modes {
		// A socket of the previous test on the same queue is released by
		// the kernel a little after it was closed: the queue is busy
		// (EBUSY) until then.
		for deadline := time.Now().Add(xdpBusyWait); ; time.Sleep(20 * time.Millisecond) {
			s := &XDPSender{pacedSender: pacedSender{cfg: rc, frameLen: frameLen, mix: newFrameMix(rc)}, queue: cfg.Queue, fd: -1, chunk: chunk}
			lastErr = s.open(attrs.Index, zc)
			if lastErr == nil {
				s.zcErr = zcErr
				return s, nil
			}
			s.Close()
			if zc || !errors.Is(lastErr, unix.EBUSY) || time.Now().After(deadline) {
				break
			}
		}
		if errors.Is(lastErr, ErrAFXDPUnavailable) {
			break
		}
		if zc {
			zcErr = lastErr
		}
	}
	if cfg.Queue > 0 && errors.Is(lastErr, unix.EINVAL) {
		// The queue is past the ones the interface uses: veth starts with
		// one, whatever its maximum.
		return nil, usage.Errorf("xdp sender: %s has no TX queue %d in use (one AF_XDP socket per queue): bind a lower queue or raise its queues with `ethtool -L %s tx %d`: %w",
			rc.Iface, cfg.Queue, rc.Iface, cfg.Queue+1, lastErr)
	}
	return nil, fmt.Errorf("xdp sender on %s queue %d: %w", rc.Iface, cfg.Queue, lastErr)
}

// xdpBusyWait is how long a copy-mode bind waits for a queue another
// socket is still releasing.
const xdpBusyWait = time.Second

// sockoptPtr sets a socket option whose value is a struct.
func sockoptPtr(fd, level, opt int, p unsafe.Pointer, size uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(p), size, 0)
	if e != 0 {
		return e
	}
	return nil
}

// open makes the socket, its UMEM and rings, and binds it: zero-copy when
// zc, else copy mode.
func (s *XDPSender) open(ifindex int, zc bool) error {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return fmt.Errorf("%w: AF_XDP socket: %w", ErrAFXDPUnavailable, err)
		}
		return fmt.Errorf("AF_XDP socket: %w", err)
	}
	s.fd = fd
	size := xdpRingEntries * s.chunk
	s.umem, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("UMEM of %d bytes: %w", size, err)
	}
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&s.umem[0]))), Len: uint64(size), Size: uint32(s.chunk)}
	if err := sockoptPtr(fd, unix.SOL_XDP, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return fmt.Errorf("XDP_UMEM_REG (%d chunks of %d bytes): %w", xdpRingEntries, s.chunk, err)
	}
	for _, o := range []struct {
		name     string
		opt, len int
	}{
		{"XDP_UMEM_FILL_RING", unix.XDP_UMEM_FILL_RING, xdpFillEntries},
		{"XDP_UMEM_COMPLETION_RING", unix.XDP_UMEM_COMPLETION_RING, xdpRingEntries},
		{"XDP_TX_RING", unix.XDP_TX_RING, xdpRingEntries},
	} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, o.opt, o.len); err != nil {
			return fmt.Errorf("%s of %d: %w", o.name, o.len, err)
		}
	}
	var off unix.XDPMmapOffsets
	olen := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&olen)), 0); e != 0 {
		return fmt.Errorf("XDP_MMAP_OFFSETS: %w", e)
	}
	if olen != uint32(unsafe.Sizeof(off)) {
		return fmt.Errorf("XDP_MMAP_OFFSETS: %d bytes, want %d (a kernel older than 5.4)", olen, unsafe.Sizeof(off))
	}
	if s.txMap, err = mapXDPRing(fd, unix.XDP_PGOFF_TX_RING, off.Tx, int(unsafe.Sizeof(unix.XDPDesc{})), &s.tx); err != nil {
		return fmt.Errorf("map TX ring: %w", err)
	}
	if s.cqMap, err = mapXDPRing(fd, unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, 8, &s.cq); err != nil {
		return fmt.Errorf("map completion ring: %w", err)
	}
	// Copy mode: more frames per sendto, and room for them in the send
	// buffer. Kernels without the option keep 32; both only cost speed.
	_ = unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, xdpTxBudget)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 8<<20)

	flags := uint16(unix.XDP_COPY)
	if zc {
		flags = unix.XDP_ZEROCOPY
	}
	sa := &unix.SockaddrXDP{Flags: flags | unix.XDP_USE_NEED_WAKEUP, Ifindex: uint32(ifindex), QueueID: uint32(s.queue)}
	if err := unix.Bind(fd, sa); err != nil {
		mode := "copy mode"
		if zc {
			mode = "zero-copy"
		}
		return fmt.Errorf("bind (%s): %w", mode, err)
	}
	s.zeroCopy = zc
	if zc {
		// A zero-copy send is the driver's wakeup; some drivers refuse it
		// without an XDP program of their own (EINVAL, ENETDOWN). An empty
		// kick finds out before the run does: copy mode then.
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0, unix.EAGAIN, unix.EBUSY, unix.ENOBUFS, unix.EINTR:
		default:
			return fmt.Errorf("zero-copy wakeup: %w", e)
		}
	}

	frame := buildRingFrame(s.cfg)
	s.free = make([]uint64, 0, xdpRingEntries)
	for i := xdpRingEntries - 1; i >= 0; i-- {
		addr := uint64(i * s.chunk)
		copy(s.umem[addr:], frame)
		s.free = append(s.free, addr)
	}
	return nil
}

// mapXDPRing maps the ring at page offset pgoff whose entries are entSize
// bytes, and points r at its words.
func mapXDPRing(fd int, pgoff int64, off unix.XDPRingOffset, entSize int, r *xdpRing) ([]byte, error) {
	size := int(off.Desc) + xdpRingEntries*entSize
	m, err := unix.Mmap(fd, pgoff, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, err
	}
	base := unsafe.Pointer(&m[0])
	r.producer = (*uint32)(unsafe.Add(base, off.Producer))
	r.consumer = (*uint32)(unsafe.Add(base, off.Consumer))
	r.flags = (*uint32)(unsafe.Add(base, off.Flags))
	r.entries = unsafe.Add(base, off.Desc)
	r.mask = xdpRingEntries - 1
	r.prod = atomic.LoadUint32(r.producer)
	r.cons = atomic.LoadUint32(r.consumer)
	return m, nil
}

// Close unmaps the rings and the UMEM and closes the socket.
func (s *XDPSender) Close() error {
	var errs []error
	for _, m := range []*[]byte{&s.txMap, &s.cqMap} {
		if *m != nil {
			errs = append(errs, unix.Munmap(*m))
			*m = nil
		}
	}
	// The socket first: the kernel holds the UMEM's pages until it goes.
	if s.fd >= 0 {
		errs = append(errs, unix.Close(s.fd))
		s.fd = -1
	}
	if s.umem != nil {
		errs = append(errs, unix.Munmap(s.umem))
		s.umem = nil
	}
	return errors.Join(errs...)
}

// reclaim takes the chunks the kernel has finished with off the
// completion ring.
func (s *XDPSender) reclaim() {
	r := &s.cq
	prod := atomic.LoadUint32(r.producer)
	for r.cons != prod {
		addr := *(*uint64)(unsafe.Add(r.entries, uintptr(r.cons&r.mask)*8))
		s.free = append(s.free, addr)
		r.cons++
	}
	atomic.StoreUint32(r.consumer, r.cons)
}

// kick asks the kernel to send the queued frames, without waiting. In
// copy mode the sendto does the sending; in zero-copy mode only when the
// driver asks for a wakeup.
func (s *XDPSender) kick() error {
	if s.zeroCopy && atomic.LoadUint32(s.tx.flags)&unix.XDP_RING_NEED_WAKEUP == 0 {
		return nil
	}
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0, unix.EAGAIN, unix.EBUSY, unix.ENOBUFS, unix.EINTR:
		return nil
	}
	return kickError(s.cfg.Iface, e)
}

// waitWritable kicks, then waits up to a millisecond for the kernel to
// complete frames.
func (s *XDPSender) waitWritable() {
	_ = s.kick()
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLOUT}}
	_, _ = unix.Poll(fds, 1)
}

// fill queues up to want frames of r on the TX ring, as many as free
// chunks and ring room allow.
func (s *XDPSender) fill(r *pacedRun, want uint64) (uint64, error) {
	tx := &s.tx
	room := uint64(xdpRingEntries - (tx.prod - atomic.LoadUint32(tx.consumer)))
	want = min(want, room, uint64(len(s.free)))
	var (
		port = r.port
		sent = time.Now().UnixNano()
	)
	for range want {
		addr := s.free[len(s.free)-1]
		s.free = s.free[:len(s.free)-1]
		var length uint32
		length, port = r.stampNext(s.umem[addr:addr+uint64(s.frameLen)], port, sent)
		d := (*unix.XDPDesc)(unsafe.Add(tx.entries, uintptr(tx.prod&tx.mask)*unsafe.Sizeof(unix.XDPDesc{})))
		*d = unix.XDPDesc{Addr: addr, Len: length}
		tx.prod++
	}
	atomic.StoreUint32(tx.producer, tx.prod)
	r.fillDone(want, port)
	return want, nil
}

// inFlight is the number of frames the kernel holds: queued and not yet
// completed.
func (s *XDPSender) inFlight() uint64 { return uint64(xdpRingEntries - len(s.free)) }

// Run sends until the warmup and Duration have passed, Count measured
// packets have been sent, or ctx ends, then waits (at most a second) for
// the kernel to complete the frames it was handed and returns what it
// sent, as RingSender.Run does.
func (s *XDPSender) Run(ctx context.Context) (RingCounts, error) {
	return s.RunFrom(ctx, time.Time{})
}

// RunFrom is Run with the warmup starting at start (zero: now), as
// RingSender.RunFrom.
func (s *XDPSender) RunFrom(ctx context.Context, start time.Time) (RingCounts, error) {
	if s.umem == nil {
		return RingCounts{}, errors.New("xdp sender: run after close")
	}
	s.took = txTook{}
	counts, err := s.runPaced(ctx, start, s, "xdp")
	if err == nil {
		err = s.invalid()
	}
	return counts, err
}

// settle readies a turn at now. In the warmup it finishes the warmup's
// frames before the measured window when the kernel would still be
// sending them as it starts (again: the turn is over); at the window's
// start it lets the warmup frames still on the ring go first. Then it
// takes back the chunks the kernel completed.
func (s *XDPSender) settle(ctx context.Context, r *pacedRun, now time.Time) (again bool, err error) {
	if r.flags&wire.FlagWarmup != 0 {
		s.took.see(now, atomic.LoadUint32(s.tx.consumer))
		pending := s.tx.prod - atomic.LoadUint32(s.tx.consumer)
		if d := s.took.time(pending); d > 0 && now.Before(r.measured) && now.Add(d).After(r.measured) {
			// The kernel would still be sending what the TX ring holds
			// of the warmup when the measured window starts (a slow
			// copy-mode path holds thousands of frames): queue no more
			// warmup and let it finish by then, so that no warmup frame
			// is sent, or dropped on the way, inside the window, where
			// the ends' counters would see it and the test would not
			// count it.
			return true, s.flushWarmup(ctx, r)
		}
		if !now.Before(r.measured) {
			// The window starts with warmup frames still on the ring
			// (the thread was late): they go first.
			s.drain()
		}
	}
	s.reclaim()
	return false, nil
}

// flushWarmup kicks the kernel until the warmup's frames are sent and
// waits for the measured window.
func (s *XDPSender) flushWarmup(ctx context.Context, r *pacedRun) error {
	s.drain()
	return sleep(ctx, time.Until(r.measured))
}

// txTook is how fast the kernel takes frames off the TX ring, measured
// over the warmup.
type txTook struct {
	t0    time.Time
	cons0 uint32
	rate  float64 // frames per second since t0; 0 until known
}

// see records the TX ring's consumer index at now.
func (k *txTook) see(now time.Time, cons uint32) {
	if k.t0.IsZero() {
		k.t0, k.cons0 = now, cons
		return
	}
	if d := now.Sub(k.t0); d >= 10*time.Millisecond {
		k.rate = float64(cons-k.cons0) / d.Seconds()
	}
}

// time is how long the kernel takes to send pending frames at the rate
// seen, and a millisecond of margin; 0 while the rate is unknown.
func (k *txTook) time(pending uint32) time.Duration {
	if k.rate <= 0 || pending == 0 {
		return 0
	}
	return time.Duration(float64(pending)/k.rate*float64(time.Second)) + time.Millisecond
}

// drain kicks the kernel until every chunk is back, for at most a second,
// and returns how many frames it still holds. A chunk comes back once its
// frame left (copy mode: once its skb was freed, sent or dropped).
func (s *XDPSender) drain() uint64 {
	deadline := time.Now().Add(time.Second)
	for {
		s.reclaim()
		if n := s.inFlight(); n == 0 || time.Now().After(deadline) {
			return n
		}
		s.waitWritable()
	}
}

// invalid reports descriptors the kernel refused (XDP_STATISTICS): a
// frame it would not send is a bug here, not a loss on the path.
func (s *XDPSender) invalid() error {
	var st unix.XDPStatistics
	n := uint32(unsafe.Sizeof(st))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&n)), 0); e != 0 {
		return nil
	}
	if st.Tx_invalid_descs > 0 {
		return fmt.Errorf("xdp sender on %s: the kernel refused %d descriptors as invalid", s.cfg.Iface, st.Tx_invalid_descs)
	}
	return nil
}

// XDPUnavailable says why this process cannot open AF_XDP sockets ("" when
// it can).
func XDPUnavailable() string {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Sprintf("AF_XDP socket: %v", err)
	}
	unix.Close(fd)
	return ""
}

// ethtoolChannels is struct ethtool_channels (include/uapi/linux/ethtool.h).
type ethtoolChannels struct {
	Cmd                                         uint32
	MaxRX, MaxTX, MaxOther, MaxCombined         uint32
	RXCount, TXCount, OtherCount, CombinedCount uint32
}

// ethtoolGChannels is ETHTOOL_GCHANNELS.
const ethtoolGChannels = 0x3c

// ifreqData is struct ifreq with its union holding a pointer (ifr_data).
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// TXQueuesInUse is how many TX queues iface uses (ethtool -l: tx +
// combined), in the calling thread's network namespace; 1 when the driver
// does not say (no ETHTOOL_GCHANNELS).
func TXQueuesInUse(iface string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("ethtool socket: %w", err)
	}
	defer unix.Close(fd)
	ch := ethtoolChannels{Cmd: ethtoolGChannels}
	var req ifreqData
	copy(req.name[:unix.IFNAMSIZ-1], iface)
	req.data = unsafe.Pointer(&ch)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req)))
	runtime.KeepAlive(&ch)
	switch {
	case e == unix.EOPNOTSUPP:
		return 1, nil
	case e != 0:
		return 0, fmt.Errorf("ETHTOOL_GCHANNELS on %s: %w", iface, e)
	}
	return max(1, int(ch.TXCount+ch.CombinedCount)), nil
}
