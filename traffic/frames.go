package traffic

import (
	"cmp"
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
	"linerate/traffic/frame"
	"linerate/traffic/session"
	"linerate/wire"
)

// openFrames makes the frame senders of the target, with open, on the
// interface of the route to it: one per destination port, or, when check
// (if set: it vets that interface first) says the interface takes fewer
// senders, that many, each sending the streams of a run of ports (sender g
// of n the ports g·P/n up to (g+1)·P/n). Each port's streams (--flows,
// --streams) leave from source ports of their own, round robin.
func (t *target) openFrames(r *clientRun, engine string, check func(netlink.Link) (senders int, err error),
	open func(link netlink.Link, sender int, rc frame.RingConfig) (frame.Sender, error)) error {
	cfg := r.cfg
	sp := &t.spec
	if !t.addr.Addr().Is4() {
		return usage.Field("Engine", "%s builds IPv4 frames only: %s is not IPv4", engine, t.name)
	}
	perPort := sp.UDPPacketsPerSecond(wire.UDPOverhead(true)) / float64(sp.Ports)
	return cfg.setup(func() error {
		routes, err := netlink.RouteGet(t.addr.Addr().AsSlice())
		if err != nil || len(routes) == 0 {
			return fmt.Errorf("%s: no route to %s for the %s engine: %v", t.name, t.addr.Addr(), engine, err)
		}
		link, err := netlink.LinkByIndex(routes[0].LinkIndex)
		if err != nil {
			return fmt.Errorf("%s: interface of the route to %s: %w", t.name, t.addr.Addr(), err)
		}
		if why := framesUnspread(sp, link); why != "" {
			t.acc.Notes = append(t.acc.Notes, fmt.Sprintf("--engine %s: %s", engine, why))
		}
		senders := sp.Ports
		if check != nil {
			n, err := check(link)
			if err != nil {
				return err
			}
			senders = min(max(n, 1), sp.Ports)
		}
		for g := range senders {
			first, end := g*sp.Ports/senders, (g+1)*sp.Ports/senders
			cpu := -1
			if len(cfg.CPUs) > 0 {
				cpu = cfg.CPUs[g%len(cfg.CPUs)]
			}
			rc := frame.RingConfig{
				Iface: link.Attrs().Name, SrcIP: t.local, DstIP: t.addr.Addr(),
				DstPorts: t.acc.UDPPorts[first:end], SrcPort: ringSrcPort, SrcPorts: sp.Streams, FrameSize: sp.Payload + wire.UDPOverhead(true), Sizes: sp.Sizes,
				Rate: perPort * float64(end-first), Duration: sp.Duration.D(), Warmup: sp.Warmup.D(),
				Stream: uint16(first * sp.Streams), CPU: cpu,
			}
			s, err := open(link, g, rc)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			e := r.sess.Add(session.Sending, t.name, frame.NewFlow(s, engine, cpu, first*sp.Streams, (end-first)*sp.Streams, sp.Payload, sp.Sizes))
			t.fwd = append(t.fwd, share{e: e})
		}
		return nil
	})
}

// framesUnspread says why several flows per port would not spread over a
// veth's queues when the ring or AF_XDP sends them ("" when they would):
// AF_PACKET picks the TX queue by the sending CPU (packet_pick_tx_queue
// records it as the skb's queue before the hash is asked), AF_XDP sends
// on its socket's queue, so neither reads the flow, and a veth hands a
// frame to the receive queue of its peer that matches the TX queue. On a
// NIC the receiver's RSS hashes the frames as any others.
func framesUnspread(sp *wire.Spec, link netlink.Link) string {
	if sp.Streams > 1 && link.Type() == "veth" {
		return fmt.Sprintf("the ring and AF_XDP choose the TX queue by CPU or socket, not by flow, and the veth %s hands a frame to the same receive queue of its peer: its %d flows per port would land on one queue (the socket engine's take the flow hash)", link.Attrs().Name, sp.Streams)
	}
	return ""
}

// ringSrcPort is the first source port of the frame engines' streams.
const ringSrcPort = 40000

// openRing makes one ring sender per destination port of the target.
func (t *target) openRing(r *clientRun) error {
	return t.openFrames(r, ringName, nil, func(_ netlink.Link, _ int, rc frame.RingConfig) (frame.Sender, error) {
		return frame.NewRingSender(rc)
	})
}

// xdpFits: AF_XDP sends UDP from the client only, like the ring.
func xdpFits(sp *wire.Spec) error {
	if sp.Proto != wire.UDP || sp.Direction != wire.Forward {
		return usage.Field("Engine", "xdp sends UDP from the client only: not with %s %s", sp.Proto, sp.Direction)
	}
	return builtOnce(xdpName, sp)
}

