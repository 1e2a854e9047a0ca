package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/remote"
	"linerate/traffic"
	"linerate/wire"
)

// barrierLab is two namespaces joined by a veth: a sending agent in a
// (its log lines on logs), a receiving agent in b, and in b a listener
// that accepts control connections and never answers (a target a flow
// can never be set up against).
type barrierLab struct {
	a, b     *testenv.NetNS
	sender   remote.Host
	receiver string
	stuck    string
	logs     chan string
}

func newBarrierLab(t *testing.T) *barrierLab {
	t.Helper()
	testenv.RequireRoot(t)
	l := &barrierLab{a: testenv.NewNetNS(t), b: testenv.NewNetNS(t), logs: make(chan string, 256)}
	testenv.Veth(t, l.a, "sya", l.b, "syb", 1)
	l.a.AddAddr(t, "sya", "10.98.0.1/24")
	l.b.AddAddr(t, "syb", "10.98.0.2/24")
	const secret = "barrier"
	snd := &traffic.Server{Token: secret, Logf: func(format string, args ...any) {
		select {
		case l.logs <- fmt.Sprintf(format, args...):
		default:
		}
	}}
	addr := serve(t, l.a, "10.98.0.1", snd)
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	l.sender = remote.Host{Kind: remote.Agent, Name: host, Port: p}
	l.receiver = serve(t, l.b, "10.98.0.2", &traffic.Server{Token: secret})
	// After the agents: cleaned up first, so that the agent whose flow
	// waits on it is not kept from stopping.
	var mu sync.Mutex
	var held []net.Conn
	err := l.b.Do(func() error {
		ln, err := net.Listen("tcp", "10.98.0.2:0")
		if err != nil {
			return err
		}
		l.stuck = ln.Addr().String()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		}()
		t.Cleanup(func() {
			ln.Close()
			mu.Lock()
			defer mu.Unlock()
			for _, c := range held {
				c.Close()
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// serve runs srv in ns on addr:0 until the test ends; it returns where.
func serve(t *testing.T, ns *testenv.NetNS, addr string, srv *traffic.Server) string {
	t.Helper()
	srv.Setup = ns.Do
	return ns.Serve(t, addr, srv.Serve)
}

// run is a round of flows from the sending agent to targets, reached
// from b.
func (l *barrierLab) run(targets ...string) *Run {
	spec := wire.Spec{Proto: wire.UDP, Direction: wire.Forward, Duration: wire.Seconds(time.Second), Warmup: wire.Seconds(200 * time.Millisecond),
		Streams: 1, Ports: 1, Threads: 1, Payload: 64, Rate: wire.Rate{PPS: 2000}}
	r := &Run{Secret: "barrier", Lead: spec.Warmup.D()}
	for i, to := range targets {
		r.Flows = append(r.Flows, Flow{From: l.sender, Options: remote.Options{Setup: l.b.Do}, Name: "a",
			Label: fmt.Sprintf("flow %d a → %s", i+1, to), Run: traffic.Flow{Targets: []string{to}, Spec: spec}})
	}
	return r
}

// awaitLog waits, at most 20 s, for the sending agent to log want.
func (l *barrierLab) awaitLog(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line := <-l.logs:
			if strings.Contains(line, want) {
				return
			}
		case <-timeout:
			t.Fatalf("the sending agent never logged %q", want)
		}
	}
}

// A round's flows are set up, held, and let go together: the round says
// the barrier was used, and every flow's window opened after the go (one
// machine, one clock). A flow that cannot be set up fails the round,
// named, and the flow that was ready is released by its agent; so is one
// held when the round is interrupted (Ctrl-C).
func TestBarrier(t *testing.T) {
	l := newBarrierLab(t)
	set, err := l.run(l.receiver, l.receiver).Do(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b := set.Barrier
	if b == nil || !b.Used || len(b.Without) > 0 || b.Go.IsZero() {
		t.Fatalf("barrier %+v, want used", b)
	}
	for i, f := range set.Flows {
		if f.Error != "" || f.Result == nil {
			t.Fatalf("flow %d: %q", i+1, f.Error)
		}
		if f.Result.Time.Before(b.Go) {
			t.Errorf("flow %d started at %s, before the go at %s", i+1, f.Result.Time, b.Go)
		}
	}
	d, _ := startSpread(set)
	if set.StartSpreadMS == nil || *set.StartSpreadMS != float64(d)/float64(time.Millisecond) {
		t.Errorf("start_spread_ms %v, the flows' windows %s apart", set.StartSpreadMS, d)
	}
	t.Logf("2 flows set up in %.1f ms, windows opened %.1f ms apart", b.SetupMS, *set.StartSpreadMS)

	// The stuck target never answers: its flow is never set up.
	r := l.run(l.stuck, l.receiver)
	r.ReadyTimeout = 5 * time.Second
	_, err = r.Do(context.Background())
	if err == nil || !strings.Contains(err.Error(), "flow 1 a → "+l.stuck+": not set up within 5s") {
		t.Fatalf("a flow never ready: %v", err)
	}
	l.awaitLog(t, "released at the start barrier")

	// Ctrl-C once the good flow is held.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := l.run(l.stuck, l.receiver).Do(ctx)
		errc <- err
	}()
	l.awaitLog(t, "held for the start")
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("interrupted at the barrier: %v", err)
	}
	l.awaitLog(t, "released at the start barrier")
}
