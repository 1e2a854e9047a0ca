package traffic

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"linerate/internal/usage"
	"linerate/results"
	"linerate/traffic/session"
	"linerate/traffic/udp"
	"linerate/wire"
)

// frameSender sends prebuilt frames below the socket layer: a
// RingSender (AF_PACKET TX_RING) or an XDPSender (AF_XDP).
type frameSender interface {
	RunFrom(ctx context.Context, start time.Time) (RingCounts, error)
	Progress() (packets, bytes uint64)
	Close() error
}

// frameFlow runs one frameSender (the "ring" or the "xdp" engine) for one
// or more destination ports of a target, as a stream per port and source
// port (--flows): a sending flow.
type frameFlow struct {
	s       frameSender
	engine  string // "ring" or "xdp": its thread's role, its errors' prefix
	cpu     int
	stream  int
	streams int
	payload int
	mix     *udp.Mixer // nil: every datagram has payload bytes
	counts  RingCounts
	err     error
	usage   results.ThreadCPU
	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped bool
}

// openFrames makes the frame senders of the target, with open, on the
// interface of the route to it: one per destination port, or, when check
// (if set: it vets that interface first) says the interface takes fewer
// senders, that many, each sending the streams of a run of ports (sender g
// of n the ports g·P/n up to (g+1)·P/n). Each port's streams (--flows,
// --streams) leave from source ports of their own, round robin.
func (t *target) openFrames(r *clientRun, engine string, check func(netlink.Link) (senders int, err error),
	open func(link netlink.Link, sender int, rc RingConfig) (frameSender, error)) error {
	cfg := r.cfg
	sp := &t.spec
	if !t.addr.Addr().Is4() {
		return usage.Field("Engine", "%s builds IPv4 frames only: %s is not IPv4", engine, t.name)
	}
	perPort := sp.UDPPacketsPerSecond(wire.UDPOverhead(true)) / float64(sp.Ports)
	return cfg.setup(func() error {
		routes, err := netlink.RouteGet(t.addr.Addr().AsSlice())
		if err != nil || len(routes) == 0 {
			return fmt.Errorf("%s: no route to %s for the %s engine: %v", t.name, t.addr.Addr(), engine, err)
		}
		link, err := netlink.LinkByIndex(routes[0].LinkIndex)
		if err != nil {
			return fmt.Errorf("%s: interface of the route to %s: %w", t.name, t.addr.Addr(), err)
		}
		if why := framesUnspread(sp, link); why != "" {
			t.acc.Notes = append(t.acc.Notes, fmt.Sprintf("--engine %s: %s", engine, why))
		}
		senders := sp.Ports
		if check != nil {
			n, err := check(link)
			if err != nil {
				return err
			}
			senders = min(max(n, 1), sp.Ports)
		}
		for g := range senders {
			first, end := g*sp.Ports/senders, (g+1)*sp.Ports/senders
			cpu := -1
			if len(cfg.CPUs) > 0 {
				cpu = cfg.CPUs[g%len(cfg.CPUs)]
			}
			rc := RingConfig{
				Iface: link.Attrs().Name, SrcIP: t.local, DstIP: t.addr.Addr(),
				DstPorts: t.acc.UDPPorts[first:end], SrcPort: ringSrcPort, SrcPorts: sp.Streams, FrameSize: sp.Payload + wire.UDPOverhead(true), Sizes: sp.Sizes,
				Rate: perPort * float64(end-first), Duration: sp.Duration.D(), Warmup: sp.Warmup.D(),
				Stream: uint16(first * sp.Streams), CPU: cpu,
			}
			s, err := open(link, g, rc)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			e := r.sess.Add(session.Sending, t.name, &frameFlow{s: s, engine: engine, cpu: cpu, stream: first * sp.Streams, streams: (end - first) * sp.Streams, payload: sp.Payload, mix: udp.NewMixer(sp.Sizes)})
			t.fwd = append(t.fwd, share{e: e})
		}
		return nil
	})
}

