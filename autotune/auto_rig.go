package autotune

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"linerate/box"
	"linerate/internal/usage"
	// Named apart: the package's tests have a helper called lab.
	nslab "linerate/lab"
	"linerate/sample"
	"linerate/source"
	"linerate/traffic"
	"linerate/tune"
)

// Rig is where `tune auto` measures and what it tunes: the traffic of one
// round, and the device under test (DUT) — its System (changed), its
// configuration (read for diagnose) and its counters (sampled during each
// round). LabRig and HostRig make the two rigs the command line offers;
// tests and the demo may fill one in themselves.
type Rig struct {
	// Name says where the traffic runs ("lab demo: lan → router → wan",
	// "this host → 10.0.0.2").
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
	// Measure runs one round of traffic. When ctx ends it returns what it
	// has (the partial result) and no error.
	Measure func(ctx context.Context) (Measurement, error)
	// Release frees what the rig holds (nil: nothing); Close calls it.
	Release func() error
}

// Close frees what the rig holds: its system, its reader of the device
// under test, the server it started.
func (r *Rig) Close() error {
	if r.Release == nil {
		return nil
	}
	err := r.Release()
	r.Release = nil
	return err
}

// Measurement is one round: the bench's result and the device under
// test's counters, once a second over the measured window.
type Measurement struct {
	Result *traffic.Result
	DUT    []box.Rates
	// DUTErr says why the device under test could not be sampled.
	DUTErr error
}

// Round is what one round measured, as the loop judges it.
type Round struct {
	Proto string `json:"proto"`
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
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUPerMpkt float64 `json:"cpu_seconds_per_mpkt"`
	CPUSampled bool    `json:"cpu_sampled"`
	LimitedBy  string  `json:"limited_by,omitempty"`
}

