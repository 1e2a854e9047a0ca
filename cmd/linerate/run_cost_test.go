package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"linerate/box"
	"linerate/internal/testenv"
	"linerate/lab"
	"linerate/plan"
	"linerate/sample"
	"linerate/source/ethtool"
	"linerate/source/procfs"
	"linerate/traffic"
	"linerate/traffic/session"
)

// BenchmarkRunCost measures what `linerate run` costs the controller
// (the process that coordinates a plan) per number of hosts: N flows at
// once, each from an agent of its own, one round of 2 s after 500 ms of
// warmup at 50 packets a second per flow: a test of the coordination, not
// of the links. The controller is the real binary in its own process; it
// reports its CPU seconds and peak resident memory (getrusage, the
// result's controller), the benchmark samples its open descriptors from
// /proc while it runs, and the result gives the start barrier's set-up
// time, the spread of the flows' window starts and the size of the JSON
// result.
//
// "star": real agents, one `linerate serve` per node of a star lab (as
// far as a star goes, 64 peers), every peer sending to the box.
// "in-process": agents that are traffic.Servers in this test's process
// (the same server, protocol and sampler as serve), each on its own
// address of 127.0.0.0/8 in a namespace of the test, up to 1,000, each
// sending to the next (agentFarm.ring). The controller talks to the
// senders alike in both; at 8 and 64 both kinds run, so the stand-in can
// be held against the real thing. docs/plans.md ("Scale")
// has the table:
//
//	go test -run '^$' -bench RunCost -benchtime 1x ./cmd/linerate/
func BenchmarkRunCost(b *testing.B) {
	testenv.RequireRoot(b)
	bin := buildLinerate(b, b.TempDir())
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("hosts=%d/star", n), func(b *testing.B) { benchStar(b, bin, n) })
	}
	for _, n := range []int{8, 64, 256, 1000} {
		b.Run(fmt.Sprintf("hosts=%d/in-process", n), func(b *testing.B) { benchInProcess(b, bin, n) })
	}
}

// costPlan is a fan-in of n senders (their hosts' at: in order) to sink.
func costPlan(b *testing.B, sink string, senders []string, address func(i int) string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "hosts:\n  sink: %s\n", sink)
	for i, at := range senders {
		fmt.Fprintf(&s, "  s%d: %s\n", i+1, at)
	}
	s.WriteString("defaults: {proto: udp, size: 128, rate: 50pps, engine: socket}\nflows:\n")
	for i := range senders {
		fmt.Fprintf(&s, "  - {from: s%d, to: sink, address: %s}\n", i+1, address(i))
	}
	s.WriteString("duration: 2s\nwarmup: 500ms\n")
	p := filepath.Join(b.TempDir(), "cost.yaml")
	if err := os.WriteFile(p, []byte(s.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

func benchStar(b *testing.B, bin string, n int) {
	l := upAgentLab(b, "rc-", "star", "--ports", fmt.Sprint(n))
	var senders []string
	for k := 1; k <= n; k++ {
		senders = append(senders, fmt.Sprintf("10.231.%d.2", k))
	}
	p := costPlan(b, "10.231.1.1", senders, func(i int) string { return fmt.Sprintf("10.231.%d.1", i+1) })
	for b.Loop() {
		runCost(b, bin, lab.NetnsPrefix+l.name+"-box", p, filepath.Join(l.dir, l.name+".secret"), n)
	}
}

// agentFarm is n+1 agents in this process (traffic.Server, as serve
// runs it, with serve's sampler), each on an address of its own of
// 127.0.0.0/8 in a namespace of the test, and a file holding their secret.
type agentFarm struct {
	ns        *testenv.NetNS
	at        []string // ADDR:PORT of each agent
	tokenFile string
}

func newAgentFarm(t testing.TB, n int) *agentFarm {
	f := &agentFarm{ns: testenv.NewNetNS(t), at: make([]string, n), tokenFile: filepath.Join(t.TempDir(), "secret")}
	var secret [16]byte
	_, _ = rand.Read(secret[:])
	token := hex.EncodeToString(secret[:])
	if err := os.WriteFile(f.tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sampling := sharedSampling()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			srv := &traffic.Server{Token: token, Setup: f.ns.Do, Sampling: sampling}
			addr := fmt.Sprintf("127.1.%d.%d", i/250, i%250+1)
			f.at[i] = f.ns.Serve(t, addr, func(ctx context.Context, ln net.Listener) error { return srv.Serve(ctx, ln) })
		})
	}
	wg.Wait()
	return f
}

// sharedSampling is serve's sampler for agents that share one machine:
// each test still samples once a second on its own ticker and works out
// its own rates, but the counters, the same for all of them, are read at
// most every 200 ms and handed to every agent that asks meanwhile. A
// thousand agents each reading /proc every second would take a good part
// of this machine's CPU, which agents on hosts of their own take from
// their own.
func sharedSampling() session.Sampling {
	var et ethtool.Client
	if l, err := ethtool.NewLive(); err == nil {
		et = l
	}
	read := sample.Live(procfs.NewFS("/proc"), et, nil)
	var (
		mu   sync.Mutex
		at   time.Time
		last box.Counters
		err  error
	)
	cached := func() (box.Counters, error) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(at) > 200*time.Millisecond {
			last, err = read()
			at = time.Now()
		}
		return last, err
	}
	return session.Sampling(sample.Func(cached, time.Second))
}

