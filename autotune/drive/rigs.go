package drive

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"linerate/autotune"
	"linerate/box"
	"linerate/diagnose"
	"linerate/internal/usage"
	nslab "linerate/lab"
	"linerate/remote"
	"linerate/sample"
	"linerate/source"
	"linerate/traffic"
	"linerate/tune"
)

// LabNodes names the nodes of a lab that `tune auto --lab` uses.
type LabNodes struct {
	// Client runs the bench's sender; Server the far end.
	Client, Server string
	// DUT is the device under test: tuned, sampled and diagnosed. In the
	// router lab it is the router, between Client and Server.
	DUT string
	// Serve is the control address (HOST:PORT) of a `linerate serve`
	// already running in Server, and Token its secret. Empty, LabRig uses
	// the lab's agent in Server (`lab up --serve`) if it has one, and
	// otherwise starts a server in this process, inside Server, for the
	// rig's lifetime.
	Serve, Token string
}

// DefaultLabNodes are the router lab's: lan → router → wan.
var DefaultLabNodes = LabNodes{Client: "lan", Server: "wan", DUT: "router"}

// LabRig measures traffic from one lab node to another and tunes a third
// (or one of the two): the driver is a Bench whose client runs in this
// process with its sockets in Client (traffic.Config.Setup), against
// Serve, the lab's agent in Server — the path a real host's bench takes —
// or a traffic.Server started in Server; the device under test is
// read, sampled and changed inside its namespace (source.NewLiveNetns,
// tune.NewLiveNetns). bench says the test; its Targets, Token, Setup and
// Sampling are filled in here.
func LabRig(l *nslab.Lab, nodes LabNodes, bench traffic.Config) (rig *autotune.Rig, err error) {
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
	sys, err := tune.NewLiveNetns(dut.Netns)
	if err != nil {
		return nil, err
	}
	src, err := source.NewLiveNetns(dut.Netns)
	if err != nil {
		sys.Close()
		return nil, fmt.Errorf("read %s: %w", nodes.DUT, err)
	}
	rig = hostRig(sys, src)
	defer func() {
		if err != nil {
			rig.Close()
		}
	}()

	if relay, ok, err := labRelay(l, nodes, bench); err != nil {
		return nil, err
	} else if ok {
		rig.Driver, rig.Name = relay, fmt.Sprintf("lab %s: %s's agent %s → %s → %s's agent %s, run by %s", l.Name(),
			nodes.Client, relay.From, nodes.DUT, nodes.Server, relay.Config.Targets[0], nodes.DUT)
		rig.DUT = fmt.Sprintf("%s (netns %s)", nodes.DUT, dut.Netns)
		return rig, nil
	}
	d := &Bench{Config: bench, ClientIsDUT: nodes.DUT == nodes.Client}
	far := "server in " + nodes.Server
	if nodes.Serve == "" {
		if a, ok := l.AgentIn(nodes.Client, nodes.Server); ok {
			secret, err := l.Secret()
			if err != nil {
				return nil, err
			}
			nodes.Serve, nodes.Token, far = a, secret, "agent "+a
		}
	} else {
		far = "agent " + nodes.Serve
	}
	target := nodes.Serve
	if target == "" {
		stop, t, err := serveIn(l, nodes.Server, addr, bench.CPUs)
		if err != nil {
			return nil, err
		}
		d.Stop, target = stop, t
		far += " " + t
	} else {
		d.Config.Token = nodes.Token
	}
	d.Config.Targets = []string{target}
	d.Config.Setup = func(fn func() error) error { return l.Do(nodes.Client, fn) }
	d.Label = fmt.Sprintf("lab %s: %s → %s (%s)", l.Name(), nodes.Client, nodes.Server, far)
	if nodes.DUT != nodes.Client && nodes.DUT != nodes.Server {
		d.Label = fmt.Sprintf("lab %s: %s → %s → %s (%s)", l.Name(), nodes.Client, nodes.DUT, nodes.Server, far)
	}
	rig.Driver, rig.Name = d, d.Label
	rig.DUT = fmt.Sprintf("%s (netns %s)", nodes.DUT, dut.Netns)
	rig.Local = d.ClientIsDUT
	if d.ClientIsDUT {
		rig.Path = d.probePath
	}
	return rig, nil
}

