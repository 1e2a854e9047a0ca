package live

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

//go:embed page.html
var page []byte

// keepAlive is how often an idle event stream gets a comment line, so
// proxies and browsers keep it open.
const keepAlive = 15 * time.Second

// maxStreams bounds the event streams served at once: each holds a
// goroutine and a few snapshots.
const maxStreams = 64

// pagePolicy lets the page run its own inline script and style and talk
// to nothing but this server.
const pagePolicy = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:"

// Handler serves the live page at /, every snapshot as a Server-Sent
// Event at /events (a JSON Snapshot in each event's data, the latest one
// first; at most maxStreams at once) and the latest snapshot at /metrics
// in the Prometheus text format.
func Handler(h *Hub) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", pagePolicy)
		w.Write(page)
	})
	streams := make(chan struct{}, maxStreams)
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		select {
		case streams <- struct{}{}:
			defer func() { <-streams }()
			events(w, r, h)
		default:
			http.Error(w, fmt.Sprintf("%d event streams are open already", maxStreams), http.StatusServiceUnavailable)
		}
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

// events streams snapshots until the client goes, the hub drops it (the
// browser's EventSource then reconnects) or the server stops.
func events(w http.ResponseWriter, r *http.Request, h *Hub) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	ch, cancel := h.Subscribe()
	defer cancel()
	send := func(s Snapshot) error {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "id: %d\ndata: %s\n\n", s.Seq, b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if _, err := fmt.Fprint(w, "retry: 1000\n\n"); err != nil {
		return
	}
	if s, ok := h.Latest(); ok {
		if send(s) != nil {
			return
		}
	} else if rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case s, open := <-ch:
			if !open || send(s) != nil {
				return
			}
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

// Serve serves Handler(h) on ln until ctx ends, then closes the hub and
// the server. It returns nil when stopped by ctx.
func Serve(ctx context.Context, ln net.Listener, h *Hub) error {
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := &http.Server{
		Handler:           Handler(h),
		ReadHeaderTimeout: 5 * time.Second,
		// Requests end with the server, event streams included.
		BaseContext: func(net.Listener) context.Context { return base },
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
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
