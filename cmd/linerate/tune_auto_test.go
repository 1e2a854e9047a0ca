package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"linerate/autotune"
	"linerate/internal/testenv"
	"linerate/internal/usage"
	"linerate/lab"
	"linerate/traffic"
)

// TestTuneAutoHostDryRun benches this host against a server on loopback,
// diagnoses it and lists candidates without changing anything (--to mode;
// a real run would tune this host, which a test must not).
func TestTuneAutoHostDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&traffic.Server{}).Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	state := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := executeTo(&stdout, &stderr, "tune", "auto", "--to", ln.Addr().String(), "--dry-run", "--duration", "500ms",
		"--warmup", "100ms", "--rate", "20kpps", "--rounds", "1", "--state-dir", state, "--json"); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var rep autotune.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	if !rep.DryRun || rep.DUT != "this host" || rep.Netns != "" || !rep.Diagnosed || len(rep.Baseline) != 1 || len(rep.Trials) != 0 {
		t.Errorf("report: %+v", rep)
	}
	if b := rep.Baseline[0]; b.ReceivedPPS < 1000 || !b.CPUSampled || b.CPUSeconds <= 0 {
		t.Errorf("baseline round: %+v", b)
	}
	if _, err := os.Stat(filepath.Join(state, "journal")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dry run touched the journal: %v", err)
	}
	if !strings.Contains(stderr.String(), "baseline round 1/1") {
		t.Errorf("progress:\n%s", stderr.String())
	}
}

// TestTuneAutoBadInput: every mistake is bad input (exit 2), one line
// naming it, found before any traffic runs.
func TestTuneAutoBadInput(t *testing.T) {
	labErr := "no lab named \"no-such-lab-h12\""
	if os.Geteuid() != 0 {
		labErr = "needs root"
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "auto"}, "give --lab NAME"},
		{[]string{"tune", "auto", "--lab", "x", "--to", "10.0.0.2"}, "--lab and --to: give one"},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--goal", "speed"}, `--goal "speed": want throughput, loss or cpu`},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--goal", "loss", "--proto", "tcp"}, "--goal loss is for udp"},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--rounds", "0"}, "--rounds 0: want 1 to 100"},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--rounds", "5", "--max-rounds", "3"}, "--max-rounds 3: want 5 to 100"},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--min-gain", "0"}, "--min-gain 0"},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--passes", "0"}, "--passes 0"},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--try", "rps"}, `--try "rps": want KIND:TARGET=VALUE`},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--try", "warp:x=1"}, `unknown kind "warp"`},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--no-fixes"}, "--no-fixes leaves nothing to try"},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--duration", "0s"}, "--duration 0s"},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--size", "40"}, "--size 40"},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--proto", "sctp"}, `--proto "sctp"`},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--proto", "tcp", "--size", "128"}, "--size is for udp"},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--rate", "500"}, "--rate"},
		{[]string{"tune", "auto", "--to", "10.0.0.2", "--dut", "router"}, "--dut goes with --lab, not --to"},
		{[]string{"tune", "auto", "--lab", "x", "--reverse"}, "--reverse goes with --to, not --lab"},
		{[]string{"tune", "auto", "--lab", "no-such-lab-h12"}, labErr},
		{[]string{"tune", "auto", "extra"}, "unknown command"},
	} {
		out, err := runArgs(t, tc.args...)
		if err == nil || !(usage.Is(err) || isCobraUsage(err)) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err %v (usage %v); want one line of bad input with %q\n%s", tc.args, err, usage.Is(err), tc.want, out)
		}
	}
}

func TestTuneAutoHelp(t *testing.T) {
	out, err := runArgs(t, "tune", "auto", "--help")
	if err != nil || !strings.Contains(out, "Examples:\n  linerate lab up router --name demo && linerate tune auto --lab demo") {
		t.Errorf("tune auto --help: %v\n%s", err, out)
	}
	findCmd(t, "tune", "auto").Flags().VisitAll(func(f *pflag.Flag) {
		if f.Usage == "" {
			t.Errorf("--%s has no help text", f.Name)
		}
	})
}

