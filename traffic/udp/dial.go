package udp

import (
	"fmt"
	"net/netip"

	"linerate/traffic/sock"
	"linerate/wire"
)

// MTUError is a payload that does not fit the path MTU without
// fragmentation.
type MTUError struct{ Payload, MTU int }

func (e *MTUError) Error() string {
	return fmt.Sprintf("payload %d bytes: the path MTU is %d", e.Payload, e.MTU)
}

// DialFlows makes the sockets of a Sender: one connected socket per
// stream to each of ports on remote, from locals in turn (any port: each
// socket its own, so each flow a 5-tuple of its own), marked with dscp (0:
// unmarked). With later,
// the sockets are bound but not connected: aimUDP connects them once the
// client's punches say where its NAT maps its ports. A payload over the
// path MTU is an *MTUError.
func DialFlows(locals []netip.Addr, remote netip.Addr, ports []uint16, streams, payload, dscp int, later bool) ([]int, error) {
	var fds []int
	for _, port := range ports {
		for range streams {
			to := netip.AddrPortFrom(remote, port)
			if later {
				to = netip.AddrPort{}
			}
			local := locals[len(fds)%len(locals)]
			fd, err := sock.DialUDP(netip.AddrPortFrom(local, 0), to, 4<<20)
			if err == nil {
				if err = sock.SetDSCP(fd, dscp); err != nil {
					sock.CloseFD(fd)
				}
			}
			if err != nil {
				sock.CloseFDs(fds)
				return nil, err
			}
			fds = append(fds, fd)
		}
	}
	if len(ports) > 0 {
		if err := checkPathMTU(locals[0], netip.AddrPortFrom(remote, ports[0]), payload); err != nil {
			sock.CloseFDs(fds)
			return nil, err
		}
	}
	return fds, nil
}

// checkPathMTU is an *MTUError when payload does not fit the path MTU from
// local to remote, asked of a socket of its own.
func checkPathMTU(local netip.Addr, remote netip.AddrPort, payload int) error {
	fd, err := sock.DialUDP(netip.AddrPortFrom(local, 0), remote, 0)
	if err != nil {
		return err
	}
	defer sock.CloseFD(fd)
	v4 := remote.Addr().Unmap().Is4()
	if mtu, err := sock.PathMTU(fd, v4); err == nil && payload+wire.UDPOverhead(v4)-wire.EthOverhead > mtu {
		return &MTUError{Payload: payload, MTU: mtu}
	}
	return nil
}
