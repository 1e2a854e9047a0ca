package traffic

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"linerate/internal/testenv"
	"linerate/results"
	"linerate/wire"
)

// deadServerEnv names the namespace a child server listens in: this test
// binary run again (TestDyingServerChild) and killed with SIGKILL mid-run.
const deadServerEnv = "LINERATE_TEST_DEAD_SERVER"

// TestDyingServerChild is the child's body: a server in the namespace
// named by deadServerEnv, on 10.99.0.2, until it is killed; on its own it
// does nothing.
func TestDyingServerChild(t *testing.T) {
	name := os.Getenv(deadServerEnv)
	if name == "" {
		t.Skip("a server for TestServerKilledMidRun to kill")
	}
	h, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	ns := &testenv.NetNS{Name: name, Handle: h}
	srv := &Server{Setup: ns.Do}
	var ln net.Listener
	if err := ns.Do(func() (err error) { ln, err = net.Listen("tcp", "10.99.0.2:0"); return err }); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("listening " + ln.Addr().String() + "\n")
	// Bounded: the parent kills it long before.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = srv.Serve(ctx, ln)
}

// startDyingServer starts a child server in ns and returns its address and
// a kill -9 of it (also run at cleanup).
func startDyingServer(t *testing.T, ns *testenv.NetNS) (addr string, kill func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDyingServerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), deadServerEnv+"="+ns.Name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				got <- a
			}
		}
	}()
	select {
	case a := <-got:
		return a, kill
	case <-time.After(20 * time.Second):
		t.Fatal("the child server did not start")
	}
	return "", kill
}

// TestServerKilledMidRun kills the server (kill -9) 3 s into a 10 s UDP
// bench: the run ends within 2 s of the kill, marked stopped early with
// the reason (not interrupted: that is Ctrl-C), its error given once, and
// the figures of the seconds before the kill kept: the window ends at the
// server's last report and what it received up to then is the report's.
func TestServerKilledMidRun(t *testing.T) {
	if os.Getenv(deadServerEnv) != "" {
		t.Skip("in the child")
	}
	testenv.RequireRoot(t)
	a, b := testenv.NewNetNS(t), testenv.NewNetNS(t)
	testenv.Veth(t, a, "lra", b, "lrb", 1)
	a.AddAddr(t, "lra", "10.99.0.1/24")
	b.AddAddr(t, "lrb", "10.99.0.2/24")
	addr, kill := startDyingServer(t, b)

	const pps = 20000
	sp := udpSpec(10*time.Second, wire.Rate{PPS: pps})
	sp.Warmup = wire.Seconds(time.Second)
	cfg := Config{Targets: []string{addr}, Spec: sp, FrameSize: 128, Setup: a.Do, Sampling: sampling(a)}
	var killedAt time.Time
	var mu sync.Mutex
	cfg.OnInterval = func(iv results.IntervalStats) {
		mu.Lock()
		defer mu.Unlock()
		if iv.T >= 4 && killedAt.IsZero() { // 3 s into the measured window
			kill()
			killedAt = time.Now()
		}
	}
	res, err := Run(context.Background(), cfg)
	ended := time.Now()
	mu.Lock()
	defer mu.Unlock()
	if killedAt.IsZero() {
		t.Fatalf("the server was never killed: %v", err)
	}
	took := ended.Sub(killedAt)
	t.Logf("run ended %s after the kill; error: %v", took, err)
	if took > 2500*time.Millisecond {
		t.Errorf("the run ended %s after the server's death; want at once (< 2.5 s)", took)
	}
	if err == nil {
		t.Error("no error from a run whose server died")
	}
	if res == nil {
		t.Fatal("no result")
	}
	se := res.StoppedEarly
	if se == nil {
		t.Fatal("result not marked stopped early")
	}
	t.Logf("stopped early: %+v; errors %q; target errors %q, notes %q", *se, res.Errors, res.Targets[0].Errors, res.Targets[0].Notes)
	if res.Interrupted {
		t.Error("interrupted set: that means Ctrl-C")
	}
	if !strings.Contains(se.Reason, "server's control connection closed") {
		t.Errorf("reason %q does not name the server", se.Reason)
	}
	// The last report came at most a second before the kill, 4 s in.
	if se.At < 3 || se.At > 4.6 || se.Detected < se.At || se.Detected > 6 {
		t.Errorf("window ended at %.2f s, detected at %.2f s; want about 4 and soon after", se.At, se.Detected)
	}
	if p := res.Problems(); len(p) != 1 {
		t.Errorf("problems %q; want the one error, once", p)
	}
	f := res.Targets[0].Forward
	if f == nil {
		t.Fatal("no forward figures")
	}
	t.Logf("forward: %.2f s, sent %d, received %d, lost %d, %.0f pps received",
		f.Seconds, f.SentPackets, f.ReceivedPackets, f.LostPackets, f.ReceivedPPS)
	want := uint64((se.At - 1) * pps) // the window opens after 1 s of warmup
	if f.Seconds < se.At-1.1 || f.Seconds > se.At-0.9 {
		t.Errorf("window %.2f s; want %.2f", f.Seconds, se.At-1)
	}
	// The sender may fall behind the asked rate on a busy machine (its
	// threads not scheduled in time); what it sent before the death must
	// still be counted, and have arrived.
	if f.SentPackets < want*7/10 || f.SentPackets > want*11/10 || !closeTo(f.ReceivedPackets, f.SentPackets, 0.03) {
		t.Errorf("sent %d, received %d; want about %d sent, nearly all received", f.SentPackets, f.ReceivedPackets, want)
	}
	if f.LostPackets > want/50 {
		t.Errorf("%d lost of %d: the seconds before the death were clean", f.LostPackets, f.SentPackets)
	}
	if res.Summary.ReceivedPackets != f.ReceivedPackets {
		t.Errorf("summary received %d, target %d", res.Summary.ReceivedPackets, f.ReceivedPackets)
	}
	if errors.Is(err, context.Canceled) {
		t.Error("the error reads as a cancel")
	}
}

