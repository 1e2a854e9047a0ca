package traffic

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"linerate/traffic/sock"
	"linerate/wire"
)

// probeRounds bounds how often ProbePathMTU sends: each round that learns
// a smaller MTU from a hop (ICMP fragmentation needed, packet too big) is
// followed by one more at the new size.
const probeRounds = 4

// ProbePathMTU finds the path MTU toward peer: it sends datagrams that may
// not be fragmented (IP_PMTUDISC_DO), each as large as the path allows so
// far, from local (any address when invalid), waits for a hop to object,
// and returns the MTU the kernel settled on (IP_MTU). It starts at this
// end's MTU toward peer, so it never finds more than this end sends. A far
// end whose own MTU is smaller drops oversized frames without a word: the
// peer's MTU is evidence of its own (diagnose.PathMTU.PeerMaxMTU).
func ProbePathMTU(local netip.Addr, peer netip.AddrPort, wait time.Duration) (int, error) {
	p, err := ProbePath(local, peer, wait)
	return p.MTU, err
}

// Path is what ProbePath found: the path MTU toward a peer and this end's
// interface and address on the way.
type Path struct {
	MTU   int
	Iface string
	Local netip.Addr
}

// ProbePath is ProbePathMTU that also says which of this end's
// interfaces (in the calling thread's namespace) the probe left by.
func ProbePath(local netip.Addr, peer netip.AddrPort, wait time.Duration) (Path, error) {
	var p Path
	var err error
	p.MTU, p.Local, err = probe(local, peer, wait)
	if err != nil {
		return Path{}, err
	}
	p.Iface, _, _ = sock.InterfaceOf(p.Local) // "" when none holds it
	return p, nil
}

func probe(local netip.Addr, peer netip.AddrPort, wait time.Duration) (int, netip.Addr, error) {
	from := netip.AddrPortFrom(local, 0)
	if !local.IsValid() {
		from = netip.AddrPort{}
	}
	fd, err := sock.DialUDP(from, peer, 0)
	if err != nil {
		return 0, netip.Addr{}, err
	}
	defer sock.CloseFD(fd)
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return 0, netip.Addr{}, fmt.Errorf("probe %s: %w", peer, err)
	}
	at := sock.AddrPortOf(sa).Addr()
	v4 := peer.Addr().Unmap().Is4()
	hdr := wire.UDPOverhead(v4) - wire.EthOverhead
	mtu, err := sock.PathMTU(fd, v4)
	if err != nil {
		return 0, at, fmt.Errorf("path MTU to %s: %w", peer, err)
	}
	for range probeRounds {
		_, err := unix.Write(fd, make([]byte, max(mtu-hdr, 0)))
		if errors.Is(err, unix.ECONNREFUSED) {
			// the peer's port unreachable for an earlier datagram, reported
			// instead of sending this one
			_, err = unix.Write(fd, make([]byte, max(mtu-hdr, 0)))
		}
		if err != nil && !errors.Is(err, unix.EMSGSIZE) && !errors.Is(err, unix.ECONNREFUSED) {
			return 0, at, fmt.Errorf("probe %s with %d bytes: %w", peer, mtu, err)
		}
		if err == nil {
			time.Sleep(wait) // for a hop's ICMP to arrive
		}
		now, err := sock.PathMTU(fd, v4)
		if err != nil {
			return 0, at, fmt.Errorf("path MTU to %s: %w", peer, err)
		}
		if now == mtu {
			return mtu, at, nil
		}
		mtu = now
	}
	return mtu, at, nil
}
