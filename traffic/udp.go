package traffic

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

// Batch sizes: one sendmmsg/recvmmsg moves up to this many datagrams.
const (
	sendBatch = 128
	recvBatch = 256
	// recvSlot is how much of each datagram a receiver copies: the header
	// is all it needs (the rest is cut with MSG_TRUNC; the length is kept).
	recvSlot = 64
)

// udpFlow is one connected UDP socket carrying one stream.
type udpFlow struct {
	fd     int
	stream uint16
	seq    uint32
	total  uint64 // packets sent, warmup included
	count  results.Count
}

// udpSender sends datagrams on a set of connected sockets with batched
// sendmmsg, one OS thread per sender thread, each pacing its own share of
// the rate with a token bucket. It is the "socket" send engine, a sending
// flow.
type udpSender struct {
	threads []*sendThread
	flows   []*udpFlow
	halt    atomic.Bool
	err     error
}

type sendThread struct {
	flows   []*udpFlow
	rate    float64 // packets per second, 0 = unlimited
	payload int     // the largest, with a mix
	mix     *mixer  // nil: every datagram has payload bytes
	cpu     int
	packets atomic.Uint64 // live total, warmup included
	bytes   atomic.Uint64
	usage   results.ThreadCPU
	err     error
	errs    uint64 // transient send errors (ENOBUFS, ECONNREFUSED...)
}

// udpSenderConfig says how to build a udpSender.
type udpSenderConfig struct {
	fds     []int    // connected sockets, one per stream
	streams []uint16 // stream id of each; nil: the index
	payload int
	sizes   []wire.SizePart // a mix of payloads (payload is the largest), or nil
	pps     float64         // total; 0 = unlimited
	threads int
	cpus    []int // pinning, round robin; empty = none
}

func newUDPSender(c udpSenderConfig) *udpSender {
	s := &udpSender{}
	nt := min(max(c.threads, 1), len(c.fds))
	for i := range nt {
		cpu := -1
		if len(c.cpus) > 0 {
			cpu = c.cpus[i%len(c.cpus)]
		}
		s.threads = append(s.threads, &sendThread{payload: c.payload, mix: newMixer(c.sizes), cpu: cpu})
	}
	for i, fd := range c.fds {
		id := uint16(i)
		if c.streams != nil {
			id = c.streams[i]
		}
		f := &udpFlow{fd: fd, stream: id, count: results.Count{Stream: int(id)}}
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

// run sends until the timing ends or stop is called.
func (s *udpSender) Run(tm session.Timing) {
	var wg sync.WaitGroup
	for _, t := range s.threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.run(tm, &s.halt)
		}()
	}
	wg.Wait()
	for _, t := range s.threads {
		s.err = errors.Join(s.err, t.err)
	}
}

func (s *udpSender) Cut(time.Time)      {}
func (s *udpSender) Stop(time.Duration) { s.halt.Store(true) }

func (s *udpSender) Progress() (packets, bytes uint64) {
	for _, t := range s.threads {
		packets += t.packets.Load()
		bytes += t.bytes.Load()
	}
	return
}

// collect is what went per stream in the measured window, in the order of
// the sockets, and each thread's CPU time.
func (s *udpSender) Collect() session.Result {
	r := session.Result{Counts: make([]results.Count, len(s.flows)), Threads: make([]results.ThreadCPU, len(s.threads)), Err: s.err}
	for i, f := range s.flows {
		r.Counts[i] = f.count
	}
	for i, t := range s.threads {
		r.Threads[i] = t.usage
		r.Refused += t.errs
	}
	return r
}

// close closes the sockets.
func (s *udpSender) Close() error {
	for _, f := range s.flows {
		if f.fd >= 0 {
			unix.Close(f.fd)
			f.fd = -1
		}
	}
	return nil
}

