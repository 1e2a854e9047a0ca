package traffic

import (
	"fmt"

	"github.com/vishvananda/netlink"

	"linerate/internal/usage"
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
	return t.openFrames(r, "ring", nil, func(_ netlink.Link, _ int, rc frame.RingConfig) (frame.Sender, error) {
		return frame.NewRingSender(rc)
	})
}
