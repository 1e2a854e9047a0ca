//go:build small

package live

import (
	"context"
	"errors"
	"net"
)

// ErrNoWeb is what the small build (-tags small, the one for routers'
// flash) says of the web page, /events and /metrics: it leaves out
// net/http, which with the TLS it links would double the binary.
var ErrNoWeb = errors.New("this build of linerate has no web page, /events or /metrics (the small build for routers leaves out net/http; use a full build: docs/openwrt.md)")

// WebBuilt is nil in a build that serves the web view, ErrNoWeb here.
func WebBuilt() error { return ErrNoWeb }

// Serve returns ErrNoWeb at once: there is nothing to serve ln with.
func Serve(ctx context.Context, ln net.Listener, h *Hub) error {
	h.Close()
	return ErrNoWeb
}
