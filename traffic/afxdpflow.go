package traffic

import (
	"fmt"

	"github.com/vishvananda/netlink"

	"linerate/internal/usage"
	"linerate/wire"
)

// xdpFits: AF_XDP sends UDP from the client only, like the ring.
func xdpFits(sp *wire.Spec) error {
	if sp.Proto != wire.UDP || sp.Direction != wire.Forward {
		return usage.Field("Engine", "xdp sends UDP from the client only: not with %s %s", sp.Proto, sp.Direction)
	}
	return builtOnce("xdp", sp)
}

// xdpWhyNot says why the AF_XDP engine cannot run this test to these
// targets ("" when it can): where the ring cannot, nor can it; it also
// needs AF_XDP sockets, frames that fit a UMEM chunk, and a TX queue per
// port on the interface towards each target.
func xdpWhyNot(r *clientRun, to []*target) string {
	if why := ringWhyNot(r, to); why != "" {
		return why
	}
	for _, t := range to {
		if n := t.spec.Payload + wire.UDPOverhead(true); n > MaxXDPFrameSize {
			return fmt.Sprintf("AF_XDP sends frames up to %d bytes, not %d", MaxXDPFrameSize, n)
		}
	}
	sp := &r.spec
	var why string
	err := r.cfg.setup(func() error {
		if why = xdpAvailable(); why != "" {
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
			name := link.Attrs().Name
			q, err := txQueuesInUse(name)
			if err != nil {
				why = err.Error()
				return nil
			}
			if sp.Ports > q {
				why = fmt.Sprintf("%d ports need %d TX queues (one AF_XDP socket each), %s uses %d", sp.Ports, sp.Ports, name, q)
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

// openXDPEngine makes the AF_XDP senders of each target.
func openXDPEngine(r *clientRun, to []*target) error {
	for _, t := range to {
		if err := t.openXDP(r); err != nil {
			return err
		}
	}
	warnBypass(r, to)
	return nil
}

// openXDP makes one AF_XDP sender per destination port of the target, each
// bound to a queue of its own (queue p for port p): one socket per queue.
func (t *target) openXDP(r *clientRun) error {
	sp := &t.spec
	copyMode := 0
	var iface string
	err := t.openFrames(r, "xdp", func(link netlink.Link) error {
		iface = link.Attrs().Name
		if q, err := txQueuesInUse(iface); err == nil && sp.Ports > q {
			return usage.Field("Ports", "%d: the xdp engine binds one AF_XDP socket per TX queue, one port per socket, and %s (toward %s) uses %d TX queues: give %d ports, or raise the queues with `ethtool -L %s tx %d`",
				sp.Ports, iface, t.name, q, q, iface, sp.Ports)
		}
		return nil
	}, func(_ netlink.Link, p int, rc RingConfig) (frameSender, error) {
		s, err := NewXDPSender(XDPConfig{RingConfig: rc, Queue: p})
		if err == nil && !s.ZeroCopy() {
			copyMode++
		}
		return s, err
	})
	if copyMode > 0 {
		t.acc.Notes = append(t.acc.Notes, fmt.Sprintf("--engine xdp: %s has no AF_XDP zero-copy, %d socket(s) in copy mode", iface, copyMode))
	}
	return err
}
