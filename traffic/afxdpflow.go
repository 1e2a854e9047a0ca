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
)

// xdpFlow runs one XDPSender (the "xdp" engine) for one destination port
// of a target, as one stream: a sending flow, like ringFlow.
type xdpFlow struct {
	s       *XDPSender
	stream  int
	payload int
	counts  RingCounts
	err     error
	usage   ThreadCPU
	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped bool
}

// xdpFits: AF_XDP sends UDP from the client only, like the ring.
func xdpFits(sp *Spec) error {
	if sp.Proto != "udp" || sp.Direction != Forward {
		return usage.Errorf("--engine xdp sends UDP from the client only: not with %s %s", sp.Proto, sp.Direction)
	}
	return nil
}

// xdpWhyNot says why the AF_XDP engine cannot run this test to these
// targets ("" when it can): where the ring cannot, nor can it; it also
// needs AF_XDP sockets, frames that fit a UMEM chunk, and a TX queue per
// port on the interface towards each target.
func xdpWhyNot(r *clientRun, to []*target) string {
	if why := ringWhyNot(r, to); why != "" {
		return why
	}
	for _, t := range to {
		if n := t.spec.Payload + UDPOverhead(true); n > MaxXDPFrameSize {
			return fmt.Sprintf("AF_XDP sends frames up to %d bytes, not %d", MaxXDPFrameSize, n)
		}
	}
	sp := &r.spec
	var why string
	err := r.cfg.setup(func() error {
		if why = xdpAvailable(); why != "" {
			return nil
		}
		for _, t := range to {
			routes, err := netlink.RouteGet(t.addr.Addr().AsSlice())
			if err != nil || len(routes) == 0 {
				why = fmt.Sprintf("no route to %s", t.addr.Addr())
				return nil
			}
			link, err := netlink.LinkByIndex(routes[0].LinkIndex)
			if err != nil {
				why = fmt.Sprintf("interface towards %s: %v", t.addr.Addr(), err)
				return nil
			}
			name := link.Attrs().Name
			q, err := txQueuesInUse(name)
			if err != nil {
				why = err.Error()
				return nil
			}
			if sp.Ports > q {
				why = fmt.Sprintf("%d ports need %d TX queues (one AF_XDP socket each), %s uses %d", sp.Ports, sp.Ports, name, q)
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return err.Error()
	}
	return why
}

// openXDPEngine makes the AF_XDP senders of each target.
func openXDPEngine(r *clientRun, to []*target) error {
	for _, t := range to {
		if err := t.openXDP(r); err != nil {
			return err
		}
	}
	return nil
}

// openXDP makes one AF_XDP sender per destination port of the target, each
// bound to a queue of its own (queue p for port p): one socket per queue.
func (t *target) openXDP(r *clientRun) error {
	cfg := r.cfg
	sp := &t.spec
	if !t.addr.Addr().Is4() {
		return usage.Errorf("%s: --engine xdp builds IPv4 frames only", t.name)
	}
	if sp.Streams != 1 {
		t.acc.Notes = append(t.acc.Notes, fmt.Sprintf("--engine xdp sends one stream per port: %d streams asked", sp.Streams))
	}
	pps := sp.Rate.PacketsPerSecond(sp.Payload+UDPOverhead(true)) / float64(sp.Ports)
	return cfg.setup(func() error {
		routes, err := netlink.RouteGet(t.addr.Addr().AsSlice())
		if err != nil || len(routes) == 0 {
			return fmt.Errorf("%s: no route to %s for the xdp engine: %v", t.name, t.addr.Addr(), err)
		}
		link, err := netlink.LinkByIndex(routes[0].LinkIndex)
		if err != nil {
			return fmt.Errorf("%s: interface of the route to %s: %w", t.name, t.addr.Addr(), err)
		}
		if q, err := txQueuesInUse(link.Attrs().Name); err == nil && sp.Ports > q {
			return usage.Errorf("%s: --engine xdp binds one AF_XDP socket per TX queue, one port per socket: %d ports, %s uses %d TX queues (give --ports %d, or raise them with `ethtool -L %s tx %d`)",
				t.name, sp.Ports, link.Attrs().Name, q, q, link.Attrs().Name, sp.Ports)
		}
		modes := map[bool]int{}
		for p := range sp.Ports {
			cpu := -1
			if len(cfg.CPUs) > 0 {
				cpu = cfg.CPUs[p%len(cfg.CPUs)]
			}
			xc := XDPConfig{RingConfig: RingConfig{
				Iface: link.Attrs().Name, SrcIP: t.local, DstIP: t.addr.Addr(),
				DstPort: t.acc.UDPPorts[p], Ports: 1, FrameSize: sp.Payload + UDPOverhead(true),
				Rate: pps, Duration: sp.Duration.D(), Warmup: sp.Warmup.D(),
				Stream: uint16(p * sp.Streams), CPU: cpu,
			}, Queue: p}
			s, err := NewXDPSender(xc)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			modes[s.ZeroCopy()]++
			e := r.sess.add(sending, t.name, &xdpFlow{s: s, stream: p * sp.Streams, payload: sp.Payload})
			t.fwd = append(t.fwd, share{e: e})
		}
		if modes[false] > 0 {
			t.acc.Notes = append(t.acc.Notes, fmt.Sprintf("--engine xdp: %s has no AF_XDP zero-copy, %d socket(s) in copy mode", link.Attrs().Name, modes[false]))
		}
		return nil
	})
}

func (x *xdpFlow) run(tm Timing) {
	ctx, cancel := context.WithCancel(context.Background())
	x.mu.Lock()
	x.cancel = cancel
	stopped := x.stopped
	x.mu.Unlock()
	defer cancel()
	if stopped {
		return
	}
	if d := time.Until(tm.Start); d > 0 {
		time.Sleep(d)
	}
	// The thread ends with this goroutine (never unlocked), as the ring's.
	runtime.LockOSThread()
	cpu0, t0 := threadUsage(), time.Now()
	c, err := x.s.Run(ctx)
	used, wall := (threadUsage() - cpu0).Seconds(), time.Since(t0).Seconds()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	x.mu.Lock()
	x.counts, x.err = c, err
	x.usage = ThreadCPU{Role: "xdp-send", CPU: x.s.base.cfg.CPU, Seconds: used}
	if wall > 0 {
		x.usage.Busy = used / wall
	}
	x.mu.Unlock()
}

func (x *xdpFlow) cut(time.Time) {}

func (x *xdpFlow) stop(time.Duration) {
	x.mu.Lock()
	x.stopped = true
	if x.cancel != nil {
		x.cancel()
	}
	x.mu.Unlock()
}

// progress is the live total handed to the kernel (warmup included), in
// payload bytes as the socket engine counts them.
func (x *xdpFlow) progress() (packets, bytes uint64) {
	p, _ := x.s.Progress()
	return p, p * uint64(x.payload)
}

// collect is the socket's one stream, numbered as the server numbers
// streams (port × streams).
func (x *xdpFlow) collect() flowResult {
	x.mu.Lock()
	defer x.mu.Unlock()
	res := flowResult{
		counts:  []Count{{Stream: x.stream, Packets: x.counts.Packets, Bytes: x.counts.Packets * uint64(x.payload), Warmup: x.counts.WarmupPackets}},
		threads: []ThreadCPU{x.usage},
	}
	if x.err != nil {
		res.err = fmt.Errorf("xdp: %w", x.err)
	}
	return res
}

func (x *xdpFlow) close() error { return x.s.Close() }
