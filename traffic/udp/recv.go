package udp

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"linerate/results"
	"linerate/traffic/session"
	"linerate/traffic/sock"
	"linerate/wire"
)

// Receive batches: one recvmmsg moves up to recvBatch datagrams.
const (
	recvBatch = 256
	// recvSlot is how much of each datagram a receiver copies: the header
	// is all it needs (the rest is cut with MSG_TRUNC; the length is kept).
	recvSlot = 64
)

// Receiver counts test datagrams on its own sockets (SO_REUSEPORT where
// threads share a port) with recvmmsg, one OS thread per receiver
// thread, and keeps per stream the packets, duplicates and reordering
// (loss is sent minus unique). It is a receiving flow that counts from
// the moment it is made (the warmup is told apart by the datagrams'
// flags, not by a clock): the peer may send before this end's clock
// starts.
type Receiver struct {
	threads []*recvThread
	halt    atomic.Bool
	wg      sync.WaitGroup
	// ports are the bound ports, one per ReceiverConfig.Ports, and portFDs
	// a socket bound to each (punches leave from it).
	ports   []uint16
	portFDs []int
}

type recvThread struct {
	fds     []int
	cpu     int
	streams []*streamRecv
	packets atomic.Uint64 // live total, warmup included
	bytes   atomic.Uint64
	other   uint64 // datagrams without linerate's header
	peers   []from // when set, datagrams from elsewhere are foreign
	foreign uint64 // datagrams from elsewhere: not counted
	mix     bool   // count the datagrams per payload size
	gather  recvGather
	calls   int // recvmmsg calls made
	usage   results.ThreadCPU
	err     error
}

type streamRecv struct {
	warmup uint64
	sizes  []results.SizeCount // with a mix
	seqTracker
}

// ReceiverConfig says how to build a Receiver.
type ReceiverConfig struct {
	Local   netip.Addr // the address to bind
	Ports   int        // how many ports to bind
	Fixed   []uint16   // the ports to bind, in order; missing or 0: the kernel's choice
	Threads int
	RcvBuf  int   // SO_RCVBUF of each socket (0: 4 MiB)
	CPUs    []int // pinning, round robin; empty = none
	// Peers, when set, are the only sources counted: test datagrams from
	// any other address are foreign (counted apart, reported).
	Peers []netip.Addr
	// Mix counts the measured window's datagrams per payload size.
	Mix bool
}

// NewReceiver binds the ports and starts the threads. With at least as
// many ports as threads, each port has one socket and belongs to one
// thread (port i to thread i mod threads), so the flows spread evenly and
// predictably; with fewer, every thread has a socket on every port
// (SO_REUSEPORT) and the kernel spreads the flows by a hash of their
// addresses and ports.
func NewReceiver(c ReceiverConfig) (*Receiver, error) {
	rcvbuf := cmp.Or(c.RcvBuf, 4<<20)
	r := &Receiver{}
	for i := range c.Threads {
		cpu := -1
		if len(c.CPUs) > 0 {
			cpu = c.CPUs[i%len(c.CPUs)]
		}
		t := &recvThread{cpu: cpu, mix: c.Mix, gather: recvGather{budget: rcvbuf / gatherShare}}
		for _, p := range c.Peers {
			t.peers = append(t.peers, fromAddr(p))
		}
		r.threads = append(r.threads, t)
	}
	for p := range c.Ports {
		var port uint16
		if p < len(c.Fixed) {
			port = c.Fixed[p]
		}
		owners := r.threads
		if c.Ports >= c.Threads {
			owners = []*recvThread{r.threads[p%c.Threads]}
		}
		// A port of one socket is its alone (no SO_REUSEPORT: no other
		// socket can join it); one shared by threads is a free one
		// (sock.FreeUDPPort).
		shared := len(owners) > 1
		if shared && port == 0 {
			var err error
			if port, err = sock.FreeUDPPort(c.Local); err != nil {
				r.closeFDs()
				return nil, fmt.Errorf("udp receiver port: %w", err)
			}
		}
		for _, t := range owners {
			fd, err := sock.ListenUDP(netip.AddrPortFrom(c.Local, port), rcvbuf, shared)
			if err != nil {
				r.closeFDs()
				return nil, err
			}
			t.fds = append(t.fds, fd)
			if port == 0 {
				if port, err = sock.LocalPort(fd); err != nil {
					r.closeFDs()
					return nil, fmt.Errorf("udp receiver port: %w", err)
				}
			}
		}
		r.ports = append(r.ports, port)
		r.portFDs = append(r.portFDs, owners[0].fds[len(owners[0].fds)-1])
	}
	for _, t := range r.threads {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			t.run(&r.halt)
		}()
	}
	return r, nil
}

