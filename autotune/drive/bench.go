package drive

import (
	"context"
	"sync"
	"time"

	"linerate/autotune"
	"linerate/box"
	"linerate/sample"
	"linerate/traffic"
	"linerate/traffic/session"
)

// Bench is the driver whose bench client runs in this process — on this
// host, or with its sockets in a lab node's namespace (Config.Setup) —
// against Config.Targets: a `linerate serve` agent, or a server the rig
// started.
type Bench struct {
	// Label is the driver's Name.
	Label string
	// Config says the test; its Sampling is filled in by Measure.
	Config traffic.Config
	// ClientIsDUT says the device under test is the bench's client end:
	// its samples are then the result's client samples too.
	ClientIsDUT bool
	// Stop stops what was started for the driver (nil: nothing).
	Stop func() error
}

// Name says where the traffic runs.
func (b *Bench) Name() string { return b.Label }

// Measure runs traffic.Run with the device under test sampled over the
// measured window.
func (b *Bench) Measure(ctx context.Context, dut sample.Reader) (autotune.Measurement, error) {
	var mu sync.Mutex
	var m autotune.Measurement
	cfg := b.Config
	if dut != nil {
		cfg.Sampling = dutSampling(dut, b.ClientIsDUT, func(r []box.Rates, err error) {
			mu.Lock()
			m.DUT, m.DUTErr = r, err
			mu.Unlock()
		})
	}
	res, err := traffic.Run(ctx, cfg)
	mu.Lock()
	defer mu.Unlock()
	m.Result = res
	return m, err
}

// Close stops what was started for the driver.
func (b *Bench) Close() error {
	if b.Stop == nil {
		return nil
	}
	err := b.Stop()
	b.Stop = nil
	return err
}

// dutSampling returns a session.Sampling that records the device under
// test (read) over the measured window — the traffic engine starts it
// when the window starts and stops it after the run — and hands the
// rates to keep. With client true the device under test is the client
// and the rates go into the result as the client's samples too.
func dutSampling(read sample.Reader, client bool, keep func([]box.Rates, error)) session.Sampling {
	return func(each func(box.Rates)) func() ([]box.Rates, error) {
		var fwd func(box.Rates)
		if client {
			fwd = each
		}
		loop := sample.Start(read, time.Second, fwd)
		return func() ([]box.Rates, error) {
			rates, err := loop.Stop()
			keep(rates, err)
			if client {
				return rates, err
			}
			return nil, nil
		}
	}
}
