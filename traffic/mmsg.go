package traffic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsghdr is struct mmsghdr of <linux/socket.h>: a msghdr and the number of
// bytes the kernel sent or received for it. Go pads it to the alignment of
// its pointers, as C does, on 32- and 64-bit machines alike.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// batch is a preallocated vector of datagrams for sendmmsg/recvmmsg: one
// buffer of slot bytes per datagram, each with its iovec and header. Nothing
// in the hot path allocates.
type batch struct {
	hdrs []mmsghdr
	iovs []unix.Iovec
	buf  []byte
	slot int
	// names, when set, receive each datagram's source address.
	names []rawName
}

// rawName holds a struct sockaddr_in or sockaddr_in6 as the kernel writes
// it: the family in host order, then the port; an IPv4 address at bytes
// 4-7, an IPv6 one at 8-23.
type rawName [unix.SizeofSockaddrInet6]byte

// from is a source address to compare rawNames with.
type from struct {
	family uint16
	addr   []byte
}

func fromAddr(a netip.Addr) from {
	a = a.Unmap()
	if a.Is4() {
		b := a.As4()
		return from{unix.AF_INET, b[:]}
	}
	b := a.As16()
	return from{unix.AF_INET6, b[:]}
}

// fromAny reports whether the datagram's source n is one of fs.
func fromAny(fs []from, n *rawName) bool {
	for i := range fs {
		if fs[i].is(n) {
			return true
		}
	}
	return false
}

// is reports whether the datagram's source n is f.
func (f from) is(n *rawName) bool {
	if binary.NativeEndian.Uint16(n[0:2]) != f.family {
		return false
	}
	if f.family == unix.AF_INET {
		return string(n[4:8]) == string(f.addr)
	}
	return string(n[8:24]) == string(f.addr)
}

// withNames makes recvmmsg keep each datagram's source address.
func (b *batch) withNames() *batch {
	b.names = make([]rawName, len(b.hdrs))
	for i := range b.hdrs {
		b.hdrs[i].hdr.Name = &b.names[i][0]
	}
	return b
}

func newBatch(n, slot int) *batch {
	b := &batch{
		hdrs: make([]mmsghdr, n),
		iovs: make([]unix.Iovec, n),
		buf:  make([]byte, n*slot),
		slot: slot,
	}
	for i := range n {
		b.iovs[i].Base = &b.buf[i*slot]
		b.iovs[i].SetLen(slot)
		b.hdrs[i].hdr.Iov = &b.iovs[i]
		b.hdrs[i].hdr.SetIovlen(1)
	}
	return b
}

// packet returns datagram i's buffer.
func (b *batch) packet(i int) []byte { return b.buf[i*b.slot : (i+1)*b.slot] }

// sendmmsg sends the first n datagrams of b on the connected socket fd and
// returns how many the kernel took.
func sendmmsg(fd int, b *batch, n int) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.hdrs[0])), uintptr(n), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// recvmmsg receives up to len(b.hdrs) datagrams on fd. Each one's real
// length (MSG_TRUNC: longer than the slot is fine, only the header is read)
// is left in b.hdrs[i].n.
func recvmmsg(fd int, b *batch, flags int) (int, error) {
	for i := range b.hdrs {
		b.hdrs[i].hdr.Flags = 0
		if b.names != nil {
			b.hdrs[i].hdr.Namelen = unix.SizeofSockaddrInet6
		}
	}
	r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.hdrs[0])), uintptr(len(b.hdrs)), uintptr(flags|unix.MSG_TRUNC), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// sockaddr converts an address and port for the socket calls.
func sockaddr(a netip.AddrPort) unix.Sockaddr {
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

func addrPortOf(sa unix.Sockaddr) netip.AddrPort {
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

// setBuf sets SO_SNDBUF or SO_RCVBUF to size bytes, with the FORCE variant
// first so that root is not capped by net.core.[rw]mem_max.
func setBuf(fd, opt, force, size int) {
	if size <= 0 {
		return
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, size) == nil {
		return
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, size)
}

func setTimeout(fd, opt int, d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, opt, &tv)
}

// dialUDP makes a blocking UDP socket bound to local (any address when
// invalid, any port when 0) and connected to remote (not connected when
// remote is invalid: aimed later), with fragmentation forbidden so that an oversized datagram is an error, not two packets.
func dialUDP(local netip.AddrPort, remote netip.AddrPort, sndbuf int) (int, error) {
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
	setBuf(fd, unix.SO_SNDBUF, unix.SO_SNDBUFFORCE, sndbuf)
	if at.Unmap().Is4() {
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	} else {
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO)
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_DONTFRAG, 1)
	}
	if err := setTimeout(fd, unix.SO_SNDTIMEO, 100*time.Millisecond); err != nil {
		return -1, fmt.Errorf("udp socket: SO_SNDTIMEO: %w", err)
	}
	if local.Addr().IsValid() || local.Port() != 0 {
		if err := unix.Bind(fd, sockaddr(local)); err != nil {
			return -1, bindError(local, err)
		}
	}
	if remote.IsValid() {
		if err := unix.Connect(fd, sockaddr(remote)); err != nil {
			return -1, fmt.Errorf("udp connect to %s: %w", remote, err)
		}
	}
	ok = true
	return fd, nil
}

// listenUDP makes a UDP socket bound to addr with SO_REUSEPORT, so that
// several receiver threads can share one port (the kernel spreads flows
// over them by a hash of the addresses and ports).
func listenUDP(addr netip.AddrPort, rcvbuf int) (int, error) {
	fd, err := unix.Socket(family(addr.Addr()), unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("udp socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("udp socket: SO_REUSEPORT: %w", err)
	}
	setBuf(fd, unix.SO_RCVBUF, unix.SO_RCVBUFFORCE, rcvbuf)
	if err := setTimeout(fd, unix.SO_RCVTIMEO, 100*time.Millisecond); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("udp socket: SO_RCVTIMEO: %w", err)
	}
	if err := unix.Bind(fd, sockaddr(addr)); err != nil {
		unix.Close(fd)
		return -1, bindError(addr, err)
	}
	return fd, nil
}

// localPort returns the port fd is bound to.
func localPort(fd int) (uint16, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return 0, err
	}
	return addrPortOf(sa).Port(), nil
}

// ErrAddrNotLocal is wrapped when a bind address is not on this host.
var ErrAddrNotLocal = errors.New("address not on this host")

func bindError(a netip.AddrPort, err error) error {
	if errors.Is(err, unix.EADDRNOTAVAIL) {
		return fmt.Errorf("bind %s: %w", a.Addr(), ErrAddrNotLocal)
	}
	return fmt.Errorf("bind %s: %w", a, err)
}

// pathMTU is the MTU the kernel would use for the connected socket fd.
func pathMTU(fd int, v4 bool) (int, error) {
	if v4 {
		return unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU)
	}
	return unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU)
}

func closeFD(fd int) { _ = unix.Close(fd) }
