package traffic

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Batch sizes: one sendmmsg/recvmmsg moves up to this many datagrams.
const (
	sendBatch = 128
	recvBatch = 256
	// recvSlot is how much of each datagram a receiver copies: the header
	// is all it needs (the rest is cut with MSG_TRUNC; the length is kept).
	recvSlot = 64
)

// Count is what one end counted for one stream in the measured window.
type Count struct {
	Stream  int    `json:"stream"`
	Packets uint64 `json:"packets"`
	// Bytes is UDP payload or TCP goodput bytes.
	Bytes uint64 `json:"bytes"`
	// Unique, Dup and Reorder are kept by UDP receivers.
	Unique  uint64 `json:"unique,omitempty"`
	Dup     uint64 `json:"dup,omitempty"`
	Reorder uint64 `json:"reorder,omitempty"`
	// Warmup counts the packets (UDP) or bytes (TCP) of the warmup, not in
	// the figures above.
	Warmup uint64 `json:"warmup_packets,omitempty"`
	// Late counts the TCP bytes a receiver read after the measured window
	// (sent in it or before, delivered after it), not in the figures above.
	Late uint64 `json:"late_bytes,omitempty"`
}

// Timing is when a test's senders run: from Start, the warmup until
// Measure, then the measured window until End.
type Timing struct {
	Start, Measure, End time.Time
}

// ThreadCPU is how busy one engine thread was: CPU time (user+system, from
// getrusage RUSAGE_THREAD) over its wall time.
type ThreadCPU struct {
	Role    string  `json:"role"` // "udp-send", "udp-recv", ...
	CPU     int     `json:"cpu"`  // pinned CPU, -1 when not pinned
	Seconds float64 `json:"seconds"`
	Busy    float64 `json:"busy"` // 0..1
	// Behind is packets a paced sender gave up on because it was not
	// scheduled (or not fast enough) to send them in time.
	Behind uint64 `json:"behind,omitempty"`
	// Preempted is involuntary context switches: the CPU was taken away.
	Preempted int64 `json:"preempted,omitempty"`
}

// threadUsage returns the calling thread's CPU time.
func threadUsage() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// preemptions returns the calling thread's involuntary context switches.
func preemptions() int64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return int64(ru.Nivcsw)
}

// pin binds the calling (locked) thread to cpu; -1 leaves it free.
func pin(cpu int) error {
	if cpu < 0 {
		return nil
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin thread to cpu %d: %w", cpu, err)
	}
	return nil
}

// udpFlow is one connected UDP socket carrying one stream.
type udpFlow struct {
	fd     int
	stream uint16
	seq    uint32
	total  uint64 // packets sent, warmup included
	count  Count
}

// UDPSender sends datagrams on a set of connected sockets with batched
// sendmmsg, one OS thread per sender thread, each pacing its own share of
// the rate with a token bucket. It is the "socket" send engine.
type UDPSender struct {
	threads []*sendThread
	flows   []*udpFlow
	stop    atomic.Bool
}

type sendThread struct {
	flows   []*udpFlow
	rate    float64 // packets per second, 0 = unlimited
	payload int
	cpu     int
	packets atomic.Uint64 // live total, warmup included
	bytes   atomic.Uint64
	usage   ThreadCPU
	err     error
	errs    uint64 // transient send errors (ENOBUFS, ECONNREFUSED...)
}

// udpSenderConfig says how to build a UDPSender.
type udpSenderConfig struct {
	fds     []int    // connected sockets, one per stream
	streams []uint16 // stream id of each; nil: the index
	payload int
	pps     float64 // total; 0 = unlimited
	threads int
	cpus    []int // pinning, round robin; empty = none
}

