package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"linerate/history"
	"linerate/internal/testenv"
	"linerate/results"
)

// serve --iperf3 in one namespace, the real iperf3 client in another: the
// client's test runs to completion and lands in the agent's history with
// samples; a client over --max-duration gets iperf3's own error, as does one
// outside --allow.
func TestServeIperf3(t *testing.T) {
	testenv.RequireRoot(t)
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Fatalf("iperf3 is not installed (make deps installs it): %v", err)
	}
	dir := t.TempDir()
	bin := buildLinerate(t, dir)
	a, b, c := testenv.NewNetNS(t), testenv.NewNetNS(t), testenv.NewNetNS(t)
	testenv.Veth(t, a, "ia", b, "ib", 1)
	testenv.Veth(t, c, "ic", b, "ib2", 1)
	a.AddAddr(t, "ia", "10.78.0.1/24")
	b.AddAddr(t, "ib", "10.78.0.2/24")
	c.AddAddr(t, "ic", "10.78.1.1/24")
	b.AddAddr(t, "ib2", "10.78.1.2/24")

	hist := filepath.Join(dir, "runs")
	ctx, cancel := context.WithCancel(context.Background())
	srv := exec.CommandContext(ctx, "ip", "netns", "exec", b.Name, bin, "serve", "--iperf3", "--listen", "10.78.0.2", "--listen", "10.78.1.2",
		"--allow", "10.78.0.0/24", "--max-duration", "5s", "--history-dir", hist)
	log := &syncBuffer{}
	srv.Stdout, srv.Stderr = log, log
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = srv.Wait()
		if t.Failed() {
			t.Logf("serve said:\n%s", log.String())
		}
	})
	waitFor(t, func() bool { return strings.Count(log.String(), "iperf3 clients on") == 2 }, "serve --iperf3 listening")

	client := func(ns *testenv.NetNS, to string, args ...string) map[string]any {
		t.Helper()
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		defer ccancel()
		out, _ := exec.CommandContext(cctx, "ip", append([]string{"netns", "exec", ns.Name, "iperf3", "-c", to, "-J"}, args...)...).CombinedOutput()
		var js map[string]any
		if err := json.Unmarshal(out, &js); err != nil {
			t.Fatalf("iperf3 %v: %v\n%s", args, err, out)
		}
		return js
	}
	js := client(a, "10.78.0.2", "-u", "-b", "20M", "-l", "1000", "-t", "2")
	if e, ok := js["error"]; ok {
		t.Fatalf("iperf3: %v", e)
	}
	waitFor(t, func() bool { return strings.Contains(log.String(), "saved as run") }, "the run saved")
	runs, err := history.Open(hist).List()
	if err != nil || len(runs) != 1 || runs[0].Kind != history.KindBench {
		t.Fatalf("history: %v, %+v", err, runs)
	}
	run, err := history.Open(hist).Load(runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var res results.Result
	if err := json.Unmarshal(run.Result, &res); err != nil {
		t.Fatal(err)
	}
	sent := uint64(js["end"].(map[string]any)["sum_sent"].(map[string]any)["packets"].(float64))
	if len(res.Samples) == 0 || res.Targets[0].Forward == nil || res.Targets[0].Forward.SentPackets != sent {
		t.Errorf("saved run: %d samples, forward %+v; iperf3 sent %d packets", len(res.Samples), res.Targets[0].Forward, sent)
	}
	t.Logf("saved %s: %s", run.ID, run.Headline)

	for _, r := range []struct {
		ns   *testenv.NetNS
		to   string
		args []string
		want string
	}{
		{a, "10.78.0.2", []string{"-t", "10"}, "int_errno=37"}, // 3.12 has no text for IEMAXSERVERTESTDURATIONEXCEEDED
		{c, "10.78.1.2", []string{"-t", "1"}, "test authorization failed"},
	} {
		js := client(r.ns, r.to, r.args...)
		if e, _ := js["error"].(string); !strings.Contains(e, r.want) {
			t.Errorf("iperf3 %v to %s: error %q, want %q", r.args, r.to, e, r.want)
		}
	}
	if !strings.Contains(log.String(), "--max-duration") || !strings.Contains(log.String(), "not in --allow") {
		t.Errorf("serve's log does not say why it refused:\n%s", log.String())
	}
}

// waitFor waits up to 10 s for cond.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}

// syncBuffer is a buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