// Ports are the bound ports, one per ReceiverConfig.Ports.
func (r *Receiver) Ports() []uint16 { return r.ports }

// PortFDs are a socket bound to each of Ports: punches leave from it.
func (r *Receiver) PortFDs() []int { return r.portFDs }

// Run waits for the threads, which end at Stop.
func (r *Receiver) Run(session.Timing) { r.wg.Wait() }

// Cut does nothing: the datagrams say which phase they belong to.
func (r *Receiver) Cut(time.Time) {}

func (r *Receiver) Stop(time.Duration) { r.halt.Store(true) }

func (r *Receiver) Progress() (packets, bytes uint64) {
	for _, t := range r.threads {
		packets += t.packets.Load()
		bytes += t.bytes.Load()
	}
	return
}

// Collect is the counts per stream (the threads' counts merged: a flow
// normally lands on one thread) and each thread's CPU time.
func (r *Receiver) Collect() session.Result {
	var res session.Result
	for _, t := range r.threads {
		res.Err = errors.Join(res.Err, t.err)
		res.Threads = append(res.Threads, t.usage)
		res.Foreign += t.foreign
		for id, s := range t.streams {
			if s == nil {
				continue
			}
			for len(res.Counts) <= id {
				res.Counts = append(res.Counts, results.Count{Stream: len(res.Counts)})
			}
			c := &res.Counts[id]
			c.Packets += s.packets
			c.Bytes += s.bytes
			c.Unique += s.unique
			c.Dup += s.dup
			c.Reorder += s.reorder
			c.Warmup += s.warmup
			for _, z := range s.sizes {
				c.CountSize(z.Payload, z.Packets)
			}
		}
	}
	return res
}

// Close stops the threads and closes the sockets.
func (r *Receiver) Close() error {
	r.halt.Store(true)
	r.wg.Wait()
	r.closeFDs()
	return nil
}

