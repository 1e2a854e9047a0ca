package testenv

import (
	"context"
	"net"
	"testing"
	"time"
)

// Serve listens on addr:0 inside n and runs serve on the listener until
// the test ends (an agent's Serve); it returns the listener's address.
// At the end it cancels serve's context and waits, at most 20 s, for it
// to return.
func (n *NetNS) Serve(t testing.TB, addr string, serve func(context.Context, net.Listener) error) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var where string
	if err := n.Do(func() error {
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
		if err != nil {
			return err
		}
		where = ln.Addr().String()
		go func() { done <- serve(ctx, ln) }()
		return nil
	}); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("agent did not stop")
		}
	})
	return where
}
