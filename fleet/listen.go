package fleet

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"linerate/traffic"
)

// Listen starts the agent of each host (receivers reached over ssh) and
// has it listen, on a free port of every address, for the senders' control
// connections while the run lasts: an agent ssh starts serves only its
// controller otherwise. It returns each host's port by name and what ends
// the channels.
func Listen(ctx context.Context, hosts []Host, secret string) (ports map[string]int, closeAll func(), err error) {
	ports = map[string]int{}
	var conns []net.Conn
	closeAll = func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for _, h := range hosts {
		port, c, err := listen(ctx, h, secret)
		if c != nil {
			conns = append(conns, c)
		}
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		ports[h.Name] = port
	}
	return ports, closeAll, nil
}

// listen reaches one host's agent and has it listen; the connection, when
// there is one, stays open for the run.
func listen(ctx context.Context, h Host, secret string) (int, net.Conn, error) {
	c, err := remoteDial(ctx, h)
	if err != nil {
		return 0, nil, err
	}
	addrs, err := traffic.ListenOn(c, traffic.Listen{Addresses: []string{":0"}, Secret: secret})
	if err != nil {
		return 0, c, fmt.Errorf("%s: listen for the senders: %w", h.Reach, err)
	}
	ap, err := netip.ParseAddrPort(addrs[0])
	if err != nil {
		return 0, c, fmt.Errorf("%s: listens at %q: %w", h.Reach, addrs[0], err)
	}
	return int(ap.Port()), c, nil
}