func (r *Receiver) closeFDs() {
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
	runtime.LockOSThread() // never unlocked, as sendThread.run
	t.usage = results.ThreadCPU{Role: "udp-recv", CPU: t.cpu}
	if err := session.Pin(t.cpu); err != nil {
		t.err = err
		return
	}
	cpu0, wall0 := session.ThreadUsage(), time.Now()
	defer func() {
		t.usage.Seconds = (session.ThreadUsage() - cpu0).Seconds()
		if w := time.Since(wall0).Seconds(); w > 0 {
			t.usage.Busy = t.usage.Seconds / w
		}
	}()
	b := newBatch(recvBatch, recvSlot)
	if len(t.peers) > 0 {
		b.withNames()
	}
	var pfds []unix.PollFd
	for _, fd := range t.fds {
		pfds = append(pfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	g := &t.gather
	for !stop.Load() {
		if len(t.fds) == 1 {
			// Block for the first datagram (SO_RCVTIMEO bounds the wait so
			// that Stop is seen), then take what else is queued.
			n, err := recvmmsg(t.fds[0], b, unix.MSG_WAITFORONE)
			if err != nil && !t.transient(err) {
				return
			}
			t.calls++
			g.sleep(g.next(n, t.count(b, n), time.Now()))
			continue
		}
		got, bytes := 0, uint64(0)
		for _, fd := range t.fds {
			n, err := recvmmsg(fd, b, unix.MSG_DONTWAIT)
			if err != nil && !t.transient(err) {
				return
			}
			t.calls++
			bytes += t.count(b, n)
			got += n
		}
		g.sleep(g.next(got, bytes, time.Now()))
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

// count counts a batch of n datagrams and returns their bytes.
func (t *recvThread) count(b *batch, n int) uint64 {
	if n <= 0 {
		return 0
	}
	var bytes uint64
	counted := n
	for i := range n {
		l := int(b.hdrs[i].n)
		if len(t.peers) > 0 && !fromAny(t.peers, &b.names[i]) {
			t.foreign++
			counted--
			continue
		}
		bytes += uint64(l)
		h, ok := wire.ParseHeader(b.packet(i)[:min(l, recvSlot)])
		if !ok || h.Flags&(wire.FlagProbe|wire.FlagReply) != 0 {
			t.other++
			continue
		}
		s := t.stream(h.Stream)
		if h.Flags&wire.FlagWarmup != 0 {
			s.warmup++
			continue
		}
		s.add(h.Seq, l)
		if t.mix {
			s.sizes = results.AddSize(s.sizes, l, 1)
		}
	}
	t.packets.Add(uint64(counted))
	t.bytes.Add(bytes)
	return bytes
}

// A receiver thread that has emptied its sockets lets the next datagrams
// gather before it asks again, as a NIC coalesces interrupts: blocking at
// once, it is woken for every few datagrams, a context switch each, and
// each wakeup costs the sender too, whose CPU runs the wakeup
// (docs/benchmarks.md, "receivers that let datagrams gather", has the
// figures). recvGather
// says how long to sleep after a call that took n datagrams of bytes
// bytes (and emptied the queue: fewer than a batch): long enough for about
// half a batch to arrive at the rate those n came in, never over
// gatherMax, never so long that the queue could outgrow budget bytes
// (an eighth of the socket's buffer, counting a datagram's kernel
// overhead as gatherOverhead bytes); nothing after a full batch (the
// thread is behind) or when fewer than gatherMin datagrams would arrive
// in gatherMax (at low rates a blocked thread costs little). The
// receiver does not timestamp datagrams, so the delay changes no figure
// it reports.
type recvGather struct {
	budget int       // bytes the queue may grow to while the thread sleeps
	last   time.Time // when the previous call returned, the queue empty
}

const (
	gatherMax      = 500 * time.Microsecond
	gatherMin      = 16
	gatherShare    = 8    // the budget is the socket buffer over this
	gatherOverhead = 1024 // bytes a queued datagram holds besides its payload
)

// next is the sleep after a call that returned at now with n datagrams of
// bytes bytes.
func (g *recvGather) next(n int, bytes uint64, now time.Time) time.Duration {
	last := g.last
	g.last = now
	if n <= 0 || n >= recvBatch || last.IsZero() || g.budget <= 0 {
		return 0
	}
	dt := now.Sub(last).Seconds()
	if dt <= 0 {
		return 0
	}
	pps := float64(n) / dt
	limit := min(gatherMax.Seconds(), float64(g.budget)/(pps*(float64(bytes)/float64(n)+gatherOverhead)))
	if pps*limit < gatherMin {
		return 0
	}
	return time.Duration(min(recvBatch/2/pps, limit) * 1e9)
}

// sleep sleeps d on the thread (a few microseconds are not worth it).
func (g *recvGather) sleep(d time.Duration) {
	if d < 10*time.Microsecond {
		return
	}
	ts := unix.NsecToTimespec(d.Nanoseconds())
	_ = unix.Nanosleep(&ts, nil)
}

// Receiver is this test's UDP receiver on local, counting what comes
// from peer and from the client's other source addresses (Spec.Sources).
func ReceiverOf(s *wire.Spec, local, peer netip.Addr, cpus []int) ReceiverConfig {
	var peers []netip.Addr
	if peer.IsValid() {
		peers = append([]netip.Addr{peer}, s.Sources...)
	}
	return ReceiverConfig{Local: local, Peers: peers, Ports: s.Ports, Threads: s.Threads, RcvBuf: s.RecvBuf, CPUs: cpus, Mix: s.Mixed()}
}
