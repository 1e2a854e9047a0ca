package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"linerate/lab"
	"linerate/plan"
)

// tuneLab is a star lab of two peers with agents, a matrix plan that
// runs each peer alone without and with a tune plan, and that tune plan:
// net.core.somaxconn of the box's namespace set to a value it does not
// hold.
type tuneLab struct {
	*agentLab
	plan, state, netns string
	before, tuned      string
}

func newTuneLab(t *testing.T, rounds int) *tuneLab {
	l := &tuneLab{agentLab: upAgentLab(t, "rt-", "star", "--ports", "2")}
	dir := t.TempDir()
	l.netns, l.state = lab.NetnsPrefix+l.name+"-box", filepath.Join(dir, "state")
	l.before = l.somaxconn(t)
	l.tuned = "1234"
	if l.before == l.tuned {
		l.tuned = "1235"
	}
	tunePlan := fmt.Sprintf(`{"schema": 1, "netns": %q, "items": [{"kind": "sysctl", "target": "net.core.somaxconn", "value": %q}]}`, l.netns, l.tuned)
	if err := os.WriteFile(filepath.Join(dir, "tuned.json"), []byte(tunePlan), 0o644); err != nil {
		t.Fatal(err)
	}
	l.plan = filepath.Join(dir, "ab.yaml")
	if err := os.WriteFile(l.plan, fmt.Appendf(nil, `hosts:
  box: 10.231.1.1
  peer1: 10.231.1.2
  peer2: 10.231.2.2
defaults: {proto: udp, rate: 5kpps, engine: socket}
flows:
  - {from: peer1, to: box, address: 10.231.1.1}
  - {from: peer2, to: box, address: 10.231.2.1}
matrix: {combinations: 1, sizes: [128], rounds: %d, tune: tuned.json}
duration: 500ms
warmup: 200ms
`, rounds), 0o644); err != nil {
		t.Fatal(err)
	}
	return l
}

// somaxconn reads the box's setting with sysctl(8) in its namespace.
func (l *tuneLab) somaxconn(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", l.netns, "sysctl", "-n", "net.core.somaxconn").Output()
	if err != nil {
		t.Fatalf("sysctl in %s: %v", l.netns, err)
	}
	return strings.TrimSpace(string(out))
}

// checkRestored fails unless the setting is back and the journal empty.
func (l *tuneLab) checkRestored(t *testing.T, res *plan.Result) {
	t.Helper()
	if got := l.somaxconn(t); got != l.before {
		t.Errorf("after the run somaxconn is %s, want %s back", got, l.before)
	}
	if recs, _ := filepath.Glob(filepath.Join(l.state, "journal", "*.json")); len(recs) > 0 {
		t.Errorf("the journal keeps %v", recs)
	}
	tr := res.Tune
	if tr == nil || !tr.Applied || !tr.RolledBack || len(tr.Errors) > 0 || len(tr.Changes) != 1 {
		t.Fatalf("tune in the result: %+v", tr)
	}
	if c := tr.Changes[0]; c.Kind != "sysctl" || c.Target != "net.core.somaxconn" || c.From != l.before || c.To != l.tuned || tr.Netns != l.netns {
		t.Errorf("change %+v in %s, want somaxconn %s → %s in %s", c, tr.Netns, l.before, l.tuned, l.netns)
	}
}

// TestRunMatrixTune runs each peer alone without a tune plan and with it
// (two rounds a cell): four cells, keyed tune off and tune on, each with a
// result; the text pairs them; the setting is back and the journal empty
// after.
func TestRunMatrixTune(t *testing.T) {
	l := newTuneLab(t, 2)
	// --check lists both halves and the change, and makes none.
	r := l.exec("box", "linerate", "run", l.plan, "--check")
	for _, s := range []string{"4  set peer2-box size 128 tune on", `applied before the "tune on" half`, "sysctl  net.core.somaxconn  " + l.before + "  →  " + l.tuned} {
		if r.code != 0 || !strings.Contains(r.stdout, s) {
			t.Errorf("run --check: exit %d, lacks %q:\n%s%s", r.code, s, r.stdout, r.stderr)
		}
	}
	if got := l.somaxconn(t); got != l.before {
		t.Errorf("run --check changed somaxconn to %s", got)
	}
	r = l.exec("box", "linerate", "run", l.plan, "--json", "--no-save", "--state-dir", l.state)
	if r.code != 0 {
		t.Fatalf("run: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var res plan.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	want := []string{"set peer1-box size 128 tune off", "set peer2-box size 128 tune off", "set peer1-box size 128 tune on", "set peer2-box size 128 tune on"}
	if len(res.Matrix) != len(want) {
		t.Fatalf("%d cells, want %d", len(res.Matrix), len(want))
	}
	for i, c := range res.Matrix {
		if c.Key != want[i] || len(c.Rounds) != 2 || len(c.Errors) > 0 || c.Received.Mean <= 0 {
			t.Errorf("cell %d: %s, %d rounds, %.0f b/s, errors %v; want %s", i+1, c.Key, len(c.Rounds), c.Received.Mean, c.Errors, want[i])
		}
	}
	l.checkRestored(t, &res)
	if !strings.Contains(r.stderr, "tune: applied 1 changes") || !strings.Contains(r.stderr, "tune: rolled back") {
		t.Errorf("stderr:\n%s", r.stderr)
	}

	r = l.exec("box", "linerate", "run", l.plan, "--no-save", "--state-dir", l.state)
	if r.code != 0 {
		t.Fatalf("run: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, s := range []string{"TUNE OFF", "tune: each cell without the tune plan and with it", "set peer2-box size 128  ",
		"sysctl net.core.somaxconn: " + l.before + " → " + l.tuned, "rolled back after"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("the text lacks %q:\n%s", s, r.stdout)
		}
	}
	t.Logf("\n%s", r.stdout)
}

// TestRunMatrixTuneInterrupt stops a run with Ctrl-C as soon as it has
// applied the tune plan: the setting is the tuned one then (the "tune on"
// half runs with it), and after the interrupt it is back, the journal
// empty, the exit code 130 and the result marked interrupted.
func TestRunMatrixTuneInterrupt(t *testing.T) {
	l := newTuneLab(t, 1)
	// ip netns exec runs linerate in the box's namespace as its own
	// process: the signal goes to it.
	cmd := exec.Command("ip", "netns", "exec", l.netns, l.bin, "run", l.plan, "--json", "--no-save",
		"--state-dir", l.state, "--token-file", filepath.Join(l.dir, l.name+".secret"))
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	during := ""
	for sc.Scan() {
		fmt.Fprintln(&log, sc.Text())
		if strings.HasPrefix(sc.Text(), "tune: applied") && during == "" {
			during = l.somaxconn(t)
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if during != l.tuned {
		t.Errorf("with the tune plan applied somaxconn is %q, want %s\n%s", during, l.tuned, log.String())
	}
	if code != 130 {
		t.Errorf("exit %d (%v), want 130\n%s", code, err, log.String())
	}
	var res plan.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if !res.Interrupted {
		t.Errorf("the result is not marked interrupted")
	}
	// Both peers ran without the tune plan; the interrupt came in the
	// first "tune on" cell (or just before it).
	if n := len(res.Matrix); n < 2 || n > 3 || res.Matrix[0].Tune != plan.TuneOff || len(res.Matrix[1].Rounds) != 1 {
		t.Errorf("%d cells: %+v", n, res.Matrix)
	}
	l.checkRestored(t, &res)
	t.Logf("cells when interrupted: %d", len(res.Matrix))
}
