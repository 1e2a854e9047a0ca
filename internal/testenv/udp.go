package testenv

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// UDPSink is a UDP socket bound inside a test's namespace. Datagrams wait
// in its receive buffer until Drain reads them.
type UDPSink struct {
	Conn *net.UDPConn
	Addr netip.AddrPort
}

// ListenUDP binds a UDP socket to addr ("10.99.0.2:5201") inside the
// namespace. rcvbuf > 0 forces the receive buffer to that many bytes
// (SO_RCVBUFFORCE, as root: the kernel doubles it and keeps at least its
// minimum); 0 leaves the default. The socket closes when the test ends.
func (n *NetNS) ListenUDP(t testing.TB, addr string, rcvbuf int) *UDPSink {
	t.Helper()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	var c *net.UDPConn
	err = n.Do(func() error {
		var err error
		c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
		if err != nil {
			return err
		}
		if rcvbuf > 0 {
			raw, err := c.SyscallConn()
			if err != nil {
				return err
			}
			var serr error
			if err := raw.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf)
			}); err != nil {
				return err
			}
			return serr
		}
		return nil
	})
	if err != nil {
		if c != nil {
			c.Close()
		}
		t.Fatalf("listen %s in %s: %v", addr, n.Name, err)
	}
	t.Cleanup(func() { c.Close() })
	return &UDPSink{Conn: c, Addr: ap}
}

// Drain reads every datagram waiting in the socket and returns how many.
func (s *UDPSink) Drain(t testing.TB) int {
	t.Helper()
	raw, err := s.Conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 65536)
	n := 0
	for {
		var rerr error
		if err := raw.Read(func(fd uintptr) bool {
			_, _, rerr = unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
			return true // never wait for more
		}); err != nil {
			t.Fatal(err)
		}
		if errors.Is(rerr, unix.EAGAIN) {
			return n
		}
		if rerr != nil {
			t.Fatalf("drain %s: %v", s.Addr, rerr)
		}
		n++
	}
}

// Flush is how a sender makes sure every datagram it sent has been
// through the kernel: after the datagrams it sends one marker to Sink, on
// the same CPU, and waits until the marker arrives. Per-CPU backlogs are
// first in, first out, so by then the earlier datagrams were delivered or
// dropped. Before, when set, runs first (for instance, waiting for a
// shaper's queue to empty so that it cannot drop the marker).
type Flush struct {
	Sink   *UDPSink
	Before func() error
}

// SendUDP sends count datagrams of size bytes of payload to to, from an
// unconnected socket inside the namespace, on one thread pinned to one CPU,
// then flushes (when flush is not nil). It returns the datagrams the kernel
// accepted; a send that fails (ENOBUFS, EAGAIN) is not counted and not
// retried. The load is bounded by count.
func (n *NetNS) SendUDP(t testing.TB, to netip.AddrPort, count, size int, flush *Flush) int {
	t.Helper()
	sent := 0
	err := n.Do(func() error {
		// The thread is thrown away after Do: pinning it changes nothing else.
		var set unix.CPUSet
		set.Set(0)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("pin to CPU 0: %w", err)
		}
		fam := unix.AF_INET
		if to.Addr().Is6() {
			fam = unix.AF_INET6
		}
		fd, err := unix.Socket(fam, unix.SOCK_DGRAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		sa := sockaddr(to)
		payload := make([]byte, size)
		for i := range count {
			payload[0], payload[1] = byte(i>>8), byte(i)
			if err := unix.Sendto(fd, payload, 0, sa); err == nil {
				sent++
			}
		}
		if flush == nil {
			return nil
		}
		if flush.Before != nil {
			if err := flush.Before(); err != nil {
				return err
			}
		}
		if err := unix.Sendto(fd, []byte("flush"), 0, sockaddr(flush.Sink.Addr)); err != nil {
			return fmt.Errorf("send the flush marker: %w", err)
		}
		if err := flush.Sink.Conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			return err
		}
		buf := make([]byte, 64)
		if _, _, err := flush.Sink.Conn.ReadFromUDPAddrPort(buf); err != nil {
			return fmt.Errorf("wait for the flush marker at %s: %w", flush.Sink.Addr, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("send UDP to %s from %s: %v", to, n.Name, err)
	}
	return sent
}

func sockaddr(ap netip.AddrPort) unix.Sockaddr {
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
}

// QdiscsDrained returns a Flush.Before hook that waits (up to 10 s) until
// no qdisc of the namespaces holds a packet, so that a shaper cannot drop
// the flush marker behind the test's datagrams.
func QdiscsDrained(t testing.TB, nss ...*NetNS) func() error {
	t.Helper()
	handles := make([]*netlink.Handle, len(nss))
	for i, ns := range nss {
		handles[i] = ns.Netlink(t)
	}
	return func() error {
		deadline := time.Now().Add(10 * time.Second)
		for i, h := range handles {
			for {
				qs, err := h.QdiscList(nil)
				if err != nil {
					return fmt.Errorf("qdiscs of %s: %w", nss[i].Name, err)
				}
				busy := false
				for _, q := range qs {
					if st := q.Attrs().Statistics; st != nil && st.Queue != nil && st.Queue.Qlen > 0 {
						busy = true
					}
				}
				if !busy {
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("qdiscs of %s still hold packets after 10 s", nss[i].Name)
				}
				time.Sleep(time.Millisecond)
			}
		}
		return nil
	}
}
