package traffic

import (
	"cmp"
	"fmt"

	"github.com/vishvananda/netlink"

	"linerate/internal/usage"
	"linerate/results"
	"linerate/traffic/frame"
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
	err := t.openFrames(r, "xdp", func(link netlink.Link) (int, error) {
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