// TestLiveTargetWindowAfterDeath runs a 10 s UDP bench at 20 kpps to two
// servers, kills one (kill -9) 3.7 s into the window: the run's window is
// cut at the dead server's last report, and the live server's figures
// cover the window it counted (to the senders' stop), said in a note, so
// that its rates are the rates it saw, not its counts over a shorter
// window.
func TestLiveTargetWindowAfterDeath(t *testing.T) {
	if os.Getenv(deadServerEnv) != "" {
		t.Skip("in the child")
	}
	testenv.RequireRoot(t)
	a, b, c := testenv.NewNetNS(t), testenv.NewNetNS(t), testenv.NewNetNS(t)
	testenv.Veth(t, a, "lra", b, "lrb", 1)
	testenv.Veth(t, a, "lrc", c, "lrd", 1)
	a.AddAddr(t, "lra", "10.99.0.1/24")
	b.AddAddr(t, "lrb", "10.99.0.2/24")
	a.AddAddr(t, "lrc", "10.98.0.1/24")
	c.AddAddr(t, "lrd", "10.98.0.2/24")
	dying, kill := startDyingServer(t, b)
	live := serveIn(t, c, "10.98.0.2")

	const pps = 20000
	sp := udpSpec(10*time.Second, wire.Rate{PPS: pps})
	sp.Warmup = wire.Seconds(time.Second)
	cfg := Config{Targets: []string{dying, live}, Spec: sp, FrameSize: 128, Setup: a.Do}
	// The kill comes 700 ms after the server's report of the 4th second:
	// the window is cut there, 0.7 s before the senders stop.
	res := runKilledAfter(t, cfg, 700*time.Millisecond, kill)
	se := res.StoppedEarly
	for i, tr := range res.Targets {
		f := tr.Forward
		if f == nil {
			t.Fatalf("target %d: no forward figures", i)
		}
		t.Logf("target %d: %.2f s, sent %d (%.0f pps), received %d (%.0f pps), lost %d; notes %q",
			i, f.Seconds, f.SentPackets, f.SentPPS, f.ReceivedPackets, f.ReceivedPPS, f.LostPackets, tr.Notes)
	}
	f := res.Targets[1].Forward
	if f.SentPPS < 0.95*pps || f.SentPPS > 1.05*pps || f.ReceivedPPS < 0.95*pps || f.ReceivedPPS > 1.05*pps {
		t.Errorf("live target: sent %.0f pps, received %.0f pps over %.2f s; want the 20000 asked, over the window it counted",
			f.SentPPS, f.ReceivedPPS, f.Seconds)
	}
	if want := se.Detected - 1; f.Seconds < want-0.3 || f.Seconds > want+0.3 {
		t.Errorf("live target's window %.2f s; want to the senders' stop, %.2f s", f.Seconds, want)
	}
	if !slices.ContainsFunc(res.Targets[1].Notes, func(n string) bool { return strings.Contains(n, "this server was alive") }) {
		t.Errorf("live target's notes %q: no word of its window", res.Targets[1].Notes)
	}
	if d := res.Targets[0].Forward; d.Seconds < se.At-1.1 || d.Seconds > se.At-0.9 {
		t.Errorf("dead target's window %.2f s; want to its last report, %.2f s", d.Seconds, se.At-1)
	}
}

// serveIn runs a server in ns on addr until the test ends.
func serveIn(t *testing.T, ns *testenv.NetNS, addr string) string {
	t.Helper()
	srv := &Server{Setup: ns.Do}
	var ln net.Listener
	if err := ns.Do(func() (err error) { ln, err = net.Listen("tcp", addr+":0"); return err }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}