func newUDPSender(c udpSenderConfig) *UDPSender {
	s := &UDPSender{}
	nt := min(max(c.threads, 1), len(c.fds))
	for i := range nt {
		cpu := -1
		if len(c.cpus) > 0 {
			cpu = c.cpus[i%len(c.cpus)]
		}
		s.threads = append(s.threads, &sendThread{payload: c.payload, cpu: cpu})
	}
	for i, fd := range c.fds {
		id := uint16(i)
		if c.streams != nil {
			id = c.streams[i]
		}
		f := &udpFlow{fd: fd, stream: id, count: Count{Stream: int(id)}}
		s.flows = append(s.flows, f)
		t := s.threads[i%nt]
		t.flows = append(t.flows, f)
	}
	if c.pps > 0 {
		per := c.pps / float64(len(c.fds))
		for _, t := range s.threads {
			t.rate = per * float64(len(t.flows))
		}
	}
	return s
}

// Run sends until the timing ends or Stop is called, and returns what went
// per stream in the measured window.
func (s *UDPSender) Run(tm Timing) ([]Count, error) {
	var wg sync.WaitGroup
	for _, t := range s.threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.run(tm, &s.stop)
		}()
	}
	wg.Wait()
	out := make([]Count, len(s.flows))
	var err error
	for i, f := range s.flows {
		out[i] = f.count
	}
	for _, t := range s.threads {
		err = errors.Join(err, t.err)
	}
	return out, err
}

// Stop ends Run early.
func (s *UDPSender) Stop() { s.stop.Store(true) }

// Progress is the live total sent (warmup included).
func (s *UDPSender) Progress() (packets, bytes uint64) {
	for _, t := range s.threads {
		packets += t.packets.Load()
		bytes += t.bytes.Load()
	}
	return
}

// Usage is each thread's CPU time; valid after Run.
func (s *UDPSender) Usage() []ThreadCPU {
	out := make([]ThreadCPU, len(s.threads))
	for i, t := range s.threads {
		out[i] = t.usage
	}
	return out
}

// Close closes the sockets.
func (s *UDPSender) Close() error {
	for _, f := range s.flows {
		if f.fd >= 0 {
			unix.Close(f.fd)
			f.fd = -1
		}
	}
	return nil
}

func (t *sendThread) run(tm Timing, stop *atomic.Bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t.usage = ThreadCPU{Role: "udp-send", CPU: t.cpu}
	if err := pin(t.cpu); err != nil {
		t.err = err
		return
	}
	if d := time.Until(tm.Start); d > 0 {
		time.Sleep(d)
	}
	size := batchFor(t.rate, sendBatch)
	b := newBatch(size, t.payload)
	p := newPacer(t.rate, size, time.Now())
	cpu0, wall0, pre0 := threadUsage(), time.Now(), preemptions()
	defer func() {
		t.usage.Seconds = (threadUsage() - cpu0).Seconds()
		if w := time.Since(wall0).Seconds(); w > 0 {
			t.usage.Busy = t.usage.Seconds / w
		}
		t.usage.Behind = uint64(p.behind)
		t.usage.Preempted = preemptions() - pre0
	}()
	warm := tm.Measure.After(time.Now())
	var flags byte
	if warm {
		flags = flagWarmup
	}
	fi := 0
	for !stop.Load() {
		now := time.Now()
		if !now.Before(tm.End) {
			break
		}
		if warm && !now.Before(tm.Measure) {
			warm, flags = false, 0
			for _, f := range t.flows {
				f.seq = 0
			}
		}
		n, wait := p.allow(now, size)
		if n == 0 {
			time.Sleep(min(wait, tm.End.Sub(now)))
			continue
		}
		// Unlimited: full batches, round robin. Paced: batches vary in
		// size, so the flow that has sent least goes next, keeping every
		// flow at its share of the rate.
		f := t.flows[fi]
		if t.rate > 0 {
			for _, g := range t.flows {
				if g.total < f.total {
					f = g
				}
			}
		} else if fi++; fi == len(t.flows) {
			fi = 0
		}
		ts := now.UnixNano()
		for i := range n {
			putHeader(b.packet(i), header{flags: flags, stream: f.stream, seq: f.seq + uint32(i), sent: ts})
		}
		m, err := sendmmsg(f.fd, b, n)
		if err != nil {
			switch {
			case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR), errors.Is(err, unix.ENOBUFS),
				errors.Is(err, unix.ECONNREFUSED), errors.Is(err, unix.EHOSTUNREACH), errors.Is(err, unix.ENETUNREACH),
				errors.Is(err, unix.EPERM):
				// Transient, or a firewall/ICMP answer: keep going, it
				// shows as loss.
				t.errs++
				p.sent(n) // do not try to catch up with a burst
				if unreachable(err) {
					// The peer or the route to it is gone: pause rather
					// than spin on a socket that cannot send (the server
					// notices a vanished client by its control
					// connection, see watchPeer).
					time.Sleep(min(time.Millisecond, tm.End.Sub(now)))
				}
				continue
			case errors.Is(err, unix.EMSGSIZE):
				t.err = fmt.Errorf("send %d-byte datagrams: larger than the path MTU allows without fragmentation: %w", t.payload, err)
			default:
				t.err = fmt.Errorf("sendmmsg: %w", err)
			}
			return
		}
		f.seq += uint32(m)
		f.total += uint64(m)
		p.sent(m)
		if warm {
			f.count.Warmup += uint64(m)
		} else {
			f.count.Packets += uint64(m)
			f.count.Bytes += uint64(m * t.payload)
		}
		t.packets.Add(uint64(m))
		t.bytes.Add(uint64(m * t.payload))
	}
}

