//go:build !small

package live

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"linerate/internal/admit"
)

//go:embed page.html
var page []byte

// keepAlive is how often an idle event stream gets a comment line, so
// proxies and browsers keep it open.
const keepAlive = 15 * time.Second

// Limits of the web door (docs/security.md, "--web"). Each connection
// holds a slot, each event stream one more (a goroutine and a few
// snapshots); one address holds a share of each, and when every slot is
// taken a newcomer takes the slot of whichever address holds the most
// (internal/admit).
const (
	maxConns            = 128 // connections open at once
	maxConnsPerSource   = 16  // of them from one address
	maxStreams          = 64  // event streams at once
	maxStreamsPerSource = 8   // of them from one address
	readHeaderTimeout   = 5 * time.Second
	writeTimeout        = 10 * time.Second // to write a page or /metrics
	streamSendBuffer    = 32 << 10         // an event stream's socket send buffer (the kernel doubles it)
)

// connKey is where a request's context holds its connection.
type connKey struct{}

// Variables: tests shorten them.
var (
	// idleTimeout is how long a connection may wait between requests.
	idleTimeout = 60 * time.Second
	// streamWrite bounds each write of an event stream: a viewer that
	// does not read what it was sent within it is dropped.
	streamWrite = 10 * time.Second
)

// pagePolicy lets the page run its own inline script and style and talk
// to nothing but this server.
const pagePolicy = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:"

// Handler serves the live page at /, every snapshot as a Server-Sent
// Event at /events (a JSON Snapshot in each event's data, the latest one
// first; at most maxStreams at once, maxStreamsPerSource from one
// address) and the latest snapshot at /metrics in the Prometheus text
// format.
func Handler(h *Hub) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", pagePolicy)
		w.Write(page)
	})
	streams := admit.NewTable(maxStreams, maxStreamsPerSource)
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		slot, err := streams.Enter(sourceOf(r), func() {
			// Given to a newer stream: end this one, even mid-write.
			cancel()
			_ = rc.SetWriteDeadline(time.Unix(1, 0))
		})
		if err != nil {
			http.Error(w, fmt.Sprintf("%d event streams from this address are open already", maxStreamsPerSource), http.StatusServiceUnavailable)
			return
		}
		defer slot.Leave()
		if c, ok := r.Context().Value(connKey{}).(*doorConn); ok {
			// Little in flight: a viewer that stops reading is found out
			// (a write that waits) soon after.
			if tc, ok := c.Conn.(*net.TCPConn); ok {
				_ = tc.SetWriteBuffer(streamSendBuffer)
			}
		}
		events(ctx, w, rc, h)
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		s, ok := h.Metrics()
		if !ok {
			http.Error(w, "no interval sampled yet", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", MetricsContentType)
		WriteMetrics(w, s)
	})
	return mux
}

// events streams snapshots until the client goes, stops reading (a write
// not done within streamWrite), the hub drops it (the browser's
// EventSource then reconnects), ctx ends (its slot went to a newer
// stream) or the server stops.
func events(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, h *Hub) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	ch, cancel := h.Subscribe()
	defer cancel()
	write := func(format string, args ...any) error {
		if err := rc.SetWriteDeadline(time.Now().Add(streamWrite)); err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return err
		}
		return rc.Flush()
	}
	send := func(s Snapshot) error {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		return write("id: %d\ndata: %s\n\n", s.Seq, b)
	}
	if err := write("retry: 1000\n\n"); err != nil {
		return
	}
	if s, ok := h.Latest(); ok && send(s) != nil {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case s, open := <-ch:
			if !open || send(s) != nil {
				return
			}
		case <-tick.C:
			if write(": keep-alive\n\n") != nil {
				return
			}
		}
	}
}

// sourceOf is the address a request came from.
func sourceOf(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// WebBuilt is nil in a build that serves the web view; the small build
// says why it does not (http_small.go).
func WebBuilt() error { return nil }

// Serve serves Handler(h) on ln until ctx ends, then closes the hub and
// the server. It returns nil when stopped by ctx.
func Serve(ctx context.Context, ln net.Listener, h *Hub) error {
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	dl := newDoorListener(ln)
	srv := &http.Server{
		Handler:           Handler(h),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		// Event streams set a deadline of their own for each write.
		WriteTimeout: writeTimeout,
		// Requests end with the server, event streams included.
		BaseContext: func(net.Listener) context.Context { return base },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
		ConnState:   dl.state,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(dl) }()
	select {
	case err := <-done:
		h.Close()
		return fmt.Errorf("live view on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	h.Close()
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	err := srv.Shutdown(sctx)
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("live view on %s: %w", ln.Addr(), err)
	}
	if err != nil {
		return fmt.Errorf("live view on %s: stopping: %w", ln.Addr(), err)
	}
	return nil
}

// doorListener holds each connection the web server accepts in a slot
// (maxConns, maxConnsPerSource): a connection from an address that holds
// its share is closed at once; when every slot is taken the newcomer takes
// an idle connection's slot (one that asked nothing yet or waits between
// requests) before a busy one's; and when descriptors run out, an idle
// connection is closed to free one.
type doorListener struct {
	net.Listener
	slots *admit.Table
	stop  chan struct{}
	once  sync.Once
}

func newDoorListener(ln net.Listener) *doorListener {
	return &doorListener{Listener: ln, slots: admit.NewTable(maxConns, maxConnsPerSource), stop: make(chan struct{})}
}

func (l *doorListener) Accept() (net.Conn, error) {
	for {
		c, err := admit.Accept(l.Listener, l.stop, l.slots.Shed, nil)
		if err != nil {
			return nil, err
		}
		var from netip.Addr
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
			from = ap.Addr().Unmap()
		}
		slot, err := l.slots.Enter(from, func() { c.Close() })
		if err != nil {
			c.Close()
			continue
		}
		return &doorConn{Conn: c, slot: slot}, nil
	}
}

func (l *doorListener) Close() error {
	l.once.Do(func() { close(l.stop) })
	return l.Listener.Close()
}

// state marks a connection busy while a request is under way.
func (l *doorListener) state(c net.Conn, st http.ConnState) {
	if dc, ok := c.(*doorConn); ok {
		dc.slot.Busy(st == http.StateActive)
	}
}

// doorConn is a connection in its slot; closing it gives the slot back.
type doorConn struct {
	net.Conn
	slot *admit.Slot
}

func (c *doorConn) Close() error {
	c.slot.Leave()
	return c.Conn.Close()
}
