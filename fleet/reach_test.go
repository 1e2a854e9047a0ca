package fleet

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"linerate/remote"
	"linerate/traffic"
	"linerate/wire"
)

// Reach greets each host's agent and says, per host in order, what
// answered: an agent on loopback, the same agent without the secret
// (none: it refused), and a port where nothing listens.
func TestReach(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&traffic.Server{Token: "right"}).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := closed.Addr().String()
	closed.Close()
	host := func(name, addr string) Host {
		h, err := remote.Parse(addr)
		if err != nil {
			t.Fatal(err)
		}
		return Host{Name: name, Reach: h}
	}
	agent := host("agent", ln.Addr().String())
	got := Reach(context.Background(), []Host{agent, host("nobody", nobody)}, "right", 5*time.Second)
	if len(got) != 2 || got[0].Name != "agent" || got[0].Err != nil || got[0].Welcome == nil || got[0].Welcome.ServerID == "" {
		t.Fatalf("Reach: %+v", got)
	}
	if got[1].Name != "nobody" || got[1].Err == nil {
		t.Errorf("a port where nothing listens: %+v", got[1])
	}
	wrong := Reach(context.Background(), []Host{agent}, "", 5*time.Second)
	if !errors.Is(wrong[0].Err, wire.ErrWrongToken) {
		t.Errorf("no secret: %v, want the agent's refusal (wire.ErrWrongToken)", wrong[0].Err)
	}
}
