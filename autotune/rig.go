package autotune

import (
	"context"
	"errors"
	"time"

	"linerate/box"
	"linerate/diagnose"
	"linerate/results"
	"linerate/sample"
	"linerate/tune"
	"linerate/wire"
)

// Rig is where `tune auto` measures and what it tunes: the device under
// test (DUT) — its System (changed by each trial), its configuration
// (read for diagnose) and its counters (Sample, read during each round) —
// and the Driver that runs the traffic of one round. LabRig and HostRig
// make the rigs the command line offers; tests and the demo may fill one
// in themselves.
type Rig struct {
	// Name says where the traffic runs ("lab demo: lan → router → wan",
	// "this host → 10.0.0.2"): the driver's name.
	Name string
	// DUT names the device under test ("router (netns lr-demo-router)").
	DUT string
	// Local is true when the load generator runs on the device under test
	// (diagnose then knows the generator competes with it for CPU).
	Local bool
	// System is the device under test: every trial changes it.
	System tune.System
	// Inspect reads the device under test's configuration, for diagnose.
	Inspect func(ctx context.Context) (*box.Box, error)
	// Sample reads the device under test's counters; the driver samples
	// them over each round's measured window.
	Sample sample.Reader
	// Driver runs the traffic; Close closes it.
	Driver Driver
	// Path probes the path from the device under test toward the far end
	// (nil: nobody can), for the rules that need the far end's evidence
	// (jumbo-frames).
	Path func(ctx context.Context) (*diagnose.PathMTU, error)
	// Release frees what the rig holds of the device under test (nil:
	// nothing); Close calls it after closing the driver.
	Release func() error
}

// Driver runs the traffic of one round of `tune auto`. The loop owns the
// device under test; a driver only makes the traffic flow and samples the
// device under test, with the reader it is given, over the round's
// measured window. Bench is the driver whose client runs in this process
// (on this host, or with its sockets in a lab node) against a `linerate
// serve` agent or a server it started; a driver of third-party flows
// (agent A sends to agent B while this host, between them, samples
// itself) is another.
type Driver interface {
	// Name says where the traffic runs.
	Name() string
	// Measure runs one round and returns its result with the device under
	// test's samples (read with dut; nil: the driver has its own). When
	// ctx ends it returns what it has (the partial result) and no error.
	Measure(ctx context.Context, dut sample.Reader) (Measurement, error)
	// Close stops what the driver started (a server, a connection).
	Close() error
}

// Measure runs one round through the rig's driver, sampling the device
// under test.
func (r *Rig) Measure(ctx context.Context) (Measurement, error) {
	return r.Driver.Measure(ctx, r.Sample)
}

// Close frees what the rig holds: its driver (and the server or agents it
// uses), its system, its reader of the device under test.
func (r *Rig) Close() error {
	var errs []error
	if r.Driver != nil {
		errs = append(errs, r.Driver.Close())
		r.Driver = nil
	}
	if r.Release != nil {
		errs = append(errs, r.Release())
		r.Release = nil
	}
	return errors.Join(errs...)
}

// Measurement is one round: the bench's result and the device under
// test's counters, once a second over the measured window.
type Measurement struct {
	Result *results.Result
	DUT    []box.Rates
	// DUTErr says why the device under test could not be sampled.
	DUTErr error
}

// Round is what one round measured, as the loop judges it.
type Round struct {
	Proto wire.Proto `json:"proto"`
	// Seconds is the measured window.
	Seconds         float64 `json:"seconds"`
	SentPPS         float64 `json:"sent_pps"`
	ReceivedPPS     float64 `json:"received_pps"`
	ReceivedBPS     float64 `json:"received_bps"`
	ReceivedPackets uint64  `json:"received_packets"`
	LossRatio       float64 `json:"loss_ratio"`
	// CPUSeconds is the busy time of every CPU the device under test
	// sees over the measured window (from its /proc/stat); CPUPerMpkt is
	// that per million packets delivered. CPUSampled is false when the
	// device under test had no samples.
	CPUSeconds float64       `json:"cpu_seconds"`
	CPUPerMpkt float64       `json:"cpu_seconds_per_mpkt"`
	CPUSampled bool          `json:"cpu_sampled"`
	LimitedBy  results.Limit `json:"limited_by,omitempty"`
}

// window is the part of a measurement's DUT samples that lies in the
// measured window: the sampler starts with the window, and its last,
// partial interval covers the drain after the senders stopped, which is
// left out.
func (m Measurement) window() []box.Rates {
	if m.Result == nil || len(m.DUT) == 0 {
		return m.DUT
	}
	if secs := m.Result.Summary.Seconds; secs > 0 {
		if out := results.SamplesInWindow(m.DUT, secs); len(out) > 0 {
			return out
		}
	}
	return m.DUT[:1]
}

// overlap is how many seconds of interval r lie between start and end.
func overlap(r box.Rates, start, end time.Time) float64 {
	a, b := r.Start, r.End
	if a.Before(start) {
		a = start
	}
	if b.After(end) {
		b = end
	}
	if !b.After(a) {
		return 0
	}
	return b.Sub(a).Seconds()
}

// round turns a measurement into the figures the loop compares.
func (m Measurement) round() (Round, error) {
	res := m.Result
	if res == nil {
		return Round{}, errors.New("the bench gave no result")
	}
	s := res.Summary
	r := Round{Proto: res.Spec.Proto, Seconds: s.Seconds, SentPPS: s.SentPPS, ReceivedPPS: s.ReceivedPPS,
		ReceivedBPS: s.ReceivedBPS, ReceivedPackets: s.ReceivedPackets, LossRatio: s.LossRatio, LimitedBy: s.LimitedBy}
	if len(m.DUT) > 0 && s.Seconds > 0 {
		// CPU over exactly the measured window: each interval's busy share
		// times the part of it inside the window.
		start := m.DUT[0].Start
		end := start.Add(time.Duration(s.Seconds * float64(time.Second)))
		for _, rt := range m.DUT {
			in := overlap(rt, start, end)
			for _, c := range rt.CPU {
				r.CPUSeconds += c.Busy / 100 * in
			}
		}
		r.CPUSampled = true
		if s.ReceivedPackets > 0 {
			r.CPUPerMpkt = r.CPUSeconds / (float64(s.ReceivedPackets) / 1e6)
		}
	}
	return r, nil
}
