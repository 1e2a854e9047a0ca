package iperf3

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/results"
	"linerate/results/resultstest"
	"linerate/wire"
)

// liar is a stand-in iperf3 server: it runs one TCP test as the protocol
// says (one stream, draining what the client sends or sending until
// TEST_END), then reports what say makes of what it counted (bytes
// received or sent on its stream).
func liar(t *testing.T, ns *testenv.NetNS, say func(counted uint64) Results) string {
	t.Helper()
	ln, err := runIn(ns, func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") })
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		if err := lie(ln, say); err != nil {
			t.Logf("stand-in server: %v", err)
		}
	})
	return "iperf3://" + ln.Addr().String()
}

func lie(ln net.Listener, say func(uint64) Results) error {
	accept := func() (ctrl, error) {
		c, err := ln.Accept()
		if err != nil {
			return ctrl{}, err
		}
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		cookie := make([]byte, CookieLen)
		_, err = io.ReadFull(c, cookie)
		return ctrl{c}, err
	}
	c, err := accept()
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.writeState(ParamExchange); err != nil {
		return err
	}
	b, err := c.readJSON(maxParamsJSON, 5*time.Second, "parameters")
	if err != nil {
		return err
	}
	p, err := parseParams(b)
	if err != nil {
		return err
	}
	if err := c.writeState(CreateStreams); err != nil {
		return err
	}
	data, err := accept()
	if err != nil {
		return err
	}
	defer data.Close()
	for _, s := range []State{TestStart, TestRunning} {
		if err := c.writeState(s); err != nil {
			return err
		}
	}
	var counted uint64
	done := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 128<<10)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var n int
			var err error
			if p.Reverse {
				n, err = data.Write(buf)
			} else {
				n, err = data.Read(buf)
			}
			counted += uint64(n)
			if err != nil {
				return
			}
		}
	}()
	if err := c.expect(TestEnd, 10*time.Second); err != nil {
		return err
	}
	close(stop)
	if p.Reverse {
		data.Close()
	} else {
		_ = data.SetReadDeadline(time.Now()) // what is in flight is in
	}
	<-done
	if err := c.writeState(ExchangeResults); err != nil {
		return err
	}
	if _, err := c.readJSON(maxResultsJSON, 5*time.Second, "the client's results"); err != nil {
		return err
	}
	if err := c.writeJSON(say(counted), "results"); err != nil {
		return err
	}
	if err := c.writeState(DisplayResults); err != nil {
		return err
	}
	return c.expect(IperfDone, 5*time.Second)
}

// honest is what an iperf3 server says: what it counted, CPU use that
// adds up.
func honest(counted uint64) Results {
	return Results{CPUTotal: 3, CPUUser: 1, CPUSystem: 2, SenderHasRetransmits: -1,
		Streams: []StreamReport{{ID: 1, Bytes: float64(counted), Retransmits: -1}}}
}

// honestBut is honest with one lie, which may depend on what was
// counted.
func honestBut(lie func(r *Results, counted uint64)) func(uint64) Results {
	return func(n uint64) Results {
		r := honest(n)
		lie(&r, n)
		return r
	}
}

// A server's figures are checked against what this end counted and
// against what a host can do: received more than was sent, sent less
// than arrived, a rate no host moves, CPU use below 0 or beyond every CPU
// a kernel runs on, or a total that is not user plus system, and the
// result says so (targets[].not_credible, the figures kept as reported),
// with an error wrapping results.ErrNotCredible (bench exits 1). An honest
// server passes.
func TestClientDoubtsServerFigures(t *testing.T) {
	ns := testenv.NewNetNS(t)
	for _, c := range []struct {
		name string
		dir  wire.Direction
		say  func(uint64) Results
		want string // "" for an honest server
	}{
		{"honest", wire.Forward, honest, ""},
		{"honest reverse", wire.Reverse, honest, ""},
		{"received more than sent", wire.Forward, honestBut(func(r *Results, _ uint64) { r.Streams[0].Bytes = 4e18 }),
			"the server's stream 1 received 4000000000000000000 bytes of "},
		{"sent less than arrived", wire.Reverse, honestBut(func(r *Results, n uint64) { r.Streams[0].Bytes = float64(n / 2) }),
			"were received: less than arrived"},
		{"sent faster than a host", wire.Reverse, honestBut(func(r *Results, _ uint64) { r.Streams[0].Bytes = 4e18 }),
			"more than a host moves"},
		{"CPU 1e308 %", wire.Forward, honestBut(func(r *Results, _ uint64) { r.CPUTotal, r.CPUUser = 1e308, 1e308 }),
			"(cpu_util_total) 1e+308: want 0 to 819200"},
		{"CPU -5 %", wire.Forward, honestBut(func(r *Results, _ uint64) { r.CPUTotal, r.CPUSystem = -4, -5 }),
			"(cpu_util_system) -5: want 0 to 819200"},
		{"CPU that does not add up", wire.Forward, honestBut(func(r *Results, _ uint64) { r.CPUTotal = 90 }),
			"cpu_util_total 90% is not cpu_util_user 1% plus cpu_util_system 2%"},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := liar(t, ns, c.say)
			sp := wire.Spec{Proto: wire.TCP, Direction: c.dir, Duration: wire.Seconds(time.Second), Streams: 1, Ports: 1, Threads: 1}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := runIn(ns, func() (*results.Result, error) { return Run(ctx, Config{Target: target, Spec: sp}) })
			if res == nil {
				t.Fatalf("no result: %v", err)
			}
			resultstest.CheckDoubted(t, res, err, c.want)
			// Kept as reported, never clamped.
			if ip := res.Targets[0].IPerf3; c.name == "received more than sent" && ip.Streams[0].ReceivedBytes != 4e18 {
				t.Errorf("the reported figure was changed: %+v", ip.Streams[0])
			}
		})
	}
}
