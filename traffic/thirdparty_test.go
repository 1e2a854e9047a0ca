package traffic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"linerate/ceiling"
	"linerate/internal/testenv"
	"linerate/results"
	"linerate/wire"
)

// serveAgent runs srv on addr:0 inside ns until the test ends and returns
// its control address.
func serveAgent(t *testing.T, ns *testenv.NetNS, addr string, srv *Server) string {
	t.Helper()
	srv.Setup = ns.Do
	return ns.Serve(t, addr, srv.Serve)
}

// dialIn opens a control connection from inside ns.
func dialIn(t *testing.T, ns *testenv.NetNS, addr string) net.Conn {
	t.Helper()
	var c net.Conn
	if err := ns.Do(func() error {
		var err error
		c, err = net.DialTimeout("tcp", addr, 5*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

// A controller asks agent A (namespace a) to run a flow to agent B
// (namespace b): A's result comes back with its intervals, counted by B;
// the controller's stop ends a long flow early with a partial result.
// Refused: an agent without a secret, a target outside --allow, and a
// target with no agent (nothing is sent to it: the control connection
// comes first).
func TestThirdPartyFlow(t *testing.T) {
	const secret = "relay-secret"
	l := newLab(t, &Server{Token: secret})
	a := serveAgent(t, l.a, "10.99.0.1", &Server{Token: secret, Sampling: sampling(l.a)})

	spec := wire.Spec{Proto: "udp", Direction: wire.Forward, Duration: wire.Seconds(time.Second), Warmup: wire.Seconds(200 * time.Millisecond),
		Streams: 1, Ports: 1, Threads: 1, Payload: 64, Rate: wire.Rate{PPS: 5000}}
	sampler, err := StartSampling(dialIn(t, l.b, a), secret, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var ivs []results.IntervalStats
	res, err := RunFlow(context.Background(), dialIn(t, l.b, a), secret, Flow{Targets: []string{l.server}, Spec: spec},
		func(iv results.IntervalStats) { ivs = append(ivs, iv) })
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	t.Logf("flow a → b: sent %d, received %d, %.0f pps, %d intervals", s.SentPackets, s.ReceivedPackets, s.ReceivedPPS, len(ivs))
	if s.ReceivedPackets < 4000 || s.LostPackets > s.SentPackets/100 {
		t.Errorf("5 kpps for 1 s: sent %d, received %d", s.SentPackets, s.ReceivedPackets)
	}
	if len(ivs) == 0 || len(res.Samples) == 0 {
		t.Errorf("%d intervals, %d samples came back", len(ivs), len(res.Samples))
	}
	rates, err := sampler.Stop()
	if err != nil || len(rates) == 0 {
		t.Fatalf("agent a sampled for the controller: %d seconds, %v", len(rates), err)
	}
	var txPPS float64
	for _, r := range rates {
		txPPS = max(txPPS, r.NetDev["lra"].TxPps)
	}
	if txPPS < 2500 {
		t.Errorf("agent a's own samples show lra sending %.0f pps at most during a 5 kpps flow", txPPS)
	}

	// Stopped early by the controller.
	long := spec
	long.Duration = wire.Seconds(20 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err = RunFlow(ctx, dialIn(t, l.b, a), secret, Flow{Targets: []string{l.server}, Spec: long}, nil)
	if err != nil || !res.Interrupted || time.Since(start) > 10*time.Second {
		t.Errorf("stopped flow: %v, interrupted %v after %s", err, res != nil && res.Interrupted, time.Since(start))
	}

	refused := func(name string, agent string, secret string, target string, want string) {
		t.Helper()
		_, err := RunFlow(context.Background(), dialIn(t, l.b, agent), secret, Flow{Targets: []string{target}, Spec: spec}, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
		if name != "no agent there" && !errors.Is(err, wire.ErrFlowRefused) {
			t.Errorf("%s: %v is not ErrFlowRefused", name, err)
		}
	}
	open := serveAgent(t, l.a, "10.99.0.1", &Server{})
	refused("open agent", open, "", l.server, "serve --token")
	narrow := serveAgent(t, l.a, "10.99.0.1", &Server{Token: secret, Allow: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}})
	refused("outside --allow", narrow, secret, l.server, "outside this agent's --allow 192.0.2.0/24")
	refused("no agent there", a, secret, "10.99.0.2:9", "nothing listening on 10.99.0.2:9")
}

// TestThirdPartyFlowLinkEvent cuts agent a's sending veth for 2 s during
// a third-party flow a → b: the flow's result, as the controller gets it,
// holds the event of a's lra (the client end of the flow) with its times,
// as a bench from this host would.
func TestThirdPartyFlowLinkEvent(t *testing.T) {
	const secret = "relay-secret"
	l := newLab(t, &Server{Token: secret})
	a := serveAgent(t, l.a, "10.99.0.1", &Server{Token: secret})
	cut := newLinkCut(t, l.a.Netlink(t), "lra", 2, 2*time.Second)
	spec := wire.Spec{Proto: "udp", Direction: wire.Forward, Duration: wire.Seconds(6 * time.Second),
		Streams: 1, Ports: 1, Threads: 1, Payload: 64, Rate: wire.Rate{PPS: 5000}}
	start := time.Now()
	res, err := RunFlow(context.Background(), dialIn(t, l.b, a), secret, Flow{Targets: []string{l.server}, Spec: spec}, cut.interval)
	down, up := cut.wait()
	if err != nil {
		t.Fatal(err)
	}
	// The agent's clock starts a control round trip after ours: a little
	// more slack than a bench's own.
	checkEvent(t, findEvent(t, res, results.SideClient, "lra"), -1, "set down", start, down, up, 0.4)
	if res.Summary.LimitedBy != results.LimitLinkDown {
		t.Errorf("verdict %q (%s), want link down", res.Summary.LimitedBy, res.Summary.LimitedWhy)
	}
}

// logLines sends each line an agent logs to the returned channel (never
// blocking: a full channel drops the line).
func logLines(srv *Server) <-chan string {
	ch := make(chan string, 64)
	srv.Logf = func(format string, args ...any) {
		select {
		case ch <- fmt.Sprintf(format, args...):
		default:
		}
	}
	return ch
}

// awaitLine waits, at most 20 s, for a line of ch that contains want.
func awaitLine(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l := <-ch:
			if strings.Contains(l, want) {
				return
			}
		case <-timeout:
			t.Fatalf("the agent never logged %q", want)
		}
	}
}

// The start barrier: an agent sets a flow up, says ready and holds it
// until the controller's go; the flow's window opens after the go (one
// machine, one clock). A held flow the controller releases (its
// connection closed) or never starts (the hold passes) is closed by the
// agent. An agent from before the barrier is only greeted: the flow goes
// at Go, unheld.
func TestThirdPartyFlowBarrier(t *testing.T) {
	const secret = "barrier-secret"
	l := newLab(t, &Server{Token: secret})
	srv := &Server{Token: secret}
	logs := logLines(srv)
	a := serveAgent(t, l.a, "10.99.0.1", srv)
	old := &Server{Token: secret, featureless: true}
	oldAgent := serveAgent(t, l.a, "10.99.0.1", old)
	spec := wire.Spec{Proto: "udp", Direction: wire.Forward, Duration: wire.Seconds(time.Second), Warmup: wire.Seconds(200 * time.Millisecond),
		Streams: 1, Ports: 1, Threads: 1, Payload: 64, Rate: wire.Rate{PPS: 2000}}
	f := Flow{Targets: []string{l.server}, Spec: spec}
	ctx := context.Background()

	p, err := PrepareFlow(ctx, dialIn(t, l.b, a), secret, f, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Held() {
		t.Fatal("an agent with the barrier does not hold the flow")
	}
	awaitLine(t, logs, "held for the start")
	goAt := time.Now()
	if err := p.Go(); err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Time.Before(goAt) || res.Summary.ReceivedPackets == 0 {
		t.Errorf("held flow: started %s, the go at %s; received %d", res.Time, goAt, res.Summary.ReceivedPackets)
	}

	// Released before its start: the controller closes the connection.
	p, err = PrepareFlow(ctx, dialIn(t, l.b, a), secret, f, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	awaitLine(t, logs, "released at the start barrier")

	// Never started: the agent holds it no longer than it was asked to.
	p, err = PrepareFlow(ctx, dialIn(t, l.b, a), secret, f, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	awaitLine(t, logs, "no start from the controller within 1s")

	// An agent from before the barrier: greeted, the flow sent at Go.
	p, err = PrepareFlow(ctx, dialIn(t, l.b, oldAgent), secret, f, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if p.Held() {
		t.Fatal("an agent without the barrier holds the flow")
	}
	if err := p.Go(); err != nil {
		t.Fatal(err)
	}
	if res, err := p.Wait(ctx, nil); err != nil || res.Summary.ReceivedPackets == 0 {
		t.Errorf("unheld flow: %v, %+v", err, res)
	}

	// A mix of sizes goes only to an agent that sends it: the older one
	// would send one size and call it the mix.
	mixed := f
	mixed.Mix = &ceiling.SimpleIMIX
	if _, err := PrepareFlow(ctx, dialIn(t, l.b, oldAgent), secret, mixed, 10*time.Second); !errors.Is(err, wire.ErrFlowRefused) ||
		!strings.Contains(err.Error(), "does not send a mix of frame sizes (imix)") {
		t.Errorf("a mix to an agent without it: %v", err)
	}
}
