package traffic

import (
	"fmt"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"linerate/internal/usage"
	"linerate/wire"
)

// udpEngine is one way for the client to send UDP (--engine). An engine
// is a sending flow type and an entry in udpEngines: open makes the flows
// for the targets the client sends to and adds them to the run's session,
// each target's share of them in the target's fwd.
type udpEngine struct {
	name string
	// fits says why the engine cannot run the test asked for, as a usage
	// error, or nil. Per-target limits (an address family) are open's.
	fits func(sp *wire.Spec) error
	open func(r *clientRun, to []*target) error
}

// udpEngines are the engines --engine names; the first is the default.
var udpEngines = []*udpEngine{
	{name: "socket", fits: func(*wire.Spec) error { return nil }, open: openSocketEngine},
	{name: "ring", fits: ringFits, open: openRingEngine},
	{name: "xdp", fits: xdpFits, open: openXDPEngine},
	{name: "auto", fits: func(*wire.Spec) error { return nil }, open: openAutoEngine},
}

// openAutoEngine runs the fastest engine that can do the test: AF_XDP
// (faster than the ring on this machine's veth, in copy mode,
// docs/benchmarks.md) when it applies, else the ring (about twice the
// socket engine's packets per second) when it applies, else the socket
// engine. The result's engine names the one that ran, and a note says why.
func openAutoEngine(r *clientRun, to []*target) error {
	whyNotXDP := xdpWhyNot(r, to)
	if whyNotXDP == "" {
		r.cfg.Engine = "xdp"
		opened := func() (n int) {
			for _, t := range to {
				n += len(t.fwd)
			}
			return n
		}
		before := opened()
		err := openXDPEngine(r, to)
		if err == nil {
			r.notes = append(r.notes, "--engine auto ran AF_XDP: IPv4 from the client, on a direct route, as root, a TX queue per port")
			return nil
		}
		if opened() != before || usage.Is(err) {
			return err // a sender already runs: no falling back halfway
		}
		// The ring fits wherever AF_XDP does: a first socket AF_XDP could
		// not bind (another program's on the queue) costs speed, not the
		// test.
		whyNotXDP = "it could not start: " + err.Error()
	}
	if why := ringWhyNot(r, to); why != "" {
		r.cfg.Engine = "socket"
		r.notes = append(r.notes, "--engine auto ran the socket engine: "+why)
		return openSocketEngine(r, to)
	}
	r.cfg.Engine = "ring"
	r.notes = append(r.notes, "--engine auto ran the ring (AF_PACKET TX_RING): IPv4 from the client, on a direct route, as root; not AF_XDP: "+whyNotXDP)
	return openRingEngine(r, to)
}

// ringWhyNot says why the ring cannot run this test to these targets
// ("" when it can): it sends from the client only, IPv4 frames, one stream
// per port, needs CAP_NET_RAW (root), and addresses its frames to the
// target's own MAC, so not through a gateway (a router or a NAT between).
func ringWhyNot(r *clientRun, to []*target) string {
	sp := &r.spec
	switch {
	case ringFits(sp) != nil:
		return "the ring sends UDP from the client only, not " + string(sp.Direction)
	case sp.Streams != 1:
		return fmt.Sprintf("the ring sends one stream per port, not %d", sp.Streams)
	case unix.Geteuid() != 0:
		return "the ring needs root (CAP_NET_RAW)"
	}
	for _, t := range to {
		a := t.addr.Addr()
		if !a.Is4() {
			return t.name + " is IPv6; the ring builds IPv4 frames"
		}
		if a.IsLoopback() || a == t.local {
			return t.name + " is this host: loopback takes sockets"
		}
		var why string
		err := r.cfg.setup(func() error {
			routes, err := netlink.RouteGet(a.AsSlice())
			switch {
			case err != nil || len(routes) == 0:
				why = fmt.Sprintf("no route to %s for the ring", a)
			case routes[0].Gw != nil:
				why = fmt.Sprintf("%s is reached through the gateway %s", t.name, routes[0].Gw)
			}
			return nil
		})
		if err != nil {
			return err.Error()
		}
		if why != "" {
			return why
		}
	}
	return ""
}

// engineNamed is the engine called name ("": the default).
func engineNamed(name string) (*udpEngine, error) {
	if name == "" {
		return udpEngines[0], nil
	}
	var names []string
	for _, e := range udpEngines {
		if e.name == name {
			return e, nil
		}
		names = append(names, e.name)
	}
	return nil, usage.Field("Engine", "%q: want %s", name, strings.Join(names, " or "))
}

// openSocketEngine makes one sendmmsg sender for every target at once: its
// threads share the targets' sockets, and each target gets the asked rate.
func openSocketEngine(r *clientRun, to []*target) error {
	var fds []int
	var streams []uint16
	type span struct {
		t       *target
		from, n int
	}
	var spans []span
	for _, t := range to {
		f, err := t.openUDP(r.cfg)
		if err != nil {
			closeFDs(fds)
			return err
		}
		spans = append(spans, span{t, len(fds), len(f)})
		fds = append(fds, f...)
		for i := range f {
			streams = append(streams, uint16(i))
		}
	}
	sp := &r.spec
	pps := sp.Rate.PacketsPerSecond(sp.Payload+r.overhead) * float64(len(r.targets))
	e := r.sess.add(sending, "", newUDPSender(udpSenderConfig{fds: fds, streams: streams, payload: sp.Payload, pps: pps, threads: sp.Threads, cpus: r.cfg.CPUs}))
	for _, s := range spans {
		s.t.fwd = append(s.t.fwd, share{e: e, from: s.from, n: s.n})
	}
	return nil
}

// ringFits: the ring sends UDP from the client only.
func ringFits(sp *wire.Spec) error {
	if sp.Proto != wire.UDP || sp.Direction != wire.Forward {
		return usage.Field("Engine", "ring sends UDP from the client only: not with %s %s", sp.Proto, sp.Direction)
	}
	return nil
}

// openRingEngine makes the ring senders of each target.
func openRingEngine(r *clientRun, to []*target) error {
	for _, t := range to {
		if err := t.openRing(r); err != nil {
			return err
		}
	}
	return nil
}
