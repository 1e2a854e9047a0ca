//go:build !small

package live

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"time"

	"linerate/internal/testenv"
)

// webIn serves h (Serve, the door and timeouts included) on 127.0.0.1 in
// a namespace of its own until the test ends; it returns the namespace
// and the port. Clients dial from other loopback addresses of the
// namespace (dialFrom).
func webIn(t *testing.T, h *Hub) (*testenv.NetNS, int) {
	t.Helper()
	ns := testenv.NewNetNS(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	var port int
	if err := ns.Do(func() error {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		port = ln.Addr().(*net.TCPAddr).Port
		go func() { served <- Serve(ctx, ln, h) }()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not stop")
		}
	})
	return ns, port
}

// dialFrom connects from address from (127.x.y.z) to the server in ns,
// with a receive buffer of rcvbuf bytes when not 0; the connection closes
// when the test ends.
func dialFrom(t *testing.T, ns *testenv.NetNS, from string, port, rcvbuf int) *net.TCPConn {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			}); err != nil {
				return err
			}
			return serr
		}
	}
	var c net.Conn
	if err := ns.Do(func() (err error) {
		c, err = d.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// get sends a GET for path on c and reads the response's status and
// headers (not its body).
func get(t *testing.T, c net.Conn, path string) int {
	t.Helper()
	st, err := tryGet(c, path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return st
}

// tryGet is get that returns the error.
func tryGet(c net.Conn, path string) (int, error) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: live\r\n\r\n", path); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// serverConns counts the server's connections in ns (127.0.0.1, local
// port port) that are established.
func serverConns(t *testing.T, ns *testenv.NetNS, port int) int {
	t.Helper()
	n := 0
	for _, s := range ns.TCPSockets(t) {
		if s.Local == netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)) && s.State == testenv.TCPEstablished {
			n++
		}
	}
	return n
}

// waitConns waits (at most 3 s) until the server holds at most n
// connections, and returns how many it holds.
func waitConns(t *testing.T, ns *testenv.NetNS, port, n int) int {
	t.Helper()
	got := serverConns(t, ns, port)
	for deadline := time.Now().Add(3 * time.Second); got > n && time.Now().Before(deadline); got = serverConns(t, ns, port) {
		time.Sleep(20 * time.Millisecond)
	}
	return got
}

// 64 event streams from one address that never read their events used to
// give every other viewer a 503 for as long as they stayed. One address
// now holds maxStreamsPerSource of them; the rest are 503 to it alone,
// and a viewer from elsewhere gets its stream.
func TestSlowViewersDoNotBlockThePage(t *testing.T) {
	h := NewHub(&View{Ifaces: []string{"eth0"}, irqs: names, checked: time.Now(), now: time.Now})
	ns, port := webIn(t, h)
	served := 0
	for range 64 {
		c := dialFrom(t, ns, "127.0.0.2", port, 0)
		// Refused with a 503, or closed at once (the address holds its
		// share of connections); never read again.
		if st, err := tryGet(c, "/events"); err == nil && st == http.StatusOK {
			served++
		}
	}
	if served != maxStreamsPerSource {
		t.Errorf("%d of 64 streams from one address served, want %d", served, maxStreamsPerSource)
	}
	c := dialFrom(t, ns, "127.0.0.3", port, 0)
	if st := get(t, c, "/events"); st != http.StatusOK {
		t.Errorf("another viewer's stream: %d, want 200", st)
	}
}

// A full table of streams from many addresses turns no one away: the
// newcomer takes the slot of an address that holds the most.
func TestStreamFloodFromManyAddresses(t *testing.T) {
	h := NewHub(&View{Ifaces: []string{"eth0"}, irqs: names, checked: time.Now(), now: time.Now})
	ns, port := webIn(t, h)
	for i := range maxStreams {
		from := fmt.Sprintf("127.0.1.%d", 1+i/2) // two streams each
		c := dialFrom(t, ns, from, port, 0)
		if st := get(t, c, "/events"); st != http.StatusOK {
			t.Fatalf("stream %d from %s: %d", i+1, from, st)
		}
	}
	for i := range 3 {
		c := dialFrom(t, ns, "127.0.2.1", port, 0)
		if st := get(t, c, "/events"); st != http.StatusOK {
			t.Fatalf("a new viewer's stream %d with the table full: %d, want 200", i+1, st)
		}
	}
}

// An event stream whose viewer stops reading is dropped once a write has
// waited streamWrite: it used to hold its goroutine, its slot and its
// connection for as long as the viewer stayed.
func TestStreamDropsViewerThatDoesNotRead(t *testing.T) {
	defer func(d time.Duration) { streamWrite = d }(streamWrite)
	streamWrite = 300 * time.Millisecond
	h := NewHub(&View{Ifaces: []string{"eth0"}, irqs: names, checked: time.Now(), now: time.Now})
	ns, port := webIn(t, h)
	c := dialFrom(t, ns, "127.0.0.2", port, 4096)
	if st := get(t, c, "/events"); st != http.StatusOK {
		t.Fatalf("stream: %d", st)
	}
	if n := serverConns(t, ns, port); n != 1 {
		t.Fatalf("the server holds %d connections, want the stream's", n)
	}
	// Publish (bounded: 10 s) until the stream is gone: the buffers fill,
	// a write waits, the stream ends.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				h.Rates(rates())
			}
		}
	})
	n := serverConns(t, ns, port)
	for deadline := time.Now().Add(10 * time.Second); n > 0 && time.Now().Before(deadline); n = serverConns(t, ns, port) {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if n > 0 {
		t.Error("the stream of a viewer that does not read stayed open")
	}
}

