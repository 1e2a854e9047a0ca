package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/lab"
	"linerate/results"
)

// TestBenchFromReceiverKilled kills wan's agent (kill -9) 3 s into the
// measured window of a 10 s `bench udp --from lan --to wan` run on the
// router, 800 ms after wan's report of that second: the run ends within
// 2 s of the kill, exits 1, prints the error once, and its result keeps
// the seconds both ends counted, to wan's last report, marked stopped
// early with the reason: what lan sent after that report is in no figure
// and counts as lost nowhere, and the verdict names the death.
func TestBenchFromReceiverKilled(t *testing.T) {
	l := upAgentLab(t, "pk-", "router")
	out := filepath.Join(t.TempDir(), "flows.json")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.bin, "lab", "exec", "--state-dir", l.dir, l.name, "router", "--",
		l.bin, "bench", "udp", "--from", "lan", "--to", "wan", "-t", "10", "--warmup", "1s", "-b", "20kpps", "--size", "128",
		"--no-save", "-o", out)
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var text strings.Builder
	var killed time.Time
	sc := bufio.NewScanner(stdout)
	lines := 0
	for sc.Scan() {
		line := sc.Text()
		text.WriteString(line + "\n")
		if strings.Contains(line, "recv") && strings.HasPrefix(line, "[") {
			lines++
		}
		if lines == 4 && killed.IsZero() { // 1 s of warmup, 3 measured
			// Most of a second after wan's report: lan sends on, uncounted
			// by wan, until the death is noticed.
			time.Sleep(800 * time.Millisecond)
			killed = killAgent(t, l.name, "wan")
		}
	}
	werr := cmd.Wait()
	took := time.Since(killed)
	code := 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		code = ee.ExitCode()
	}
	t.Logf("exit %d %s after the kill\nstdout:\n%s\nstderr:\n%s", code, took, text.String(), stderr.String())
	if killed.IsZero() {
		t.Fatal("wan's agent was never killed")
	}
	if took > 2500*time.Millisecond {
		t.Errorf("bench ended %s after the receiver's death; want at once (< 2.5 s)", took)
	}
	if code != 1 {
		t.Errorf("exit code %d; want 1", code)
	}
	all := text.String() + stderr.String()
	if n := strings.Count(all, "control connection closed"); n != 1 {
		t.Errorf("the error is printed %d times; want once", n)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var set results.FlowSet
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Flows) != 1 || set.Flows[0].Result == nil {
		t.Fatalf("flows %+v", set.Flows)
	}
	res := set.Flows[0].Result
	if res.Interrupted || set.Interrupted {
		t.Error("interrupted: that is Ctrl-C's")
	}
	se := res.StoppedEarly
	if se == nil {
		t.Fatalf("not marked stopped early: errors %q", res.Errors)
	}
	t.Logf("stopped early %+v", *se)
	if !strings.Contains(se.Reason, "control connection closed") || se.At < 3 || se.At > 4.6 {
		t.Errorf("stopped early %+v; want the server's death, about 4 s in", *se)
	}
	f := res.Targets[0].Forward
	if f == nil {
		t.Fatal("no forward figures")
	}
	t.Logf("forward %.2f s: sent %d received %d lost %d", f.Seconds, f.SentPackets, f.ReceivedPackets, f.LostPackets)
	want := uint64((se.At - 1) * 20000)
	if f.ReceivedPackets < want*9/10 || f.SentPackets < want*9/10 || f.SentPackets > want*11/10 {
		t.Errorf("sent %d received %d; want about %d each, the seconds before the kill", f.SentPackets, f.ReceivedPackets, want)
	}
	checkCutAtDeath(t, res)
	if strings.Contains(all, "between the ends") {
		t.Errorf("packets placed between the ends:\n%s", all)
	}
}

// checkCutAtDeath checks the figures of a flow whose receiver died: both
// ends' counts end at its last report (sent and received agree: what was
// sent after it is in neither), no packet counts as lost (the loss is
// unknown), the ledger places none between the ends, and the verdict
// draws no limit but says what happened.
func checkCutAtDeath(t *testing.T, res *results.Result) {
	t.Helper()
	f := res.Targets[0].Forward
	s := res.Summary
	t.Logf("forward: sent %d received %d lost %d (unknown %v); verdict %q: %s", f.SentPackets, f.ReceivedPackets, f.LostPackets, f.LossUnknown, s.LimitedBy, s.LimitedWhy)
	if f.SentPackets > f.ReceivedPackets+f.ReceivedPackets/50 {
		t.Errorf("sent %d, received %d: the sender's count runs past the receiver's last report", f.SentPackets, f.ReceivedPackets)
	}
	if f.LostPackets != 0 || s.LostPackets != 0 || !f.LossUnknown || !s.LossUnknown {
		t.Errorf("lost %d (summary %d), unknown %v (summary %v): want none counted, unknown", f.LostPackets, s.LostPackets, f.LossUnknown, s.LossUnknown)
	}
	if l := res.Ledger; l != nil && l.Unaccounted() != 0 {
		t.Errorf("the ledger places %d packets between the ends", l.Unaccounted())
	}
	if s.LimitedBy != results.LimitUnknown || !strings.Contains(s.LimitedWhy, "died or failed") {
		t.Errorf("verdict %q: %q; want none drawn, naming the death", s.LimitedBy, s.LimitedWhy)
	}
}