// unreachable reports whether a send failed because the destination cannot
// be reached: no route, or an ICMP unreachable answer (port, host, net).
func unreachable(err error) bool {
	return errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, unix.EHOSTUNREACH) || errors.Is(err, unix.ENETUNREACH)
}

// UDPReceiver counts test datagrams on SO_REUSEPORT sockets with
// recvmmsg, one OS thread per receiver thread, and keeps per stream the
// packets, duplicates and reordering (loss is sent minus unique).
type UDPReceiver struct {
	threads []*recvThread
	stop    atomic.Bool
	wg      sync.WaitGroup
	// Ports are the bound ports, one per --ports.
	Ports []uint16
}

type recvThread struct {
	fds     []int
	cpu     int
	streams []*streamRecv
	packets atomic.Uint64 // live total, warmup included
	bytes   atomic.Uint64
	other   uint64 // datagrams without linerate's header
	usage   ThreadCPU
	err     error
}

type streamRecv struct {
	warmup uint64
	seqTracker
}

// newUDPReceiver binds nports ports (chosen by the kernel, or the given
// ones) for threads receiver threads. With at least as many ports as
// threads, each port has one socket and belongs to one thread (port i to
// thread i mod threads), so the flows spread evenly and predictably; with
// fewer, every thread has a socket on every port (SO_REUSEPORT) and the
// kernel spreads the flows by a hash of their addresses and ports.
func newUDPReceiver(bind func(port uint16) (int, error), nports, threads int, ports []uint16, cpus []int) (*UDPReceiver, error) {
	r := &UDPReceiver{}
	for i := range threads {
		cpu := -1
		if len(cpus) > 0 {
			cpu = cpus[i%len(cpus)]
		}
		r.threads = append(r.threads, &recvThread{cpu: cpu})
	}
	for p := range nports {
		var port uint16
		if p < len(ports) {
			port = ports[p]
		}
		owners := r.threads
		if nports >= threads {
			owners = []*recvThread{r.threads[p%threads]}
		}
		for _, t := range owners {
			fd, err := bind(port)
			if err != nil {
				r.Close()
				return nil, err
			}
			t.fds = append(t.fds, fd)
			if port == 0 {
				if port, err = localPort(fd); err != nil {
					r.Close()
					return nil, fmt.Errorf("udp receiver port: %w", err)
				}
			}
		}
		r.Ports = append(r.Ports, port)
	}
	return r, nil
}

// Start runs the receiver threads until Stop.
func (r *UDPReceiver) Start() {
	for _, t := range r.threads {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			t.run(&r.stop)
		}()
	}
}

