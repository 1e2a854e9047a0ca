package traffic

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"linerate/internal/usage"
	"linerate/results"
	"linerate/source/rtnl"
	"linerate/source/rtnl/rtnetlink"
	"linerate/traffic/session"
	"linerate/traffic/sock"
	"linerate/traffic/udp"
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
			r.notes = append(r.notes, "--engine auto ran AF_XDP: IPv4 from the client, on a direct route, as root")
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
// Nor where it would bypass a qdisc someone configured on the interface
// towards a target (configuredQdisc): auto does not send past a shaper.
func ringWhyNot(r *clientRun, to []*target) string {
	sp := &r.spec
	switch {
	case sp.DSCP != 0:
		return "the ring and AF_XDP do not mark DSCP"
	case len(sp.Sources) > 0:
		return "the ring and AF_XDP send from one address, not from --src"
	case ringFits(sp) != nil:
		return "the ring sends UDP from the client only, not " + string(sp.Direction)
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
			default:
				if link, err := netlink.LinkByIndex(routes[0].LinkIndex); err == nil {
					why = framesUnspread(sp, link)
				}
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
	qs, err := configuredQdiscs(r, to)
	switch {
	case err != nil:
		return "the qdiscs it would send below could not be read: " + err.Error()
	case len(qs) > 0:
		return fmt.Sprintf("the ring and AF_XDP send below the qdiscs and would bypass %s, configured on the interface towards the target (not the kernel's default qdisc)", strings.Join(qs, ", "))
	}
	return ""
}

// configuredQdiscs names the egress qdiscs someone configured ("tbf 1: on
// lra") on the client's interfaces towards the targets: those an engine
// below the qdiscs (results.BypassesQdisc) would bypass. It reads them
// with the client's drop counters (the path they read for the ceiling)
// or, without any, over rtnetlink in the client's namespace.
func configuredQdiscs(r *clientRun, to []*target) ([]string, error) {
	var ifaces []string
	err := r.cfg.setup(func() error {
		for _, t := range to {
			routes, err := netlink.RouteGet(t.addr.Addr().AsSlice())
			if err != nil || len(routes) == 0 {
				return fmt.Errorf("no route to %s: %v", t.addr.Addr(), err)
			}
			link, err := netlink.LinkByIndex(routes[0].LinkIndex)
			if err != nil {
				return fmt.Errorf("interface towards %s: %w", t.addr.Addr(), err)
			}
			if name := link.Attrs().Name; !slices.Contains(ifaces, name) {
				ifaces = append(ifaces, name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var qs []rtnl.Qdisc
	if d := r.cfg.Drops; d != nil {
		path, err := d.Path(string(results.SideClient), ifaces...)
		if err != nil {
			return nil, err
		}
		for _, p := range path {
			qs = append(qs, p.Qdiscs...)
		}
	} else {
		err = r.cfg.setup(func() error {
			c, err := rtnetlink.Dial(0)
			if err != nil {
				return err
			}
			defer c.Close()
			all, err := c.Qdiscs()
			for _, q := range all {
				if slices.Contains(ifaces, q.Iface) && !q.Ingress() {
					qs = append(qs, q)
				}
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	var out []string
	for _, q := range qs {
		if configuredQdisc(q) {
			out = append(out, fmt.Sprintf("%s %s on %s", q.Kind, rtnl.Handle(q.Handle), q.Iface))
		}
	}
	return out, nil
}

// configuredQdisc reports whether an egress qdisc was configured by
// someone rather than attached by the kernel. The kernel attaches its
// default (noqueue on a virtual device, else net.core.default_qdisc:
// pfifo_fast, or fq_codel or fq as distributions set it, under an mq on a
// multiqueue NIC) with handle 0:, and tc never gives a qdisc it adds
// handle 0: (it allocates one from 8001: when none is asked). So a qdisc
// with a handle of its own, or with a rate, was configured: except mq and
// noqueue, which only spread packets over the TX queues or hand them
// straight on, so bypassing them changes nothing.
func configuredQdisc(q rtnl.Qdisc) bool {
	if q.Rate != nil {
		return true
	}
	return q.Handle>>16 != 0 && q.Kind != "mq" && q.Kind != "noqueue"
}

// warnBypass notes, for an engine asked for by name that sends below the
// qdiscs, the configured qdiscs it bypasses: they shape nothing it sends
// and are left out of the path's ceiling (results.PathCeiling). --engine
// auto checked before it chose such an engine.
func warnBypass(r *clientRun, to []*target) {
	if r.engine.name == "auto" {
		return
	}
	e := r.cfg.Engine
	qs, err := configuredQdiscs(r, to)
	switch {
	case err != nil:
		r.notes = append(r.notes, fmt.Sprintf("--engine %s sends below the qdiscs, which could not be read (%v): a shaper there would be bypassed", e, err))
	case len(qs) > 0:
		r.notes = append(r.notes, fmt.Sprintf("--engine %s sends below the qdiscs and bypasses %s: it shapes nothing this test sends and is left out of the path's ceiling, which is the link speed (none on a virtual link)", e, strings.Join(qs, ", ")))
	}
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
			sock.CloseFDs(fds)
			return err
		}
		spans = append(spans, span{t, len(fds), len(f)})
		fds = append(fds, f...)
		for i := range f {
			streams = append(streams, uint16(i))
		}
	}
	sp := &r.spec
	pps := sp.UDPPacketsPerSecond(r.overhead) * float64(len(r.targets))
	e := r.sess.Add(session.Sending, "", udp.NewSender(udp.SenderConfig{FDs: fds, Streams: streams, Payload: sp.Payload, Sizes: sp.Sizes, PPS: pps, Threads: sp.Threads, CPUs: r.cfg.CPUs}))
	for _, s := range spans {
		s.t.fwd = append(s.t.fwd, share{e: e, from: s.from, n: s.n})
	}
	return nil
}

// ringFits: the ring sends UDP from the client only, one frame size or a
// mix, unmarked, from one address.
func ringFits(sp *wire.Spec) error {
	if sp.Proto != wire.UDP || sp.Direction != wire.Forward {
		return usage.Field("Engine", "ring sends UDP from the client only: not with %s %s", sp.Proto, sp.Direction)
	}
	return builtOnce("ring", sp)
}

// ErrDSCPEngine says an engine that builds its frames once was asked to
// mark them: the socket engine marks (IP_TOS, IPV6_TCLASS).
var ErrDSCPEngine = errors.New("does not mark DSCP (its IP headers are built once, in its ring); --engine socket marks")

// ErrSourcesEngine says an engine that builds its frames once was asked
// to send from several addresses: the socket engine does (--src).
var ErrSourcesEngine = errors.New("sends from one address (its IP headers are built once, in its ring); --engine socket sends from each --src")

// builtOnce refuses for the engine called name what frames built once in
// a ring cannot do: a DSCP mark, several source addresses. (A mix of
// sizes they can: each send writes its frame's headers, frameMix.)
func builtOnce(name string, sp *wire.Spec) error {
	switch {
	case len(sp.Sources) > 0:
		return usage.Field("Engine", "%s %w", name, ErrSourcesEngine)
	case sp.DSCP != 0:
		return usage.Field("Engine", "%s %w", name, ErrDSCPEngine)
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
	warnBypass(r, to)
	return nil
}