func (t *sendThread) run(tm session.Timing, stop *atomic.Bool) {
	// Never unlocked: the thread, pinned or not, ends with the goroutine
	// instead of waiting in the runtime's pool for good.
	runtime.LockOSThread()
	t.usage = results.ThreadCPU{Role: "udp-send", CPU: t.cpu}
	if err := session.Pin(t.cpu); err != nil {
		t.err = err
		return
	}
	if d := time.Until(tm.Start); d > 0 {
		time.Sleep(d)
	}
	size := session.BatchFor(t.rate, sendBatch)
	b := newBatch(size, t.payload)
	p := session.NewPacer(t.rate, size, time.Now())
	cpu0, wall0, pre0 := session.ThreadUsage(), time.Now(), session.Preemptions()
	defer func() {
		t.usage.Seconds = (session.ThreadUsage() - cpu0).Seconds()
		if w := time.Since(wall0).Seconds(); w > 0 {
			t.usage.Busy = t.usage.Seconds / w
		}
		t.usage.Behind = p.Behind()
		t.usage.Preempted = session.Preemptions() - pre0
	}()
	warm := tm.Measure.After(time.Now())
	var flags byte
	if warm {
		flags = wire.FlagWarmup
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
		n, wait := p.Allow(now, size)
		if n == 0 {
			time.Sleep(min(wait, tm.End.Sub(now)))
			continue
		}
		var f *udpFlow
		f, fi = t.next(fi)
		ts := now.UnixNano()
		for i := range n {
			wire.PutHeader(b.packet(i), wire.Header{Flags: flags, Stream: f.stream, Seq: f.seq + uint32(i), Sent: ts})
			if t.mix != nil {
				b.iovs[i].SetLen(t.mix.payload(f.total + uint64(i)))
			}
		}
		m, err := sendmmsg(f.fd, b, n)
		if err != nil {
			if t.err = t.failed(err); t.err != nil {
				return
			}
			p.Sent(n) // do not try to catch up with a burst
			if unreachable(err) {
				// The peer or the route to it is gone: pause rather than
				// spin on a socket that cannot send (the server notices a
				// vanished client by its control connection, see
				// watchPeer).
				time.Sleep(min(time.Millisecond, tm.End.Sub(now)))
			}
			continue
		}
		bytes := uint64(m * t.payload)
		if t.mix != nil {
			var c *results.Count
			if !warm {
				c = &f.count
			}
			bytes = t.mix.count(c, f.total, m)
		}
		f.seq += uint32(m)
		f.total += uint64(m)
		p.Sent(m)
		if warm {
			f.count.Warmup += uint64(m)
		} else {
			f.count.Packets += uint64(m)
			f.count.Bytes += bytes
		}
		t.packets.Add(uint64(m))
		t.bytes.Add(bytes)
	}
}

// mtuError is a payload that does not fit the path MTU without
// fragmentation.
type mtuError struct{ payload, mtu int }

func (e *mtuError) Error() string {
	return fmt.Sprintf("payload %d bytes: the path MTU is %d", e.payload, e.mtu)
}

// dialUDPFlows makes the sockets of a udpSender: one connected socket per
// stream to each of ports on remote, from locals in turn (any port: each
// socket its own, so each flow a 5-tuple of its own), marked with dscp (0:
// unmarked). With later,
// the sockets are bound but not connected: aimUDP connects them once the
// client's punches say where its NAT maps its ports. A payload over the
// path MTU is an *mtuError.
func dialUDPFlows(locals []netip.Addr, remote netip.Addr, ports []uint16, streams, payload, dscp int, later bool) ([]int, error) {
	var fds []int
	for _, port := range ports {
		for range streams {
			to := netip.AddrPortFrom(remote, port)
			if later {
				to = netip.AddrPort{}
			}
			local := locals[len(fds)%len(locals)]
			fd, err := sock.DialUDP(netip.AddrPortFrom(local, 0), to, 4<<20)
			if err == nil {
				if err = sock.SetDSCP(fd, dscp); err != nil {
					sock.CloseFD(fd)
				}
			}
			if err != nil {
				sock.CloseFDs(fds)
				return nil, err
			}
			fds = append(fds, fd)
		}
	}
	if len(ports) > 0 {
		if err := checkPathMTU(locals[0], netip.AddrPortFrom(remote, ports[0]), payload); err != nil {
			sock.CloseFDs(fds)
			return nil, err
		}
	}
	return fds, nil
}

// checkPathMTU is an *mtuError when payload does not fit the path MTU from
// local to remote, asked of a socket of its own.
func checkPathMTU(local netip.Addr, remote netip.AddrPort, payload int) error {
	fd, err := sock.DialUDP(netip.AddrPortFrom(local, 0), remote, 0)
	if err != nil {
		return err
	}
	defer sock.CloseFD(fd)
	v4 := remote.Addr().Unmap().Is4()
	if mtu, err := sock.PathMTU(fd, v4); err == nil && payload+wire.UDPOverhead(v4)-wire.EthOverhead > mtu {
		return &mtuError{payload: payload, mtu: mtu}
	}
	return nil
}

// next is the flow whose batch goes next, and the round robin's next
// index. Unlimited: full batches, round robin. Paced: batches vary in size,
// so the flow that has sent least goes next, keeping every flow at its
// share of the rate.
func (t *sendThread) next(fi int) (*udpFlow, int) {
	f := t.flows[fi]
	if t.rate > 0 {
		for _, g := range t.flows {
			if g.total < f.total {
				f = g
			}
		}
		return f, fi
	}
	if fi++; fi == len(t.flows) {
		fi = 0
	}
	return f, fi
}