// framesUnspread says why several flows per port would not spread over a
// veth's queues when the ring or AF_XDP sends them ("" when they would):
// AF_PACKET picks the TX queue by the sending CPU (packet_pick_tx_queue
// records it as the skb's queue before the hash is asked), AF_XDP sends
// on its socket's queue, so neither reads the flow, and a veth hands a
// frame to the receive queue of its peer that matches the TX queue. On a
// NIC the receiver's RSS hashes the frames as any others.
func framesUnspread(sp *wire.Spec, link netlink.Link) string {
	if sp.Streams > 1 && link.Type() == "veth" {
		return fmt.Sprintf("the ring and AF_XDP choose the TX queue by CPU or socket, not by flow, and the veth %s hands a frame to the same receive queue of its peer: its %d flows per port would land on one queue (the socket engine's take the flow hash)", link.Attrs().Name, sp.Streams)
	}
	return ""
}

// ringSrcPort is the first source port of the frame engines' streams.
const ringSrcPort = 40000

// openRing makes one ring sender per destination port of the target.
func (t *target) openRing(r *clientRun) error {
	return t.openFrames(r, "ring", nil, func(_ netlink.Link, _ int, rc RingConfig) (frameSender, error) {
		return NewRingSender(rc)
	})
}

func (f *frameFlow) Run(tm session.Timing) {
	ctx, cancel := context.WithCancel(context.Background())
	f.mu.Lock()
	f.cancel = cancel
	stopped := f.stopped
	f.mu.Unlock()
	defer cancel()
	if stopped {
		return
	}
	if d := time.Until(tm.Start); d > 0 {
		time.Sleep(d)
	}
	// The thread ends with this goroutine (never unlocked): a test's
	// threads do not stay behind in the runtime's pool, pinned.
	runtime.LockOSThread()
	cpu0, t0 := session.ThreadUsage(), time.Now()
	// The warmup starts at the session's start, not when this thread
	// woke: the measured window is then the one every other counter of
	// the test uses (the ends' drop counters, the receivers').
	c, err := f.s.RunFrom(ctx, tm.Start)
	used, wall := (session.ThreadUsage() - cpu0).Seconds(), time.Since(t0).Seconds()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	f.mu.Lock()
	f.counts, f.err = c, err
	f.usage = results.ThreadCPU{Role: f.engine + "-send", CPU: f.cpu, Seconds: used}
	if wall > 0 {
		f.usage.Busy = used / wall
	}
	f.mu.Unlock()
}

func (f *frameFlow) Cut(time.Time) {}

func (f *frameFlow) Stop(time.Duration) {
	f.mu.Lock()
	f.stopped = true
	if f.cancel != nil {
		f.cancel()
	}
	f.mu.Unlock()
}

// Progress is the live total handed to the kernel (warmup included), in
// payload bytes as the socket engine counts them.
func (f *frameFlow) Progress() (packets, bytes uint64) {
	p, _ := f.s.Progress()
	if f.mix != nil {
		return p, f.mix.Count(nil, 0, int(p))
	}
	return p, p * uint64(f.payload)
}

// Collect is the flow's streams, numbered as the server numbers streams
// (port × streams + the stream's source port).
func (f *frameFlow) Collect() session.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	res := session.Result{Threads: []results.ThreadCPU{f.usage}, Held: f.counts.HeldBack}
	for k := range max(f.streams, 1) {
		c := results.Count{Stream: f.stream + k}
		if k < len(f.counts.StreamPackets) {
			c.Packets, c.Warmup = f.counts.StreamPackets[k], f.counts.StreamWarmup[k]
			c.Bytes = c.Packets * uint64(f.payload)
			if f.mix != nil {
				// Stream k's measured datagrams follow its warmup's.
				c.Bytes = f.mix.Count(&c, c.Warmup, int(c.Packets))
			}
		}
		res.Counts = append(res.Counts, c)
	}
	if f.err != nil {
		res.Err = fmt.Errorf("%s: %w", f.engine, f.err)
	}
	return res
}

func (f *frameFlow) Close() error { return f.s.Close() }