// xdpWhyNot says why the AF_XDP engine cannot run this test to these
// targets ("" when it can): where the ring cannot, nor can it; it also
// needs AF_XDP sockets, frames that fit a UMEM chunk, and TX queues it can
// count on the interface towards each target (a socket binds to one).
func xdpWhyNot(r *clientRun, to []*target) string {
	if why := ringWhyNot(r, to); why != "" {
		return why
	}
	for _, t := range to {
		if n := t.spec.Payload + wire.UDPOverhead(true); n > frame.MaxXDPFrameSize {
			return fmt.Sprintf("AF_XDP sends frames up to %d bytes, not %d", frame.MaxXDPFrameSize, n)
		}
	}
	var why string
	err := r.cfg.setup(func() error {
		if why = frame.XDPUnavailable(); why != "" {
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
			if _, err := frame.TXQueuesInUse(link.Attrs().Name); err != nil {
				why = err.Error()
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

// openXDP makes the AF_XDP senders of the target: one socket per TX queue
// in use, up to one per destination port (queue g for sender g). AF_XDP
// takes one socket per queue, so with fewer queues than ports a socket
// sends the flows of several ports, as the queue of a single-queue NIC
// takes every flow.
func (t *target) openXDP(r *clientRun) error {
	sp := &t.spec
	copyMode, senders := 0, 0
	var (
		iface string
		zcErr error
	)
	err := t.openFrames(r, xdpName, func(link netlink.Link) (int, error) {
		iface = link.Attrs().Name
		q, err := frame.TXQueuesInUse(iface)
		if err != nil {
			return 0, err
		}
		senders = min(q, sp.Ports)
		return senders, nil
	}, func(_ netlink.Link, g int, rc frame.RingConfig) (frame.Sender, error) {
		s, err := frame.NewXDPSender(frame.XDPConfig{RingConfig: rc, Queue: g})
		if err == nil && !s.ZeroCopy() {
			copyMode++
			zcErr = cmp.Or(zcErr, s.ZeroCopyError())
		}
		return s, err
	})
	if err == nil && senders > 0 {
		t.afxdp = afxdpStat(iface, senders, copyMode, zcErr)
	}
	if senders > 0 && senders < sp.Ports {
		t.acc.Notes = append(t.acc.Notes, fmt.Sprintf("--engine xdp: %s uses %d TX queue(s) for %d ports: %d AF_XDP socket(s), each sending the flows of %s (more queues, more sending threads: `ethtool -L %s tx %d`)",
			iface, senders, sp.Ports, senders, portsPerSender(sp.Ports, senders), iface, sp.Ports))
	}
	if copyMode > 0 {
		note := fmt.Sprintf("--engine xdp: %s has no AF_XDP zero-copy, %d socket(s) in copy mode", iface, copyMode)
		if zcErr != nil {
			note += " (zero-copy: " + zcErr.Error() + ")"
		}
		t.acc.Notes = append(t.acc.Notes, note)
	}
	return err
}

// afxdpStat says how a target's AF_XDP sockets were bound: n sockets on
// iface, copies of them in copy mode, zcErr why the driver refused
// zero-copy.
func afxdpStat(iface string, n, copies int, zcErr error) *results.AFXDPStat {
	st := &results.AFXDPStat{Interface: iface, Sockets: n, ZeroCopy: n - copies}
	switch copies {
	case 0:
		st.Mode = results.XDPNative
	case n:
		st.Mode = results.XDPGeneric
	default:
		st.Mode = results.XDPMixed
	}
	if zcErr != nil {
		st.ZeroCopyError = zcErr.Error()
	}
	return st
}

// portsPerSender says how many ports each of n senders takes from p.
func portsPerSender(p, n int) string {
	if p%n == 0 {
		return fmt.Sprintf("%d ports", p/n)
	}
	return fmt.Sprintf("%d or %d ports", p/n, p/n+1)
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
	e := r.cfg.Engine
	qs, err := configuredQdiscs(r, to)
	switch {
	case err != nil:
		r.notes = append(r.notes, fmt.Sprintf("--engine %s sends below the qdiscs, which could not be read (%v): a shaper there would be bypassed", e, err))
	case len(qs) > 0:
		r.notes = append(r.notes, fmt.Sprintf("--engine %s sends below the qdiscs and bypasses %s: it shapes nothing this test sends and is left out of the path's ceiling, which is the link speed (none on a virtual link)", e, strings.Join(qs, ", ")))
	}
}

// ringFits: the ring sends UDP from the client only, one frame size or a
// mix, unmarked, from one address.
func ringFits(sp *wire.Spec) error {
	if sp.Proto != wire.UDP || sp.Direction != wire.Forward {
		return usage.Field("Engine", "ring sends UDP from the client only: not with %s %s", sp.Proto, sp.Direction)
	}
	return builtOnce(ringName, sp)
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

// ringEngine sends through an AF_PACKET transmit ring (traffic/frame).
var ringEngine = &udpEngine{name: ringName, fits: ringFits, open: belowQdiscs((*target).openRing)}

// xdpEngine sends through AF_XDP sockets (traffic/frame).
var xdpEngine = &udpEngine{name: xdpName, fits: xdpFits, open: belowQdiscs((*target).openXDP)}

// belowQdiscs is an engine asked for by name that sends below the qdiscs
// (--engine ring, xdp): open makes its senders of each target, and a note
// names the configured qdiscs they bypass.
func belowQdiscs(open func(*target, *clientRun) error) func(*clientRun, []*target) error {
	return func(r *clientRun, to []*target) error {
		if err := openEach(r, to, open); err != nil {
			return err
		}
		warnBypass(r, to)
		return nil
	}
}

// openEach makes, with open, the senders of each target in turn.
func openEach(r *clientRun, to []*target, open func(*target, *clientRun) error) error {
	for _, t := range to {
		if err := open(t, r); err != nil {
			return err
		}
	}
	return nil
}
