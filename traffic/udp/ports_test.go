package udp

import (
	"fmt"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"linerate/traffic/sock"
)

// TestReceiverPortsOwn: a receiver's kernel-chosen ports are its own,
// with another program's SO_REUSEPORT sockets holding ports on the same
// address (here 2,000 of them, bound to port 0 as a receiver bound its
// ports until now). A bind of port 0 with SO_REUSEPORT may be given a
// port such sockets hold and join their group (sock.FreeUDPPort): with
// 64 ports against 2,000 held, nearly every run of the old receiver had
// one (seen in CI: a bidirectional test on loopback whose two ends shared
// a port and counted each other's datagrams). Both shapes are checked:
// a socket per port, and ports shared by several threads.
func TestReceiverPortsOwn(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	held := map[uint16]bool{}
	for range 2000 {
		fd, err := sock.ListenUDP(netip.AddrPortFrom(lo, 0), 0, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		p, err := sock.LocalPort(fd)
		if err != nil {
			t.Fatal(err)
		}
		held[p] = true
	}
	for _, c := range []struct{ ports, threads int }{{64, 2}, {32, 64}} {
		t.Run(fmt.Sprintf("%d ports, %d threads", c.ports, c.threads), func(t *testing.T) {
			r, err := NewReceiver(ReceiverConfig{Local: lo, Ports: c.ports, Threads: c.threads})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			mine := map[uint16]bool{}
			for _, p := range r.Ports() {
				if held[p] {
					t.Errorf("port %d: held by another program's socket already", p)
				}
				mine[p] = true
			}
			if len(mine) != c.ports {
				t.Errorf("%d distinct ports of %d", len(mine), c.ports)
			}
			// A port shared by threads has a socket of each.
			if c.threads > c.ports {
				for _, th := range r.threads {
					if len(th.fds) != c.ports {
						t.Errorf("a thread has %d sockets, want one per port (%d)", len(th.fds), c.ports)
					}
				}
			}
		})
	}
}