// window is the part of a measurement's DUT samples that lies in the
// measured window: the sampler starts with the window, and its last,
// partial interval covers the drain after the senders stopped, which is
// left out.
func (m Measurement) window() []box.Rates {
	if m.Result == nil || len(m.DUT) == 0 {
		return m.DUT
	}
	start := m.DUT[0].Start
	end := start.Add(time.Duration(m.Result.Summary.Seconds * float64(time.Second)))
	var out []box.Rates
	for _, r := range m.DUT {
		if overlap(r, start, end) >= r.Seconds/2 {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return m.DUT[:1]
	}
	return out
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

// dutSampling returns a traffic.Sampling that records the device under
// test (read) over the measured window — the traffic engine starts it
// when the window starts and stops it after the run — and hands the
// rates to keep. With client true the device under test is the client
// and the rates go into the result as the client's samples too.
func dutSampling(read sample.Reader, client bool, keep func([]box.Rates, error)) traffic.Sampling {
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

// measureWith runs traffic.Run with the device under test sampled.
func measureWith(ctx context.Context, cfg traffic.Config, read sample.Reader, client bool) (Measurement, error) {
	var mu sync.Mutex
	var m Measurement
	cfg.Sampling = dutSampling(read, client, func(r []box.Rates, err error) {
		mu.Lock()
		m.DUT, m.DUTErr = r, err
		mu.Unlock()
	})
	res, err := traffic.Run(ctx, cfg)
	mu.Lock()
	defer mu.Unlock()
	m.Result = res
	return m, err
}

// LabNodes names the nodes of a lab that `tune auto --lab` uses.
type LabNodes struct {
	// Client runs the bench's sender; Server the far end.
	Client, Server string
	// DUT is the device under test: tuned, sampled and diagnosed. In the
	// router lab it is the router, between Client and Server.
	DUT string
	// Serve is the control address (HOST:PORT) of a `linerate serve`
	// already running in Server; empty starts a server in this process,
	// inside Server, for the rig's lifetime.
	Serve string
}

// DefaultLabNodes are the router lab's: lan → router → wan.
var DefaultLabNodes = LabNodes{Client: "lan", Server: "wan", DUT: "router"}

// LabRig measures traffic from one lab node to another and tunes a third
// (or one of the two): the bench's client runs in this process with its
// sockets in Client (traffic.Config.Setup), the far end is Serve or a
// traffic.Server started in Server, and the device under test is read,
// sampled and changed inside its namespace (source.NewLiveNetns,
// NewLiveNetns). bench says the test; its Targets, Setup and Sampling are
// filled in here.
func LabRig(l *nslab.Lab, nodes LabNodes, bench traffic.Config) (rig *Rig, err error) {
	for _, n := range []string{nodes.Client, nodes.Server, nodes.DUT} {
		if _, err := l.Node(n); err != nil {
			return nil, err
		}
	}
	if nodes.Client == nodes.Server {
		return nil, usage.Errorf("lab %s: the client and the server are both %s: give two nodes", l.Name(), nodes.Client)
	}
	dut, _ := l.Node(nodes.DUT)
	addr, ok := l.Addr(nodes.Client, nodes.Server)
	if !ok {
		return nil, usage.Errorf("lab %s: %s does not reach %s", l.Name(), nodes.Client, nodes.Server)
	}
	var closers []func() error
	closeAll := func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		closers = nil
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()

	sys, err := tune.NewLiveNetns(dut.Netns)
	if err != nil {
		return nil, err
	}
	closers = append(closers, sys.Close)
	src, err := source.NewLiveNetns(dut.Netns)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", nodes.DUT, err)
	}
	closers = append(closers, src.Close)

	target := nodes.Serve
	if target == "" {
		stop, t, err := serveIn(l, nodes.Server, addr, bench.CPUs)
		if err != nil {
			return nil, err
		}
		closers = append(closers, stop)
		target = t
	}
	bench.Targets = []string{target}
	bench.Setup = func(fn func() error) error { return l.Do(nodes.Client, fn) }
	read := sample.Live(src.Proc(), src.Ethtool(), nil)
	local := nodes.DUT == nodes.Client
	rig = &Rig{
		Name:   fmt.Sprintf("lab %s: %s → %s (%s)", l.Name(), nodes.Client, nodes.Server, target),
		DUT:    fmt.Sprintf("%s (netns %s)", nodes.DUT, dut.Netns),
		Local:  local,
		System: sys,
		Inspect: func(ctx context.Context) (*box.Box, error) {
			return box.Collect(ctx, src)
		},
		Measure: func(ctx context.Context) (Measurement, error) {
			return measureWith(ctx, bench, read, local)
		},
		Release: closeAll,
	}
	if nodes.DUT != nodes.Client && nodes.DUT != nodes.Server {
		rig.Name = fmt.Sprintf("lab %s: %s → %s → %s (%s)", l.Name(), nodes.Client, nodes.DUT, nodes.Server, target)
	}
	return rig, nil
}

// serveIn starts a traffic server inside a lab node, listening on addr
// and a port the kernel picks, and returns how to stop it and its
// control address.
func serveIn(l *nslab.Lab, node string, addr netip.Addr, cpus []int) (stop func() error, target string, err error) {
	srv := &traffic.Server{CPUs: cpus, Setup: func(fn func() error) error { return l.Do(node, fn) }}
	var ln net.Listener
	err = l.Do(node, func() error {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("listen in %s on %s: %w", node, addr, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	stop = func() error {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("server in %s: %w", node, err)
			}
			return nil
		case <-time.After(10 * time.Second):
			return fmt.Errorf("server in %s did not stop within 10s", node)
		}
	}
	return stop, net.JoinHostPort(addr.String(), strconv.Itoa(port)), nil
}

// HostRig measures this host against `linerate serve` on another one
// (bench.Targets) and tunes this host: the device under test is the
// bench's client end, sampled as such.
func HostRig(bench traffic.Config) (*Rig, error) {
	if len(bench.Targets) == 0 {
		return nil, usage.Errorf("no target: give --to HOST (a machine running 'linerate serve')")
	}
	src, err := source.NewLive()
	if err != nil {
		return nil, err
	}
	read := sample.Live(src.Proc(), src.Ethtool(), nil)
	sys := tune.NewLive()
	return &Rig{
		Name:   "this host → " + bench.Targets[0],
		DUT:    "this host",
		Local:  true,
		System: sys,
		Inspect: func(ctx context.Context) (*box.Box, error) {
			return box.Collect(ctx, src)
		},
		Measure: func(ctx context.Context) (Measurement, error) {
			return measureWith(ctx, bench, read, true)
		},
		Release: func() error { return errors.Join(sys.Close(), src.Close()) },
	}, nil
}
