package traffic

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netns"

	"linerate/internal/testenv"
	"linerate/results"
	"linerate/wire"
)

// The vanishing client is this test binary run again as a child process
// (TestVanishingClientChild with vanishEnv set) and killed with SIGKILL
// mid-run, so that the server sees what it sees when a real `linerate
// bench` dies: sockets closed by the kernel, no stop, no bye.
const vanishEnv = "LINERATE_TEST_VANISH"

// vanishJob is what the child runs: a Config in the named namespace.
type vanishJob struct {
	NetNS     string    `json:"netns"`
	Target    string    `json:"target"`
	Spec      wire.Spec `json:"spec"`
	FrameSize int       `json:"frame_size"`
	Engine    string    `json:"engine"`
}

// TestVanishingClientChild is the child's body; run on its own it does
// nothing.
func TestVanishingClientChild(t *testing.T) {
	raw := os.Getenv(vanishEnv)
	if raw == "" {
		t.Skip("a client for TestServerAfterVanishedClients and TestServerAfterSilentClients to kill")
	}
	var job vanishJob
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		t.Fatal(err)
	}
	h, err := netns.GetFromName(job.NetNS)
	if err != nil {
		t.Fatal(err)
	}
	ns := &testenv.NetNS{Name: job.NetNS, Handle: h}
	cfg := Config{Targets: []string{job.Target}, Spec: job.Spec, FrameSize: job.FrameSize, Engine: job.Engine,
		Setup: ns.Do, Idle: 300 * time.Millisecond}
	// Each line tells the parent how far the run got.
	cfg.OnInterval = func(iv results.IntervalStats) { fmt.Printf("interval %.1f\n", iv.T) }
	fmt.Println("started")
	_, err = Run(context.Background(), cfg)
	fmt.Println("done", err)
}

// child is a running vanishing client.
type child struct {
	cmd   *exec.Cmd
	lines chan string // what it printed, closed at its end
}

// startChild starts a child client for job.
func startChild(t *testing.T, job vanishJob) *child {
	t.Helper()
	b, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestVanishingClientChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), vanishEnv+"="+string(b))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 100)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() { c.kill() })
	return c
}

// waitFor waits until the child printed a line starting with prefix, or
// d passed; it returns the last line seen.
func (c *child) waitFor(prefix string, d time.Duration) string {
	timeout := time.After(d)
	last := ""
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				return last
			}
			last = l
			if strings.HasPrefix(l, prefix) {
				return last
			}
		case <-timeout:
			return last
		}
	}
}

// last is the last line the child printed; call it after kill.
func (c *child) last() string {
	last := ""
	for l := range c.lines {
		if l == "PASS" || strings.HasPrefix(l, "ok ") {
			continue // the test framework's
		}
		last = l
	}
	return last
}

// kill ends the child with SIGKILL: no stop, no bye, its sockets closed
// by the kernel.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}

