package traffic

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"linerate/traffic/sock"
	"linerate/wire"
)

// UDP from the server to the client (reverse, bidir) through a NAT: the
// server sees the client at the NAT's address, and the NAT forwards a
// datagram to the client only when it answers one the client sent first
// (conntrack's reply direction, from the same address and port). So the
// client punches: once the server has told it its sending sockets' ports,
// it sends a small datagram from each of its receiving ports to each
// sending socket that will send to that port. The NAT maps them, and the
// server learns the mapped address and port from the punch itself (the
// NAT may have changed the port) before it aims its sockets there. TCP
// needs none of this: the client opens its connections.
//
// A punch carries a nonce the server gave over the authenticated control
// connection, and only one from the control connection's peer address is
// taken: a third party cannot aim the server's sockets elsewhere, and the
// client itself can change only the ports.

// punchMagic starts a punch; the nonce follows.
const punchMagic = "linerate-punch1 "

// punchWait is how long the server waits for the punches after start:
// they left the client before its start message.
const punchWait = time.Second

// punchCopies is how many times each punch is sent, in case one is lost.
const punchCopies = 2

// aimer holds a server's sending sockets until the client's punches say
// where to connect them.
type aimer struct {
	fds      []int
	defaults []netip.AddrPort // where each socket sends without a punch
	peer     netip.Addr       // the control connection's peer
	nonce    []byte
}

func newAimer(fds []int, peer netip.Addr, ports []uint16, streams int) (*aimer, error) {
	a := &aimer{fds: fds, peer: peer.Unmap(), nonce: make([]byte, 16)}
	if _, err := rand.Read(a.nonce); err != nil {
		return nil, err
	}
	for i := range fds {
		a.defaults = append(a.defaults, netip.AddrPortFrom(peer, ports[i/streams]))
	}
	return a, nil
}

// punch is what the accept carries.
func (a *aimer) punch() (*wire.Punch, error) {
	p := &wire.Punch{Nonce: hex.EncodeToString(a.nonce)}
	for _, fd := range a.fds {
		port, err := sock.LocalPort(fd)
		if err != nil {
			return nil, fmt.Errorf("udp sender port: %w", err)
		}
		p.Ports = append(p.Ports, port)
	}
	return p, nil
}

// aim waits up to wait for a punch on every socket, then connects each to
// where its punch came from, or to its default. It returns how many
// sockets were punched and how many of those the NAT had moved.
func (a *aimer) aim(wait time.Duration) (punched, moved int, err error) {
	to := make([]netip.AddrPort, len(a.fds))
	deadline := time.Now().Add(wait)
	buf := make([]byte, len(punchMagic)+len(a.nonce)+1)
	want := append([]byte(punchMagic), a.nonce...)
	for punched < len(a.fds) {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		var pfds []unix.PollFd
		var idx []int
		for i, fd := range a.fds {
			if !to[i].IsValid() {
				pfds = append(pfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
				idx = append(idx, i)
			}
		}
		n, err := unix.Poll(pfds, int(left/time.Millisecond)+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return punched, moved, fmt.Errorf("waiting for the client's punches: %w", err)
		}
		if n == 0 {
			continue
		}
		for k, p := range pfds {
			if p.Revents&unix.POLLIN == 0 {
				continue
			}
			i := idx[k]
			for {
				n, from, err := unix.Recvfrom(int(p.Fd), buf, unix.MSG_DONTWAIT)
				if err != nil {
					break
				}
				src := sock.AddrPortOf(from)
				if n == len(want) && bytes.Equal(buf[:n], want) && src.Addr().Unmap() == a.peer {
					to[i] = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
					punched++
					break
				}
			}
		}
	}
	for i, fd := range a.fds {
		dest := a.defaults[i]
		if to[i].IsValid() {
			if to[i].Port() != dest.Port() {
				moved++
			}
			dest = to[i]
		}
		if err := unix.Connect(fd, sock.Sockaddr(dest)); err != nil {
			return punched, moved, fmt.Errorf("udp connect to %s: %w", dest, err)
		}
	}
	return punched, moved, nil
}

// sendPunches sends, from the socket bound to each of the client's
// receiving ports, a punch to each of the server's sending sockets that
// will send to that port (streams of them per port, in order).
func sendPunches(portFDs []int, server netip.Addr, p *wire.Punch, streams int) error {
	nonce, err := hex.DecodeString(p.Nonce)
	if err != nil || len(nonce) == 0 {
		return fmt.Errorf("%w: punch nonce %q", wire.ErrProtocol, p.Nonce)
	}
	if streams <= 0 || len(p.Ports) != len(portFDs)*streams {
		return fmt.Errorf("%w: %d punch ports for %d ports of %d streams", wire.ErrProtocol, len(p.Ports), len(portFDs), streams)
	}
	msg := append([]byte(punchMagic), nonce...)
	for range punchCopies {
		for i, port := range p.Ports {
			to := sock.Sockaddr(netip.AddrPortFrom(server, port))
			if err := unix.Sendto(portFDs[i/streams], msg, 0, to); err != nil {
				return fmt.Errorf("punch to %s port %d: %w", server, port, err)
			}
		}
	}
	return nil
}