// failed counts a transient send error, or a firewall or ICMP answer (it
// shows as loss), and returns nil; any other error ends the thread.
func (t *sendThread) failed(err error) error {
	switch {
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR), errors.Is(err, unix.ENOBUFS),
		errors.Is(err, unix.ECONNREFUSED), errors.Is(err, unix.EHOSTUNREACH), errors.Is(err, unix.ENETUNREACH),
		errors.Is(err, unix.ENETDOWN), errors.Is(err, unix.EPERM):
		t.errs++
		return nil
	case errors.Is(err, unix.EMSGSIZE):
		return fmt.Errorf("send %d-byte datagrams: larger than the path MTU allows without fragmentation: %w", t.payload, err)
	}
	return fmt.Errorf("sendmmsg: %w", err)
}

// unreachable reports whether a send failed because the destination cannot
// be reached: no route, its interface down, or an ICMP unreachable answer
// (port, host, net).
func unreachable(err error) bool {
	return errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, unix.EHOSTUNREACH) || errors.Is(err, unix.ENETUNREACH) ||
		errors.Is(err, unix.ENETDOWN)
}

// udpReceiver counts test datagrams on SO_REUSEPORT sockets with
// recvmmsg, one OS thread per receiver thread, and keeps per stream the
// packets, duplicates and reordering (loss is sent minus unique). It is a
// receiving flow that counts from the moment it is made (the warmup is
// told apart by the datagrams' flags, not by a clock): the peer may send
// before this end's clock starts.
type udpReceiver struct {
	threads []*recvThread
	halt    atomic.Bool
	wg      sync.WaitGroup
	// ports are the bound ports, one per udpRecvConfig.ports, and portFDs
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

// udpRecvConfig says how to build a udpReceiver.
type udpRecvConfig struct {
	local   netip.Addr // the address to bind
	ports   int        // how many ports to bind
	fixed   []uint16   // the ports to bind, in order; missing or 0: the kernel's choice
	threads int
	rcvbuf  int   // SO_RCVBUF of each socket (0: 4 MiB)
	cpus    []int // pinning, round robin; empty = none
	// peers, when set, are the only sources counted: test datagrams from
	// any other address are foreign (counted apart, reported).
	peers []netip.Addr
	// mix counts the measured window's datagrams per payload size.
	mix bool
}

// newUDPReceiver binds the ports and starts the threads. With at least as
// many ports as threads, each port has one socket and belongs to one
// thread (port i to thread i mod threads), so the flows spread evenly and
// predictably; with fewer, every thread has a socket on every port
// (SO_REUSEPORT) and the kernel spreads the flows by a hash of their
// addresses and ports.
func newUDPReceiver(c udpRecvConfig) (*udpReceiver, error) {
	rcvbuf := cmp.Or(c.rcvbuf, 4<<20)
	r := &udpReceiver{}
	for i := range c.threads {
		cpu := -1
		if len(c.cpus) > 0 {
			cpu = c.cpus[i%len(c.cpus)]
		}
		t := &recvThread{cpu: cpu, mix: c.mix, gather: recvGather{budget: rcvbuf / gatherShare}}
		for _, p := range c.peers {
			t.peers = append(t.peers, fromAddr(p))
		}
		r.threads = append(r.threads, t)
	}
	for p := range c.ports {
		var port uint16
		if p < len(c.fixed) {
			port = c.fixed[p]
		}
		owners := r.threads
		if c.ports >= c.threads {
			owners = []*recvThread{r.threads[p%c.threads]}
		}
		for _, t := range owners {
			fd, err := sock.ListenUDP(netip.AddrPortFrom(c.local, port), rcvbuf)
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

// run waits for the threads, which end at stop.
func (r *udpReceiver) Run(session.Timing) { r.wg.Wait() }

// cut does nothing: the datagrams say which phase they belong to.
func (r *udpReceiver) Cut(time.Time) {}

func (r *udpReceiver) Stop(time.Duration) { r.halt.Store(true) }

func (r *udpReceiver) Progress() (packets, bytes uint64) {
	for _, t := range r.threads {
		packets += t.packets.Load()
		bytes += t.bytes.Load()
	}
	return
}

// collect is the counts per stream (the threads' counts merged: a flow
// normally lands on one thread) and each thread's CPU time.
func (r *udpReceiver) Collect() session.Result {
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

// close stops the threads and closes the sockets.
func (r *udpReceiver) Close() error {
	r.halt.Store(true)
	r.wg.Wait()
	r.closeFDs()
	return nil
}

func (r *udpReceiver) closeFDs() {
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
// once, it is woken for every few datagrams (at 460 kpps, 3.4 datagrams a
// recvmmsg and 13,500 context switches a second on this machine), and
// each wakeup costs the sender too, whose CPU runs the wakeup. recvGather
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
