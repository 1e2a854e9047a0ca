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

// ringFlow runs one RingSender (the "ring" engine) for one destination port
// of a target, as one stream: a sending flow.
type ringFlow struct {
	s       *RingSender
	stream  int
	payload int
	counts  RingCounts
	err     error
	usage   ThreadCPU
	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped bool
}

// openRing makes one ring sender per destination port of the target. The
// ring sends one stream per port (--streams does not apply).
func (t *target) openRing(r *clientRun) error {
	cfg := r.cfg
	sp := &t.spec
	if !t.addr.Addr().Is4() {
		return usage.Errorf("%s: --engine ring builds IPv4 frames only", t.name)
	}
	if sp.Streams != 1 {
		t.acc.Notes = append(t.acc.Notes, fmt.Sprintf("--engine ring sends one stream per port: %d streams asked", sp.Streams))
	}
	pps := sp.Rate.PacketsPerSecond(sp.Payload+UDPOverhead(true)) / float64(sp.Ports)
	return cfg.setup(func() error {
		routes, err := netlink.RouteGet(t.addr.Addr().AsSlice())
		if err != nil || len(routes) == 0 {
			return fmt.Errorf("%s: no route to %s for the ring engine: %v", t.name, t.addr.Addr(), err)
		}
		link, err := netlink.LinkByIndex(routes[0].LinkIndex)
		if err != nil {
			return fmt.Errorf("%s: interface of the route to %s: %w", t.name, t.addr.Addr(), err)
		}
		for p := range sp.Ports {
			cpu := -1
			if len(cfg.CPUs) > 0 {
				cpu = cfg.CPUs[p%len(cfg.CPUs)]
			}
			rc := RingConfig{
				Iface: link.Attrs().Name, SrcIP: t.local, DstIP: t.addr.Addr(),
				DstPort: t.acc.UDPPorts[p], Ports: 1, FrameSize: sp.Payload + UDPOverhead(true),
				Rate: pps, Duration: sp.Duration.D(), Warmup: sp.Warmup.D(),
				Stream: uint16(p * sp.Streams), CPU: cpu,
			}
			s, err := NewRingSender(rc)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			e := r.sess.add(sending, t.name, &ringFlow{s: s, stream: p * sp.Streams, payload: sp.Payload})
			t.fwd = append(t.fwd, share{e: e})
		}
		return nil
	})
}

func (r *ringFlow) run(tm Timing) {
	ctx, cancel := context.WithCancel(context.Background())
	r.mu.Lock()
	r.cancel = cancel
	stopped := r.stopped
	r.mu.Unlock()
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
	cpu0, t0 := threadUsage(), time.Now()
	c, err := r.s.Run(ctx)
	used, wall := (threadUsage() - cpu0).Seconds(), time.Since(t0).Seconds()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	r.mu.Lock()
	r.counts, r.err = c, err
	r.usage = ThreadCPU{Role: "ring-send", CPU: r.s.cfg.CPU, Seconds: used}
	if wall > 0 {
		r.usage.Busy = used / wall
	}
	r.mu.Unlock()
}

func (r *ringFlow) cut(time.Time) {}

func (r *ringFlow) stop(time.Duration) {
	r.mu.Lock()
	r.stopped = true
	if r.cancel != nil {
		r.cancel()
	}
	r.mu.Unlock()
}

// progress is the live total the ring handed to the kernel (warmup
// included), in payload bytes as the socket engine counts them.
func (r *ringFlow) progress() (packets, bytes uint64) {
	p, _ := r.s.Progress()
	return p, p * uint64(r.payload)
}

// collect is the ring's one stream, numbered as the server numbers streams
// (port × streams).
func (r *ringFlow) collect() flowResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := flowResult{
		counts:  []Count{{Stream: r.stream, Packets: r.counts.Packets, Bytes: r.counts.Packets * uint64(r.payload), Warmup: r.counts.WarmupPackets}},
		threads: []ThreadCPU{r.usage},
	}
	if r.err != nil {
		res.err = fmt.Errorf("ring: %w", r.err)
	}
	return res
}

func (r *ringFlow) close() error { return r.s.Close() }