// TestTuneAutoLab runs the real binary in a router lab made for the test:
// a run that finishes and prints its report as JSON, a run stopped with
// Ctrl-C during a trial (exit 130, the trial rolled back, the report
// printed), and a run killed with SIGKILL during a trial, whose journal
// `tune rollback --last` restores.
func TestTuneAutoLab(t *testing.T) {
	testenv.RequireRoot(t)
	bin := filepath.Join(t.TempDir(), "linerate")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := "tac-" + hex.EncodeToString(b[:])
	dir := lab.Dir(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := dir.Up(ctx, lab.Spec{Name: name, Topology: lab.Router})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dir.Down(name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	other := "0"
	if runtime.NumCPU() > 1 {
		other = "1"
	}
	// rps reads rps_cpus of the router's lan queue the way `ip netns exec`
	// would, in a process started in the node with its own sysfs.
	rps := func() string {
		t.Helper()
		var out bytes.Buffer
		c := exec.Command("cat", "/sys/class/net/lan/queues/rx-0/rps_cpus")
		c.Stdout = &out
		if err := l.Run("router", c); err != nil {
			t.Fatalf("read rps_cpus in router: %v", err)
		}
		return strings.Trim(strings.TrimSpace(out.String()), "0,")
	}
	if got := rps(); got != "" {
		t.Fatalf("router lan rx-0 rps_cpus %q before the test, want none", got)
	}
	state := t.TempDir()
	t.Cleanup(func() {
		c := exec.Command(bin, "tune", "rollback", "--state-dir", state)
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("cleanup rollback: %v\n%s", err, out)
		}
	})
	auto := func(extra ...string) *exec.Cmd {
		args := append([]string{"tune", "auto", "--lab", name, "--warmup", "300ms", "--cpus", "0", "--state-dir", state,
			"--try", "rps:lan/rx-0=" + other, "--no-fixes"}, extra...)
		c := exec.Command(bin, args...)
		c.Env = append(os.Environ(), lab.EnvDir+"="+string(dir))
		return c
	}

	t.Run("json", func(t *testing.T) {
		rep, progress := autoJSON(t, auto("--duration", "1s", "--rounds", "1", "--max-rounds", "3", "--json"))
		if len(rep.Baseline) != 1 || len(rep.Trials) != 1 || rep.Trials[0].Item.Kind != "rps" || len(rep.Trials[0].Rounds) != 3 ||
			len(rep.Trials[0].Without) != 3 || rep.MaxRounds != 3 {
			t.Fatalf("report: %+v", rep)
		}
		tr := rep.Trials[0]
		switch tr.Outcome {
		case autotune.Kept:
			if got := rps(); got == "" || len(rep.Records) != 1 {
				t.Errorf("kept, but rps_cpus %q, records %v", got, rep.Records)
			}
			rb := exec.Command(bin, "tune", "rollback", "--state-dir", state)
			if out, err := rb.CombinedOutput(); err != nil {
				t.Fatalf("rollback: %v\n%s", err, out)
			}
		case autotune.RolledBack, autotune.Undecided:
			if !tr.Restored {
				t.Errorf("rolled back but not restored: %+v", tr)
			}
		default:
			t.Errorf("outcome %q: %s", tr.Outcome, tr.Why)
		}
		if got := rps(); got != "" {
			t.Errorf("rps_cpus %q after the run (and rollback), want none", got)
		}
		if !strings.Contains(progress, "[1/1] rps lan/rx-0 none → "+other+" (--try)") {
			t.Errorf("progress:\n%s", progress)
		}
	})

	t.Run("ctrl-c", func(t *testing.T) {
		c := auto("--duration", "2s", "--rounds", "1")
		var out bytes.Buffer
		c.Stdout = &out
		stderr := duringTrial(t, c, os.Interrupt)
		err := c.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Fatalf("exit %v, want 130\n%s", err, stderr())
		}
		last := autoLastLine(stderr())
		if !strings.HasPrefix(last, "linerate: tune auto interrupted; the change being tried, if any, was rolled back; nothing was kept") {
			t.Errorf("last line %q", last)
		}
		if !strings.Contains(out.String(), "interrupted") || !strings.Contains(out.String(), "rps lan/rx-0") {
			t.Errorf("report:\n%s", out.String())
		}
		if got := rps(); got != "" {
			t.Errorf("rps_cpus %q after Ctrl-C, want none", got)
		}
		if st := run(t, bin, "tune", "status", "--state-dir", state); !strings.Contains(st.stdout, "journal is empty") {
			t.Errorf("journal after Ctrl-C: %s", st.stdout)
		}
	})

	t.Run("kill", func(t *testing.T) {
		c := auto("--duration", "2s", "--rounds", "1")
		stderr := duringTrial(t, c, syscall.SIGKILL)
		_ = c.Wait()
		if got := rps(); got == "" {
			t.Fatalf("rps_cpus none while the trial was running\n%s", stderr())
		}
		st := run(t, bin, "tune", "status", "--state-dir", state)
		if !strings.Contains(st.stdout, "rps  lan/rx-0  none  →  "+other) {
			t.Errorf("journal after kill -9:\n%s", st.stdout)
		}
		rb := run(t, bin, "tune", "rollback", "--last", "--state-dir", state)
		if rb.code != 0 || !strings.Contains(rb.stdout, "restored 1 change") {
			t.Errorf("rollback --last: %d %s %s", rb.code, rb.stdout, rb.stderr)
		}
		if got := rps(); got != "" {
			t.Errorf("rps_cpus %q after rollback, want none", got)
		}
	})
}

