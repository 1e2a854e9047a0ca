// Package udp is the socket engine: test datagrams sent with batched
// sendmmsg and received with recvmmsg on preallocated buffers, each
// sender and receiver thread a locked OS thread of its own, the receiver
// counting per stream what arrived, twice and out of order. A mix of
// payload sizes (Mixer) goes interleaved in its ratio; the frame engines
// number their sizes by the same Mixer, so both ends count each size
// alike. Sender and Receiver are session flows.
package udp

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"linerate/results"
	"linerate/traffic/session"
	"linerate/wire"
)

// SendBatch is the most datagrams one sendmmsg moves.
const SendBatch = 128

// udpFlow is one connected UDP socket carrying one stream.
type udpFlow struct {
	fd     int
	stream uint16
	seq    uint32
	total  uint64 // packets sent, warmup included
	count  results.Count
}

// Sender sends datagrams on a set of connected sockets with batched
// sendmmsg, one OS thread per sender thread, each pacing its own share of
// the rate with a token bucket. It is the "socket" send engine, a sending
// flow.
type Sender struct {
	threads []*sendThread
	flows   []*udpFlow
	halt    atomic.Bool
	err     error
}

type sendThread struct {
	flows   []*udpFlow
	rate    float64 // packets per second, 0 = unlimited
	payload int     // the largest, with a mix
	mix     *Mixer  // nil: every datagram has payload bytes
	cpu     int
	packets atomic.Uint64 // live total, warmup included
	bytes   atomic.Uint64
	usage   results.ThreadCPU
	err     error
	errs    uint64 // transient send errors (ENOBUFS, ECONNREFUSED...)
}

// SenderConfig says how to build a Sender.
type SenderConfig struct {
	FDs     []int    // connected sockets, one per stream
	Streams []uint16 // stream id of each; nil: the index
	Payload int
	Sizes   []wire.SizePart // a mix of payloads (Payload is the largest), or nil
	PPS     float64         // total; 0 = unlimited
	Threads int
	CPUs    []int // pinning, round robin; empty = none
}

// NewSender deals c's sockets round robin to c.Threads threads (at most
// one a socket), each pacing its sockets' share of the rate; it sends once
// Run is called.
func NewSender(c SenderConfig) *Sender {
	s := &Sender{}
	nt := min(max(c.Threads, 1), len(c.FDs))
	for i := range nt {
		cpu := -1
		if len(c.CPUs) > 0 {
			cpu = c.CPUs[i%len(c.CPUs)]
		}
		s.threads = append(s.threads, &sendThread{payload: c.Payload, mix: NewMixer(c.Sizes), cpu: cpu})
	}
	for i, fd := range c.FDs {
		id := uint16(i)
		if c.Streams != nil {
			id = c.Streams[i]
		}
		f := &udpFlow{fd: fd, stream: id, count: results.Count{Stream: int(id)}}
		s.flows = append(s.flows, f)
		t := s.threads[i%nt]
		t.flows = append(t.flows, f)
	}
	if c.PPS > 0 {
		per := c.PPS / float64(len(c.FDs))
		for _, t := range s.threads {
			t.rate = per * float64(len(t.flows))
		}
	}
	return s
}

// Run sends until the timing ends or Stop is called.
func (s *Sender) Run(tm session.Timing) {
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

func (s *Sender) Cut(time.Time)      {}
func (s *Sender) Stop(time.Duration) { s.halt.Store(true) }

func (s *Sender) Progress() (packets, bytes uint64) {
	for _, t := range s.threads {
		packets += t.packets.Load()
		bytes += t.bytes.Load()
	}
	return
}

// Collect is what went per stream in the measured window, in the order of
// the sockets, and each thread's CPU time.
func (s *Sender) Collect() session.Result {
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

// Close closes the sockets.
func (s *Sender) Close() error {
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
	size := session.BatchFor(t.rate, SendBatch)
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
				b.iovs[i].SetLen(t.mix.Payload(f.total + uint64(i)))
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
			bytes = t.mix.Count(c, f.total, m)
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
