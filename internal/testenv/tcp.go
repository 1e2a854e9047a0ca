package testenv

import (
	"encoding/hex"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TCP states as /proc/net/tcp numbers them.
const (
	TCPEstablished = 0x01
	TCPListen      = 0x0A
)

// TCPSocket is one IPv4 TCP socket of a namespace, as /proc/net/tcp shows
// it.
type TCPSocket struct {
	Local, Remote netip.AddrPort
	State         int
	// RxQueue is the bytes waiting to be read; for a listener, the
	// connections waiting to be accepted.
	RxQueue int
}

// TCPSockets lists the IPv4 TCP sockets of n (its /proc/net/tcp, read from
// a thread switched into it).
func (n *NetNS) TCPSockets(t testing.TB) []TCPSocket {
	t.Helper()
	var b []byte
	if err := n.Do(func() (err error) {
		b, err = os.ReadFile("/proc/thread-self/net/tcp")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var out []TCPSocket
	for _, l := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		st, err1 := strconv.ParseUint(f[3], 16, 8)
		_, rx, _ := strings.Cut(f[4], ":")
		q, err2 := strconv.ParseUint(rx, 16, 32)
		local, err3 := procAddr(f[1])
		remote, err4 := procAddr(f[2])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			t.Fatalf("/proc/net/tcp of %s: %q", n.Name, l)
		}
		out = append(out, TCPSocket{Local: local, Remote: remote, State: int(st), RxQueue: int(q)})
	}
	return out
}

// procAddr reads /proc/net/tcp's ADDR:PORT, the IPv4 address a 32-bit
// number in the host's (little-endian) order, both in hex.
func procAddr(s string) (netip.AddrPort, error) {
	a, p, _ := strings.Cut(s, ":")
	b, err := hex.DecodeString(a)
	if err != nil || len(b) != 4 {
		return netip.AddrPort{}, strconv.ErrSyntax
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{b[3], b[2], b[1], b[0]}), uint16(port)), nil
}

// Hold opens per connections from each of the addresses from (of n) to
// to, each first saying say and reading the beginning of the answer when
// say is not empty, then silent until the other end closes it; a closed
// one is opened again after a moment (at most 200 times each). It returns
// once every connection was opened once; stop (also called when the test
// ends) closes them all and waits.
func (n *NetNS) Hold(t testing.TB, from []string, to string, per int, say string) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg, first sync.WaitGroup
	for _, a := range from {
		for range per {
			first.Add(1)
			wg.Go(func() {
				opened := sync.OnceFunc(first.Done)
				defer opened()
				d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(a)}}
				for range 200 {
					var c net.Conn
					err := n.Do(func() (err error) {
						c, err = d.Dial("tcp", to)
						return err
					})
					if err == nil && say != "" {
						_ = c.SetDeadline(time.Now().Add(2 * time.Second))
						if _, err = io.WriteString(c, say); err == nil {
							_, err = c.Read(make([]byte, 512))
						}
						_ = c.SetDeadline(time.Time{})
					}
					opened()
					if err == nil {
						closed := make(chan struct{})
						go func() {
							defer close(closed)
							_, _ = io.Copy(io.Discard, c) // until the other end closes it
						}()
						select {
						case <-done:
							c.Close()
							<-closed
							return
						case <-closed:
						}
						c.Close()
					}
					select {
					case <-done:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			})
		}
	}
	first.Wait()
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}