// labRelay is the driver of a lab with agents whose device under test is
// neither end: the same as `tune auto --from CLIENT --to SERVER` run in
// the device under test (a real router) — its control connection to the
// client's agent made inside the device under test's namespace, the
// client's agent sending to the server's through it. ok is false when the
// lab has no agents there (or a far end was named): LabRig then runs the
// bench client itself.
func labRelay(l *nslab.Lab, nodes LabNodes, bench traffic.Config) (*Relay, bool, error) {
	if nodes.Serve != "" || nodes.DUT == nodes.Client || nodes.DUT == nodes.Server {
		return nil, false, nil
	}
	from, ok := l.AgentIn(nodes.DUT, nodes.Client)
	if !ok {
		return nil, false, nil
	}
	to, ok := l.AgentIn(nodes.Client, nodes.Server)
	if !ok {
		return nil, false, nil
	}
	secret, err := l.Secret()
	if err != nil {
		return nil, false, err
	}
	agent, err := remote.Parse(from)
	if err != nil {
		return nil, false, fmt.Errorf("%s's agent %s: %w", nodes.Client, from, err)
	}
	inDUT := remote.Options{Setup: func(fn func() error) error { return l.Do(nodes.DUT, fn) }}
	cfg := bench
	cfg.Targets, cfg.Token, cfg.Setup, cfg.CPUs = []string{to}, secret, nil, nil
	return &Relay{From: from, Config: cfg,
		Dial: func(ctx context.Context) (net.Conn, error) { return remote.Dial(ctx, agent, inDUT) }}, true, nil
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

// HostRig tunes this host while driver runs the traffic: the bench
// against `linerate serve` on another host (a Bench with this host as
// its client), or flows between other hosts through this one.
func HostRig(d autotune.Driver, local bool) (*autotune.Rig, error) {
	src, err := source.NewLive()
	if err != nil {
		d.Close()
		return nil, err
	}
	rig := hostRig(tune.NewLive(), src)
	rig.Driver, rig.Name = d, d.Name()
	rig.DUT, rig.Local = "this host", local
	if b, ok := d.(*Bench); ok && b.ClientIsDUT {
		rig.Path = b.probePath
	}
	return rig, nil
}

// BenchFromHere is the driver of `tune auto --to`: this host benches
// against `linerate serve` at bench.Targets and is the device under test.
func BenchFromHere(bench traffic.Config) (*Bench, error) {
	if len(bench.Targets) == 0 {
		return nil, usage.Field("Targets", "empty: name a machine running 'linerate serve'")
	}
	return &Bench{Label: "this host → " + bench.Targets[0], Config: bench, ClientIsDUT: true}, nil
}

// hostRig is a rig over a device under test that sys changes and src
// reads, with no driver yet; closing it closes both.
func hostRig(sys tune.System, src source.Source) *autotune.Rig {
	return &autotune.Rig{
		System: sys,
		Inspect: func(ctx context.Context) (*box.Box, error) {
			return box.Collect(ctx, src)
		},
		Sample:  sample.Live(src.Proc(), src.Ethtool(), nil),
		Release: func() error { return errors.Join(sys.Close(), src.Close()) },
	}
}

// discardPort is where the path probe's datagrams go: the far end drops
// them (or answers port unreachable), whatever listens on its other ports.
const discardPort = 9

// probePath probes the path from the bench's client, the device under
// test, toward its first target (traffic.ProbePath), in the client's
// namespace.
func (b *Bench) probePath(ctx context.Context) (*diagnose.PathMTU, error) {
	if len(b.Config.Targets) == 0 {
		return nil, errors.New("no target")
	}
	host, _, err := net.SplitHostPort(b.Config.Targets[0])
	if err != nil {
		host = b.Config.Targets[0]
	}
	var p traffic.Path
	run := func() error {
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(ips) == 0 {
			return fmt.Errorf("resolve %s: %v", host, err)
		}
		p, err = traffic.ProbePath(netip.Addr{}, netip.AddrPortFrom(ips[0].Unmap(), discardPort), 100*time.Millisecond)
		return err
	}
	if b.Config.Setup != nil {
		err = b.Config.Setup(run)
	} else {
		err = run()
	}
	if err != nil {
		return nil, err
	}
	return &diagnose.PathMTU{Iface: p.Iface, Peer: host, ProbedMTU: p.MTU}, nil
}
