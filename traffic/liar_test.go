package traffic

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"linerate/box"
	"linerate/internal/testenv"
	"linerate/results"
	"linerate/results/resultstest"
	"linerate/wire"
)

// liar stands between the client and a real server in ns: it passes the
// control connection through, and rewrites the server's result with lie
// (the data flows go to the server itself, at the ports its accept
// names). It returns the address to bench.
func liar(t *testing.T, ns *testenv.NetNS, server string, lie func(*results.ServerResult)) string {
	t.Helper()
	var ln net.Listener
	if err := ns.Do(func() (err error) { ln, err = net.Listen("tcp", "127.0.0.1:0"); return err }); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var s net.Conn
			if err := ns.Do(func() (err error) { s, err = net.DialTimeout("tcp", server, 5*time.Second); return err }); err != nil {
				c.Close()
				t.Errorf("stand-in: dial the server: %v", err)
				return
			}
			wg.Go(func() {
				defer c.Close()
				defer s.Close()
				go func() { _, _ = io.Copy(s, c); s.Close() }()
				r := bufio.NewReader(s)
				for {
					line, err := r.ReadBytes('\n')
					if err != nil {
						return
					}
					var m Message
					if json.Unmarshal(line, &m) == nil && m.Type == wire.MsgResult && m.Result != nil {
						lie(m.Result)
						b, _ := json.Marshal(&m)
						line = append(b, '\n')
					}
					if _, err := c.Write(line); err != nil {
						return
					}
				}
			})
		}
	})
	return ln.Addr().String()
}

// A linerate agent's figures are checked against what the client counted
// and against what a host can do: received more than was sent, sent less
// than arrived, a window that makes its rate what no host moves, a thread
// busier than all of its time, CPU use below 0; the result says so
// (targets[].not_credible, the figure kept as reported) and the run's
// error wraps results.ErrNotCredible (bench exits 1). The same server,
// reported as it is, passes.
func TestClientDoubtsServerFigures(t *testing.T) {
	testenv.RequireRoot(t)
	ns := testenv.NewNetNS(t)
	server := serveIn(t, ns, "127.0.0.1")
	udp := udpSpec(time.Second, wire.Rate{PPS: 2000})
	tcp := wire.Spec{Proto: wire.TCP, Direction: wire.Reverse, Duration: wire.Seconds(time.Second), Rate: wire.Rate{BPS: 100e6}, Streams: 1, Ports: 1, Threads: 1}
	for _, c := range []struct {
		name string
		spec wire.Spec
		lie  func(*results.ServerResult)
		want string // "" for the server's own figures
	}{
		{"as reported udp", udp, func(*results.ServerResult) {}, ""},
		{"as reported tcp reverse", tcp, func(*results.ServerResult) {}, ""},
		{"received more than sent", udp, func(sr *results.ServerResult) {
			sr.Received[0].Packets, sr.Received[0].Unique = 4e18, 4e18
		}, "the server's stream 0 received 4000000000000000000 datagrams of "},
		{"sent less than arrived", tcp, func(sr *results.ServerResult) {
			sr.Sent[0].Bytes, sr.Sent[0].Warmup = 1, 0
		}, "the server's stream 0 sent 1 bytes (0 in the warmup), and "},
		{"a window that makes no sense", tcp, func(sr *results.ServerResult) {
			sr.Seconds = 1e-9
		}, "the server's window 1e-09 s"},
		{"a thread busier than its time", udp, func(sr *results.ServerResult) {
			sr.Threads = append(sr.Threads, results.ThreadCPU{Role: "udp-recv", Busy: 1e308})
		}, "the server's udp-recv thread's busy share 1e+308: want 0 to 1.1"},
		{"CPU use below 0", udp, func(sr *results.ServerResult) {
			sr.Samples = append(sr.Samples, box.Rates{Seconds: 1, CPU: []box.CPUUse{{ID: 0, User: -5, Idle: 100, Busy: 0}}})
		}, "the server's CPU 0 usr percent -5: want 0 to 100"},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := liar(t, ns, server, c.lie)
			cfg := Config{Targets: []string{target}, Spec: c.spec, Setup: ns.Do}
			if c.spec.Proto == wire.UDP {
				cfg.FrameSize = 128
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := Run(ctx, cfg)
			if res == nil {
				t.Fatalf("no result: %v", err)
			}
			resultstest.CheckDoubted(t, res, err, c.want)
			if f := res.Targets[0].Forward; c.name == "received more than sent" && f.ReceivedPackets != 4e18 {
				t.Errorf("the reported figure was changed: %d received", f.ReceivedPackets)
			}
		})
	}
}
