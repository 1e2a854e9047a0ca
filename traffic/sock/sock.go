// Package sock holds the socket calls every traffic engine shares:
// addresses as the kernel's socket calls take them, UDP sockets bound and
// connected with fragmentation forbidden, buffer sizes a root process may
// raise past the kernel's caps, DSCP marks, the path MTU of a connected
// socket, and the interface that holds an address. It knows nothing of a
// test; every other package of the traffic engine builds on it.
package sock

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"linerate/wire"
)

// Sockaddr converts an address and port for the socket calls.
func Sockaddr(a netip.AddrPort) unix.Sockaddr {
	ip := a.Addr().Unmap()
	if ip.Is4() {
		return &unix.SockaddrInet4{Port: int(a.Port()), Addr: ip.As4()}
	}
	sa := &unix.SockaddrInet6{Port: int(a.Port()), Addr: ip.As16()}
	if z := ip.Zone(); z != "" {
		// A link-local address needs its interface.
		if ifi, err := interfaceIndex(z); err == nil {
			sa.ZoneId = uint32(ifi)
		}
	}
	return sa
}

// AddrPortOf is the address and port of sa (an IPv4 or IPv6 socket
// address; any other is invalid).
func AddrPortOf(sa unix.Sockaddr) netip.AddrPort {
	switch s := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(s.Addr), uint16(s.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(s.Addr), uint16(s.Port))
	}
	return netip.AddrPort{}
}

func family(a netip.Addr) int {
	if a.Unmap().Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

// SetBuf sets SO_SNDBUF or SO_RCVBUF to size bytes, with the FORCE variant
// first so that root is not capped by net.core.[rw]mem_max.
func SetBuf(fd, opt, force, size int) {
	if size <= 0 {
		return
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, size) == nil {
		return
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, size)
}

// SetTimeout sets the socket timeout opt (SO_SNDTIMEO or SO_RCVTIMEO) of
// fd to d.
func SetTimeout(fd, opt int, d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, opt, &tv)
}

// DialUDP makes a blocking UDP socket bound to local (any address when
// invalid, any port when 0) and connected to remote (not connected when
// remote is invalid: aimed later), with fragmentation forbidden so that an oversized datagram is an error, not two packets.
func DialUDP(local netip.AddrPort, remote netip.AddrPort, sndbuf int) (int, error) {
	at := remote.Addr()
	if !remote.IsValid() {
		at = local.Addr()
	}
	fd, err := unix.Socket(family(at), unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("udp socket: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	SetBuf(fd, unix.SO_SNDBUF, unix.SO_SNDBUFFORCE, sndbuf)
	if at.Unmap().Is4() {
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	} else {
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO)
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_DONTFRAG, 1)
	}
	if err := SetTimeout(fd, unix.SO_SNDTIMEO, 100*time.Millisecond); err != nil {
		return -1, fmt.Errorf("udp socket: SO_SNDTIMEO: %w", err)
	}
	if local.Addr().IsValid() || local.Port() != 0 {
		if err := unix.Bind(fd, Sockaddr(local)); err != nil {
			return -1, bindError(local, err)
		}
	}
	if remote.IsValid() {
		if err := unix.Connect(fd, Sockaddr(remote)); err != nil {
			return -1, fmt.Errorf("udp connect to %s: %w", remote, err)
		}
	}
	ok = true
	return fd, nil
}

// ListenUDP makes a UDP socket bound to addr; with shared, it has
// SO_REUSEPORT, so that several receiver threads can share one port (the
// kernel spreads flows over them by a hash of the addresses and ports).
// A shared socket should be bound to a port FreeUDPPort found, not to
// port 0: see there.
func ListenUDP(addr netip.AddrPort, rcvbuf int, shared bool) (int, error) {
	fd, err := unix.Socket(family(addr.Addr()), unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("udp socket: %w", err)
	}
	if shared {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("udp socket: SO_REUSEPORT: %w", err)
		}
	}
	SetBuf(fd, unix.SO_RCVBUF, unix.SO_RCVBUFFORCE, rcvbuf)
	if err := SetTimeout(fd, unix.SO_RCVTIMEO, 100*time.Millisecond); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("udp socket: SO_RCVTIMEO: %w", err)
	}
	if err := unix.Bind(fd, Sockaddr(addr)); err != nil {
		unix.Close(fd)
		return -1, bindError(addr, err)
	}
	return fd, nil
}

// FreeUDPPort is a UDP port on addr that no socket holds, for sockets
// that will share it (ListenUDP with shared). Binding port 0 with
// SO_REUSEPORT may be handed a port that SO_REUSEPORT sockets of the
// same user hold already (net/ipv4/udp.c, udp_lib_lport_inuse, leaves
// those out of the ports in use), and the new socket joins their group:
// two unrelated receivers, say a test's two ends on one host, then split
// each other's flows. A socket without SO_REUSEPORT is never given a
// held port; it finds one and gives it back. Another program's bind of
// port 0 between the two could still take it.
func FreeUDPPort(addr netip.Addr) (uint16, error) {
	fd, err := ListenUDP(netip.AddrPortFrom(addr, 0), 0, false)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return LocalPort(fd)
}

// LocalPort returns the port fd is bound to.
func LocalPort(fd int) (uint16, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return 0, err
	}
	return AddrPortOf(sa).Port(), nil
}

// ErrAddrNotLocal is wrapped when a bind address is not on this host.
var ErrAddrNotLocal = errors.New("address not on this host")

func bindError(a netip.AddrPort, err error) error {
	if errors.Is(err, unix.EADDRNOTAVAIL) {
		return fmt.Errorf("bind %s: %w", a.Addr(), ErrAddrNotLocal)
	}
	return fmt.Errorf("bind %s: %w", a, err)
}

// PathMTU is the MTU the kernel would use for the connected socket fd.
func PathMTU(fd int, v4 bool) (int, error) {
	if v4 {
		return unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU)
	}
	return unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU)
}

// CloseFD closes fd, its error dropped: a socket being given up on.
func CloseFD(fd int) { _ = unix.Close(fd) }

// CloseFDs closes every descriptor of fds, as CloseFD.
func CloseFDs(fds []int) {
	for _, fd := range fds {
		CloseFD(fd)
	}
}

// WithFD runs fn on the socket of c.
func WithFD(c syscall.Conn, fn func(fd int) error) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// SetDSCP marks what fd sends with the code point dscp (0: left as it
// is): IP_TOS on an IPv4 socket, IPV6_TCLASS on an IPv6 one (and IP_TOS
// too, for IPv4-mapped peers).
func SetDSCP(fd, dscp int) error {
	if dscp == 0 {
		return nil
	}
	tos := wire.TOS(dscp)
	dom, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return fmt.Errorf("SO_DOMAIN: %w", err)
	}
	if dom == unix.AF_INET6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, tos); err != nil {
			return fmt.Errorf("IPV6_TCLASS %#x: %w", tos, err)
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, tos)
		return nil
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, tos); err != nil {
		return fmt.Errorf("IP_TOS %#x: %w", tos, err)
	}
	return nil
}

// AddrOf is the IP address of a (a TCP address, or any address whose
// string is IP:PORT), unmapped from IPv6; a TCP address keeps its zone.
// It is invalid when a holds none.
func AddrOf(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(ta.IP)
		return ip.Unmap().WithZone(ta.Zone)
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