// Progress is the live total received (warmup included).
func (r *UDPReceiver) Progress() (packets, bytes uint64) {
	for _, t := range r.threads {
		packets += t.packets.Load()
		bytes += t.bytes.Load()
	}
	return
}

// Stop ends the threads and returns the counts per stream (the threads'
// counts merged: a flow normally lands on one thread).
func (r *UDPReceiver) Stop() ([]Count, error) {
	r.stop.Store(true)
	r.wg.Wait()
	var out []Count
	var err error
	for _, t := range r.threads {
		err = errors.Join(err, t.err)
		for id, s := range t.streams {
			if s == nil {
				continue
			}
			for len(out) <= id {
				out = append(out, Count{Stream: len(out)})
			}
			c := &out[id]
			c.Packets += s.packets
			c.Bytes += s.bytes
			c.Unique += s.unique
			c.Dup += s.dup
			c.Reorder += s.reorder
			c.Warmup += s.warmup
		}
	}
	return out, err
}

// Usage is each thread's CPU time; valid after Stop.
func (r *UDPReceiver) Usage() []ThreadCPU {
	out := make([]ThreadCPU, len(r.threads))
	for i, t := range r.threads {
		out[i] = t.usage
	}
	return out
}

// Close closes the sockets (after Stop).
func (r *UDPReceiver) Close() {
	for _, t := range r.threads {
		for _, fd := range t.fds {
			unix.Close(fd)
		}
		t.fds = nil
	}
}

func (t *recvThread) stream(id uint16) *streamRecv {
	if int(id) >= len(t.streams) {
		t.streams = append(t.streams, make([]*streamRecv, int(id)+1-len(t.streams))...)
	}
	s := t.streams[id]
	if s == nil {
		s = &streamRecv{}
		t.streams[id] = s
	}
	return s
}

func (t *recvThread) run(stop *atomic.Bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t.usage = ThreadCPU{Role: "udp-recv", CPU: t.cpu}
	if err := pin(t.cpu); err != nil {
		t.err = err
		return
	}
	cpu0, wall0 := threadUsage(), time.Now()
	defer func() {
		t.usage.Seconds = (threadUsage() - cpu0).Seconds()
		if w := time.Since(wall0).Seconds(); w > 0 {
			t.usage.Busy = t.usage.Seconds / w
		}
	}()
	b := newBatch(recvBatch, recvSlot)
	var pfds []unix.PollFd
	for _, fd := range t.fds {
		pfds = append(pfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	for !stop.Load() {
		if len(t.fds) == 1 {
			// Block for the first datagram (SO_RCVTIMEO bounds the wait so
			// that Stop is seen), then take what else is queued.
			n, err := recvmmsg(t.fds[0], b, unix.MSG_WAITFORONE)
			if err != nil && !t.transient(err) {
				return
			}
			t.count(b, n)
			continue
		}
		got := 0
		for _, fd := range t.fds {
			n, err := recvmmsg(fd, b, unix.MSG_DONTWAIT)
			if err != nil && !t.transient(err) {
				return
			}
			t.count(b, n)
			got += n
		}
		if got == 0 {
			if _, err := unix.Poll(pfds, 100); err != nil && !errors.Is(err, unix.EINTR) {
				t.err = fmt.Errorf("poll: %w", err)
				return
			}
		}
	}
}

func (t *recvThread) transient(err error) bool {
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNREFUSED) {
		return true
	}
	t.err = fmt.Errorf("recvmmsg: %w", err)
	return false
}

func (t *recvThread) count(b *batch, n int) {
	if n <= 0 {
		return
	}
	var bytes uint64
	for i := range n {
		l := int(b.hdrs[i].n)
		bytes += uint64(l)
		h, ok := parseHeader(b.packet(i)[:min(l, recvSlot)])
		if !ok || h.flags&(flagProbe|flagReply) != 0 {
			t.other++
			continue
		}
		s := t.stream(h.stream)
		if h.flags&flagWarmup != 0 {
			s.warmup++
			continue
		}
		s.add(h.seq, l)
	}
	t.packets.Add(uint64(n))
	t.bytes.Add(bytes)
}
