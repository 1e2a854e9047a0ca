package udp

import (
	"encoding/binary"
	"net/netip"
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