// duringTrial starts c, waits until its first trial's bench is under way
// and sends it sig; it returns what c wrote on stderr so far.
func duringTrial(t *testing.T, c *exec.Cmd, sig os.Signal) func() string {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = pw
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var mu sync.Mutex
	var log strings.Builder
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := false
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if !once && strings.HasPrefix(sc.Text(), "[1/1]") {
				once = true
				close(started)
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		c.Process.Kill()
		t.Fatalf("no trial started within 60s:\n%s", log.String())
	}
	// In the middle of the trial's first round (warmup 300ms + 2s).
	time.Sleep(time.Second)
	if err := c.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	return func() string {
		time.Sleep(100 * time.Millisecond) // the reader catches up
		mu.Lock()
		defer mu.Unlock()
		return log.String()
	}
}

// autoLastLine is the last non-empty line of s.
func autoLastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestTuneAutoLabAgents: in a lab up with --serve, tune auto --lab runs
// as tune auto --from lan --to wan run on the router does (the router
// asks lan's agent to send to wan's, with the lab's secret), and the loop
// runs as before: a measured baseline, a trial kept or rolled back, the
// router as it was after rollback.
func TestTuneAutoLabAgents(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildLinerate(t, t.TempDir())
	dir, state := t.TempDir(), t.TempDir()
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := "taa-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		if r := run(t, bin, "tune", "rollback", "--state-dir", state); r.code != 0 {
			t.Errorf("cleanup rollback: %s", r.stderr)
		}
		if r := run(t, bin, "lab", "down", name, "--state-dir", dir); r.code != 0 {
			t.Errorf("lab down: %s", r.stderr)
		}
		checkLabGone(t, dir, name)
	})
	if up := run(t, bin, "lab", "up", "router", "--name", name, "--serve", "--state-dir", dir); up.code != 0 {
		t.Fatalf("lab up --serve: %s", up.stderr)
	}
	other := "0"
	if runtime.NumCPU() > 1 {
		other = "1"
	}
	// A light load, not pinned: what is checked is that the agent carries
	// it, and a generator pinned to a CPU that other tests load may not
	// get to send within a short round.
	c := exec.Command(bin, "tune", "auto", "--lab", name, "--warmup", "300ms", "--duration", "1s", "--rounds", "1", "--max-rounds", "3",
		"--rate", "20kpps", "--state-dir", state, "--try", "rps:lan/rx-0="+other, "--no-fixes", "--json")
	c.Env = append(os.Environ(), lab.EnvDir+"="+dir)
	rep, progress := autoJSON(t, c)
	if !strings.Contains(rep.Rig, "wan's agent 10.231.2.2:7557, run by router") {
		t.Errorf("rig %q: want lan's agent sending to wan's, run by the router", rep.Rig)
	}
	if len(rep.Baseline) != 1 || rep.Baseline[0].ReceivedPPS <= 0 || !rep.Baseline[0].CPUSampled {
		t.Errorf("baseline: %+v\n%s", rep.Baseline, progress)
	}
	if len(rep.Trials) != 1 || (rep.Trials[0].Outcome != autotune.Kept && rep.Trials[0].Outcome != autotune.RolledBack && rep.Trials[0].Outcome != autotune.Undecided) {
		t.Errorf("trials: %+v", rep.Trials)
	}
}

// autoJSON runs tune auto --json and returns its report and progress.
func autoJSON(t *testing.T, c *exec.Cmd) (autotune.Report, string) {
	t.Helper()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		t.Fatalf("tune auto: %v\n%s", err, errb.String())
	}
	var rep autotune.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out.String())
	}
	return rep, errb.String()
}