// ring is a plan of a flow from each agent of f to the next (the last to
// the first): every agent sends one flow and receives one. Agents in one
// namespace all dial from 127.0.0.1, and an agent takes 4 connections
// being authenticated from one address at once: a ring keeps every agent
// at two (its flow's controller, and its sender), as hosts of their own
// would be.
func (f *agentFarm) ring(t testing.TB) string {
	var s strings.Builder
	s.WriteString("hosts:\n")
	for i, at := range f.at {
		fmt.Fprintf(&s, "  a%d: %s\n", i+1, at)
	}
	s.WriteString("defaults: {proto: udp, size: 128, rate: 50pps, engine: socket}\nflows:\n")
	for i := range f.at {
		fmt.Fprintf(&s, "  - {from: a%d, to: a%d}\n", i+1, (i+1)%len(f.at)+1)
	}
	s.WriteString("duration: 2s\nwarmup: 500ms\n")
	p := filepath.Join(t.TempDir(), "ring.yaml")
	if err := os.WriteFile(p, []byte(s.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func benchInProcess(b *testing.B, bin string, n int) {
	f := newAgentFarm(b, n)
	p := f.ring(b)
	for b.Loop() {
		runCost(b, bin, f.ns.Name, p, f.tokenFile, n)
	}
}

// controllerRun is one `linerate run PLAN --json` in a namespace: its
// result, and the most descriptors and threads it held (sampled from
// /proc every 10 ms while it ran).
type controllerRun struct {
	res            plan.Result
	fds, threads   int
	stdout, stderr string
}

func runController(t testing.TB, bin, netns, planFile, tokenFile string) controllerRun {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", netns, bin, "run", planFile, "--json", "--no-save", "--token-file", tokenFile)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// ip netns exec execs linerate: the process is the controller.
	var r controllerRun
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var err error
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-tick.C:
			if fds, e := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid)); e == nil {
				r.fds = max(r.fds, len(fds))
			}
			if th, e := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid)); e == nil {
				r.threads = max(r.threads, len(th))
			}
		}
	}
	r.stdout, r.stderr = out.String(), errb.String()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, tail(r.stderr, 20))
	}
	if err := json.Unmarshal([]byte(r.stdout), &r.res); err != nil {
		t.Fatalf("run --json: %v", err)
	}
	if len(r.res.Rounds) != 1 || r.res.Controller == nil {
		t.Fatalf("%d rounds, controller %+v", len(r.res.Rounds), r.res.Controller)
	}
	return r
}

// runCost runs the plan of n flows with the controller in namespace
// netns and reports its cost.
func runCost(b *testing.B, bin, netns, planFile, tokenFile string, n int) {
	b.Helper()
	r := runController(b, bin, netns, planFile, tokenFile)
	set := r.res.Rounds[0]
	received := 0
	for _, f := range set.Flows {
		if f.Result != nil && f.Result.Summary.ReceivedPackets > 0 {
			received++
		}
	}
	if len(set.Flows) != n || received != n {
		b.Errorf("%d of %d flows received anything", received, n)
	}
	u := r.res.Controller
	b.ReportMetric(u.UserSeconds+u.SysSeconds, "cpu-s")
	b.ReportMetric(float64(u.MaxRSSBytes)/(1<<20), "MiB-rss")
	b.ReportMetric(float64(r.fds), "fds")
	b.ReportMetric(float64(r.threads), "threads")
	if set.Barrier != nil {
		b.ReportMetric(set.Barrier.SetupMS, "ms-setup")
	}
	if set.StartSpreadMS != nil {
		b.ReportMetric(*set.StartSpreadMS, "ms-spread")
	}
	b.ReportMetric(float64(len(r.stdout))/(1<<10), "KiB-json")
}

// The controller's peak memory is its own: started from a process that
// holds far more (this test, having touched 256 MiB), a run of a plan of
// two in-process agents says it used less than that, where getrusage's
// ru_maxrss, which the kernel carries across exec from the process that
// forked, would say 256 MiB or more.
func TestRunControllerOwnMemory(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildLinerate(t, t.TempDir())
	f := newAgentFarm(t, 2)
	p := f.ring(t)
	ballast := make([]byte, 256<<20)
	for i := range ballast {
		ballast[i] = byte(i)
	}
	r := runController(t, bin, f.ns.Name, p, f.tokenFile)
	if rss := r.res.Controller.MaxRSSBytes; rss <= 0 || rss >= 128<<20 {
		t.Errorf("the controller's peak resident memory: %d MiB, want its own (a few tens)", rss>>20)
	}
	runtime.KeepAlive(ballast)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