// waitGoroutines waits until at most base goroutines run, or until
// deadline; it returns the count and, when above base, their stacks.
func waitGoroutines(base int, d time.Duration) (int, string) {
	deadline := time.Now().Add(d)
	for {
		runtime.GC()
		n := runtime.NumGoroutine()
		if n <= base {
			return n, ""
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
			return n, b.String()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// goroutineBase is the goroutine count of a quiet test process.
func goroutineBase() int {
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	return runtime.NumGoroutine()
}

func vanishUDP(dir wire.Direction, ports, threads int) wire.Spec {
	sp := udpSpec(5*time.Second, wire.Rate{})
	sp.Direction, sp.Ports, sp.Threads, sp.Warmup = dir, ports, threads, wire.Seconds(300*time.Millisecond)
	sp.ProbeInterval = wire.Seconds(10 * time.Millisecond)
	return sp
}

func vanishTCP(dir wire.Direction) wire.Spec {
	return wire.Spec{Proto: "tcp", Direction: dir, Duration: wire.Seconds(5 * time.Second), Warmup: wire.Seconds(300 * time.Millisecond),
		Streams: 2, Ports: 1, Threads: 1, ProbeInterval: wire.Seconds(10 * time.Millisecond)}
}

// TestServerAfterVanishedClients kills clients with SIGKILL in every phase
// of a test and in every mode, and checks that the server lets go of all
// it started for them: its goroutines come back to the number before (a
// receiver, sender, sampler or reader left behind is one more), and it
// still serves.
func TestServerAfterVanishedClients(t *testing.T) {
	if os.Getenv(vanishEnv) != "" {
		t.Skip("in the child")
	}
	// Room for the clients of every phase: those of one phase may still
	// be being torn down when the next come.
	l := newLab(t, &Server{MaxConns: 64})
	ring := vanishUDP(wire.Forward, 2, 2)
	ring.Rate = wire.Rate{PPS: 50000}
	modes := []struct {
		name   string
		spec   wire.Spec
		engine string
	}{
		{"udp", vanishUDP(wire.Forward, 1, 1), ""},
		{"udp-reverse", vanishUDP(wire.Reverse, 1, 1), ""},
		{"udp-bidir", vanishUDP(wire.Bidir, 3, 2), ""},
		{"udp-ring", ring, "ring"},
		{"tcp", vanishTCP(wire.Forward), ""},
		{"tcp-reverse", vanishTCP(wire.Reverse), ""},
		{"tcp-bidir", vanishTCP(wire.Bidir), ""},
	}
	base := goroutineBase()
	// Where the clients die (every mode at once): at once (before or
	// during the hello), during the idle probes (300 ms), in the warmup
	// (300 ms more), in the measured window.
	for _, wait := range []time.Duration{0, 150 * time.Millisecond, 500 * time.Millisecond, 1500 * time.Millisecond} {
		var kids []*child
		for _, m := range modes {
			kids = append(kids, startChild(t, vanishJob{NetNS: l.a.Name, Target: l.server, Spec: m.spec, FrameSize: 64, Engine: m.engine}))
		}
		if wait > 0 {
			time.Sleep(wait)
		}
		for i, k := range kids {
			k.kill()
			t.Logf("%s killed after %s, when it had said %q", modes[i].name, wait, k.last())
		}
	}
	// Each test of a vanished client ends once the server sees the
	// control connection close; the slowest teardown is a TCP receiver's
	// 2 s wait for the end of its streams.
	if n, stacks := waitGoroutines(base, 10*time.Second); stacks != "" {
		t.Errorf("%d goroutines after %d vanished clients, %d before:\n%s", n, 4*len(modes), base, stacks)
	}
	// The server still runs tests.
	cfg := l.config(udpSpec(300*time.Millisecond, wire.Rate{PPS: 10000}))
	cfg.FrameSize = 64
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.ReceivedPackets == 0 {
		t.Error("the server received nothing after the vanished clients")
	}
}

// silence makes a network namespace drop every packet in and out, as a
// host that vanished would: no acknowledgment, no reset, no ICMP answer.
func silence(t *testing.T, ns *testenv.NetNS) {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Handle)))
	if err != nil {
		t.Fatal(err)
	}
	tbl := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: "lrsilence"})
	drop := nftables.ChainPolicyDrop
	for _, hook := range []*nftables.ChainHook{nftables.ChainHookInput, nftables.ChainHookOutput} {
		c.AddChain(&nftables.Chain{Name: fmt.Sprint("h", *hook), Table: tbl, Type: nftables.ChainTypeFilter,
			Hooknum: hook, Priority: nftables.ChainPriorityFilter, Policy: &drop})
	}
	if err := c.Flush(); err != nil {
		t.Skipf("nftables not usable here: %v", err)
	}
}

// TestServerAfterSilentClients: clients whose host goes silent mid-test
// (it drops everything, then the client process dies: no FIN reaches the
// server) are let go once they have been silent for the server's
// PeerTimeout, not when their test would have ended: the server's
// goroutines come back to the number before, well before the 30 s the
// tests asked for.
func TestServerAfterSilentClients(t *testing.T) {
	if os.Getenv(vanishEnv) != "" {
		t.Skip("in the child")
	}
	l := newLab(t, &Server{PeerTimeout: time.Second})
	base := goroutineBase()
	long := func(sp wire.Spec) wire.Spec {
		sp.Duration = wire.Seconds(30 * time.Second)
		return sp
	}
	var kids []*child
	for _, sp := range []wire.Spec{long(vanishUDP(wire.Reverse, 1, 1)), long(vanishUDP(wire.Bidir, 2, 2)), long(vanishTCP(wire.Bidir))} {
		kids = append(kids, startChild(t, vanishJob{NetNS: l.a.Name, Target: l.server, Spec: sp, FrameSize: 64}))
	}
	for i, k := range kids {
		if got := k.waitFor("interval", 10*time.Second); !strings.HasPrefix(got, "interval") {
			t.Fatalf("client %d did not get going: last said %q", i, got)
		}
	}
	silence(t, l.a)
	for _, k := range kids {
		k.kill()
	}
	// The next interval report (within a second), then PeerTimeout (1 s)
	// without an acknowledgment.
	if n, stacks := waitGoroutines(base, 10*time.Second); stacks != "" {
		t.Errorf("%d goroutines %s after the clients went silent, %d before:\n%s", n, 10*time.Second, base, stacks)
	}
}
