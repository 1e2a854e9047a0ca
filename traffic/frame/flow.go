// Package frame sends UDP test datagrams as whole Ethernet frames built
// once, below the socket layer: through an AF_PACKET transmit ring
// (RingSender, ring.go) or an AF_XDP socket (XDPSender, afxdp.go). Each
// send rewrites only a frame's ports and test header, so the cost per
// packet is the kernel's. Flow runs either as a session flow; the sizes
// of a mix are numbered as the socket engine numbers them (udp.Mixer).
package frame

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"linerate/results"
	"linerate/traffic/session"
	"linerate/traffic/udp"
	"linerate/wire"
)

// Sender sends prebuilt frames below the socket layer: a RingSender
// (AF_PACKET TX_RING) or an XDPSender (AF_XDP).
type Sender interface {
	// RunFrom sends, its warmup from start, until the run is over or ctx
	// ends, and returns what it handed to the interface.
	RunFrom(ctx context.Context, start time.Time) (RingCounts, error)
	// Progress is the frames handed to the kernel so far in the current
	// run, warmup included, and their bytes.
	Progress() (packets, bytes uint64)
	Close() error
}

// Flow runs one Sender (the "ring" or the "xdp" engine) for one or more
// destination ports of a target, as a stream per port and source port
// (--flows): a sending flow.
type Flow struct {
	s       Sender
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

// NewFlow is the flow of s, the engine called engine ("ring" or "xdp"),
// its thread pinned to cpu (-1: none), sending streams streams numbered
// from stream, of payload bytes or of the mix sizes.
func NewFlow(s Sender, engine string, cpu, stream, streams, payload int, sizes []wire.SizePart) *Flow {
	return &Flow{s: s, engine: engine, cpu: cpu, stream: stream, streams: streams, payload: payload, mix: udp.NewMixer(sizes)}
}

func (f *Flow) Run(tm session.Timing) {
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

func (f *Flow) Cut(time.Time) {}

func (f *Flow) Stop(time.Duration) {
	f.mu.Lock()
	f.stopped = true
	if f.cancel != nil {
		f.cancel()
	}
	f.mu.Unlock()
}

// Progress is the live total handed to the kernel (warmup included), in
// payload bytes as the socket engine counts them.
func (f *Flow) Progress() (packets, bytes uint64) {
	p, _ := f.s.Progress()
	if f.mix != nil {
		return p, f.mix.Count(nil, 0, int(p))
	}
	return p, p * uint64(f.payload)
}

// Collect is the flow's streams, numbered as the server numbers streams
// (port × streams + the stream's source port).
func (f *Flow) Collect() session.Result {
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

func (f *Flow) Close() error { return f.s.Close() }