// killAgent kills (kill -9) the agents of node in lab name and returns
// when.
func killAgent(t *testing.T, name, node string) time.Time {
	t.Helper()
	pids := agentPids(t, name, node)
	if len(pids) == 0 {
		t.Fatalf("no agent runs in %s", node)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return time.Now()
}

// agentPids are the agents (serve) running in node of lab name.
func agentPids(t *testing.T, name, node string) []int {
	var out []int
	inLab := map[int]bool{}
	for _, p := range testenv.PidsWithEnv(t, lab.EnvLab+"="+name) {
		inLab[p] = true
	}
	for _, p := range testenv.PidsWithEnv(t, lab.EnvNode+"="+node) {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
		if inLab[p] && bytes.Contains(b, []byte("serve")) {
			out = append(out, p)
		}
	}
	return out
}

// TestRunPlanReceiverKilled kills wan's agent (kill -9) about 4 s into a
// 10 s `run PLAN` of one flow lan → wan on the router: the run ends at
// once, exits 1, prints the error once, and its flow's result is marked
// stopped early with the reason (run PLAN exited 0 with no error).
func TestRunPlanReceiverKilled(t *testing.T) {
	l := upAgentLab(t, "pp-", "router")
	p := filepath.Join(t.TempDir(), "cut.yaml")
	if err := os.WriteFile(p, []byte(`hosts:
  lan: lan
  wan: wan
defaults: {proto: udp, rate: 20kpps, size: 128}
flows:
  - {from: lan, to: wan}
duration: 10s
warmup: 1s
`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.bin, "lab", "exec", "--state-dir", l.dir, l.name, "router", "--",
		l.bin, "run", p, "--json", "--no-save")
	cmd.Dir = repoRoot
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	var killed time.Time
	select {
	case werr = <-done:
		t.Fatalf("run ended before the kill: %v\n%s%s", werr, stdout.String(), stderr.String())
	case <-time.After(5 * time.Second): // reach the agents, 1 s of warmup, ~3 s measured
	}
	killed = killAgent(t, l.name, "wan")
	werr = <-done
	took := time.Since(killed)
	code := 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		code = ee.ExitCode()
	}
	t.Logf("exit %d %s after the kill\nstderr:\n%s", code, took, stderr.String())
	if took > 2500*time.Millisecond {
		t.Errorf("run ended %s after the receiver's death; want at once (< 2.5 s)", took)
	}
	if code != 1 {
		t.Errorf("exit code %d; want 1", code)
	}
	all := stdout.String() + stderr.String()
	if n := strings.Count(stderr.String(), "control connection closed"); n != 1 {
		t.Errorf("the error is printed %d times on stderr; want once:\n%s", n, all)
	}
	var res struct {
		Rounds []results.FlowSet `json:"rounds"`
		Errors []string          `json:"errors"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if len(res.Rounds) != 1 || len(res.Rounds[0].Flows) != 1 || res.Rounds[0].Flows[0].Result == nil {
		t.Fatalf("rounds %+v", res.Rounds)
	}
	fr := res.Rounds[0].Flows[0].Result
	se := fr.StoppedEarly
	if se == nil {
		t.Fatalf("not marked stopped early: errors %q", fr.Errors)
	}
	t.Logf("stopped early %+v; errors %q", *se, fr.Problems())
	if !strings.Contains(se.Reason, "control connection closed") {
		t.Errorf("stopped early %+v; want the server's death", *se)
	}
	if fr.Interrupted {
		t.Error("interrupted: that is Ctrl-C's")
	}
	if f := fr.Targets[0].Forward; f == nil || f.ReceivedPackets < uint64((se.At-1)*20000*0.9) {
		t.Fatalf("forward %+v; want the seconds before the kill", f)
	}
	checkCutAtDeath(t, fr)
}
