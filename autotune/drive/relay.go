package drive

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"linerate/autotune"
	"linerate/box"
	"linerate/sample"
	"linerate/traffic"
	"linerate/wire"
)

// Relay is the driver of `tune auto --from A --to B`: the agent at A runs
// each round's flow to the agent at B (a third-party flow), and this host —
// the device the traffic crosses, the router — is sampled over the flow's
// measured window.
type Relay struct {
	// From names the sending agent; Dial opens a control connection to it
	// for each round.
	From string
	Dial func(ctx context.Context) (net.Conn, error)
	// Config is the test (Targets as the agent reaches them, Spec,
	// FrameSize, Engine, Idle) and Token the agents' secret.
	Config traffic.Config
	// Channel says From is reached over ssh: its agent has no secret of
	// its own and is given Config.Token with each flow.
	Channel bool
}

// Name says where the traffic runs.
func (r *Relay) Name() string {
	return fmt.Sprintf("%s → %v through this host", r.From, r.Config.Targets)
}

// Measure runs one flow and samples dut while it runs, keeping the
// seconds inside the flow's measured window as this host's clock places
// it (the request's time plus the idle probes and the warmup).
func (r *Relay) Measure(ctx context.Context, dut sample.Reader) (autotune.Measurement, error) {
	var m autotune.Measurement
	conn, err := r.Dial(ctx)
	if err != nil {
		return m, err
	}
	c := r.Config
	f := traffic.Flow{Targets: c.Targets, Spec: c.Spec, FrameSize: c.FrameSize, Engine: c.Engine, Idle: wire.Seconds(c.Idle)}
	if r.Channel {
		f.Secret = c.Token
	}
	// The sampler starts when the agent's window opens (after its idle
	// probes, with probes, and the warmup), so that its seconds are the
	// window's.
	lead := c.Spec.Warmup.D()
	if c.Spec.ProbeInterval > 0 {
		lead += c.Idle
	}
	start := time.Now().Add(lead)
	end := start.Add(c.Spec.Duration.D())
	var mu sync.Mutex
	var loop *sample.Loop
	over := false
	if dut != nil {
		t := time.AfterFunc(lead, func() {
			mu.Lock()
			defer mu.Unlock()
			if !over {
				loop = sample.Start(dut, time.Second, nil)
			}
		})
		defer t.Stop()
	}
	m.Result, err = traffic.RunFlow(ctx, conn, c.Token, f, nil)
	mu.Lock()
	defer mu.Unlock()
	over = true
	if loop != nil {
		rates, serr := loop.Stop()
		m.DUT, m.DUTErr = window(rates, start, end), serr
	} else if dut != nil {
		m.DUTErr = errors.New("the flow ended before its measured window opened")
	}
	return m, err
}

// window keeps the rates of seconds inside [start, end], give or take
// half a second for the control round trips.
func window(rates []box.Rates, start, end time.Time) []box.Rates {
	const slack = 500 * time.Millisecond
	var out []box.Rates
	for _, r := range rates {
		if !r.Start.Before(start.Add(-slack)) && !r.End.After(end.Add(slack)) {
			out = append(out, r)
		}
	}
	return out
}

// Close has nothing to stop: each round's connection ends with it.
func (r *Relay) Close() error { return nil }