// Idle connections take no more than their share: 400 held open after one
// request each, from one address and from 40, leave the server holding at
// most maxConnsPerSource and maxConns of them, and a viewer from
// elsewhere is served. They used to be kept for as long as the client
// liked (3,000 held for over 40 s), until the descriptors ran out.
func TestIdleConnectionsAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		from  func(i int) string
		limit int
	}{
		{"one address", func(int) string { return "127.0.0.2" }, maxConnsPerSource},
		{"40 addresses", func(i int) string { return fmt.Sprintf("127.0.3.%d", 1+i%40) }, maxConns},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHub(&View{Ifaces: []string{"eth0"}, irqs: names, checked: time.Now(), now: time.Now})
			h.Rates(rates())
			ns, port := webIn(t, h)
			for i := range 400 {
				c := dialFrom(t, ns, tc.from(i), port, 0)
				// One request, then idle; one the server closed at once
				// answers nothing.
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				fmt.Fprint(c, "GET /metrics HTTP/1.1\r\nHost: live\r\n\r\n")
				_, _ = http.ReadResponse(bufio.NewReader(c), nil)
			}
			if n := waitConns(t, ns, port, tc.limit); n > tc.limit {
				t.Errorf("the server holds %d idle connections, want at most %d", n, tc.limit)
			}
			c := dialFrom(t, ns, "127.0.2.1", port, 0)
			if st := get(t, c, "/metrics"); st != http.StatusOK {
				t.Errorf("a viewer from elsewhere: %d, want 200", st)
			}
		})
	}
}

// An idle connection is closed after idleTimeout.
func TestIdleConnectionTimesOut(t *testing.T) {
	defer func(d time.Duration) { idleTimeout = d }(idleTimeout)
	idleTimeout = 300 * time.Millisecond
	h := NewHub(&View{Ifaces: []string{"eth0"}, irqs: names, checked: time.Now(), now: time.Now})
	h.Rates(rates())
	ns, port := webIn(t, h)
	c := dialFrom(t, ns, "127.0.0.2", port, 0)
	if st := get(t, c, "/metrics"); st != http.StatusOK {
		t.Fatalf("metrics: %d", st)
	}
	if n := waitConns(t, ns, port, 0); n != 0 {
		t.Error("an idle connection stayed open past the idle timeout")
	}
}
