package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"linerate/demo"
	"linerate/internal/testenv"
	"linerate/internal/usage"
	"linerate/lab"
)

// buildDemoBinary builds linerate into a directory anyone may read: the
// no-root test runs it as nobody.
func buildDemoBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "linerate")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// demoRunInProcess runs `linerate demo ARGS...` in this process with the
// demo's flags reset first. Only for bad input: it returns before
// anything is built.
func demoRunInProcess(t *testing.T, args ...string) error {
	t.Helper()
	_, err := runArgs(t, []*cobra.Command{demoCmd}, append([]string{"demo"}, args...)...)
	return err
}

func TestDemoBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--quick", "--duration", "2s"}, "--quick and --duration: give one"},
		{[]string{"--quick", "--round-duration", "2s"}, "--quick and --round-duration: give one"},
		{[]string{"--rounds", "0"}, "--rounds 0: want 1 to 10"},
		{[]string{"--rounds", "11"}, "--rounds 11: want 1 to 10"},
		{[]string{"--round-duration", "0s"}, "--round-duration 0s"},
		{[]string{"--round-duration", "1ms"}, "--round-duration 1ms"},
		{[]string{"--duration", "0s"}, "--duration 0s"},
		{[]string{"--duration", "-1s"}, "--duration -1s"},
		{[]string{"--duration", "10m"}, "--duration 10m0s"},
		{[]string{"--speed", "fast"}, `--speed: bad speed "fast"`},
		{[]string{"--speed", "5"}, "--speed 5"},
		{[]string{"--name", "Not A Name"}, "--name"},
		{[]string{"--name", strings.Repeat("a", lab.MaxNameLen+1)}, "--name"},
		{[]string{"extra"}, `unknown command "extra"`},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
	} {
		err := demoRunInProcess(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("demo %v: %v, want an error with %q", tc.args, err, tc.want)
			continue
		}
		if !usage.Is(err) && !isCobraUsage(err) {
			t.Errorf("demo %v: %v is not bad input (exit %d)", tc.args, err, exitBadInput)
		}
	}
}

func TestDemoHelp(t *testing.T) {
	if demoCmd.Example == "" {
		t.Error("demo has no example")
	}
	demoCmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Usage == "" {
			t.Errorf("--%s has no help text", f.Name)
		}
	})
}

// TestDemo runs the built binary: without root, the whole demo with short
// durations (what `make demo` does, as CI runs it), and the demo stopped by
// SIGINT during its first experiment and during tune auto's first trial.
// The binary is built once for the four.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and (as root) a lab; skipped with -short")
	}
	bin := buildDemoBinary(t)
	t.Run("needs-root", func(t *testing.T) { testDemoNeedsRoot(t, bin) })
	t.Run("end-to-end", func(t *testing.T) { testDemoEndToEnd(t, bin) })
	t.Run("interrupted", func(t *testing.T) { testDemoInterrupted(t, bin) })
	t.Run("interrupted-tune", func(t *testing.T) { testDemoInterruptedTune(t, bin) })
}

func testDemoNeedsRoot(t *testing.T, bin string) {
	cmd := exec.Command(bin, "demo", "--quick")
	if os.Geteuid() == 0 {
		// Run it as nobody.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitBadInput {
		t.Fatalf("demo without root: %v, want exit %d; stderr %q", err, exitBadInput, errb.String())
	}
	if lines := strings.Split(strings.TrimSpace(errb.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "linerate demo needs root") {
		t.Errorf("stderr %q: want one line saying the demo needs root", errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q: want nothing", out.String())
	}
}

// demoLab is a fresh lab name and state directory for one demo run; what
// is left of it when the test ends is removed.
func demoLab(t *testing.T) (string, lab.Dir, string) {
	t.Helper()
	testenv.RequireRoot(t)
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := "de-" + hex.EncodeToString(b[:])
	dir := lab.Dir(t.TempDir())
	// The demo's TMPDIR, where tune's journal goes: empty at the end.
	tmp := t.TempDir()
	t.Cleanup(func() {
		if _, err := dir.Load(name); err == nil {
			t.Errorf("lab %s was left behind; removing it", name)
			if err := dir.Down(name); err != nil {
				t.Errorf("clean up lab %s: %v", name, err)
			}
		}
	})
	return name, dir, tmp
}

// demoCommand is the binary's `demo ARGS...` recording its lab in dir,
// with TMPDIR tmp.
func demoCommand(bin string, dir lab.Dir, tmp string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, append([]string{"demo"}, args...)...)
	cmd.Env = append(os.Environ(), lab.EnvDir+"="+string(dir), "TMPDIR="+tmp)
	return cmd
}

// demoLeftovers fails the test if anything of the lab remains: its state
// file, its namespaces, a process running the test's binary bin (serve
// or bench in a node), or anything in the demo's TMPDIR (tune's journal).
func demoLeftovers(t *testing.T, bin, name string, dir lab.Dir, tmp string) {
	t.Helper()
	ents, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("%s is left in the demo's TMPDIR %s", e.Name(), tmp)
	}
	labs, err := dir.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range labs {
		t.Errorf("lab %s (%s) is left in %s", l.Spec.Name, l.Status(), dir)
	}
	for _, node := range []string{"lan", "router", "wan"} {
		ns := lab.NetnsName(name, node)
		if ok, err := lab.NetnsExists(ns); ok || err != nil {
			t.Errorf("network namespace %s is left (%v)", ns, err)
		}
	}
	// The processes of this machine (the test's own view of /proc).
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, p := range procs {
		if exe, err := os.Readlink(p); err == nil && exe == bin {
			pid := filepath.Base(filepath.Dir(p))
			cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
			t.Errorf("process %s is still running: %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
}

// rowFigures finds the table row of an experiment and direction and
// returns its measured Mb/s and pps.
func rowFigures(out, title, path string) (mbps, pps float64, ok bool) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(title) + `?\s+` + regexp.QuoteMeta(path) + `\s+([0-9.]+)\s+([0-9,]+)\s`)
	if title == "" {
		re = regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(path) + `\s+([0-9.]+)\s+([0-9,]+)\s`)
	}
	m := re.FindStringSubmatch(out)
	if m == nil {
		return 0, 0, false
	}
	mbps, _ = strconv.ParseFloat(m[1], 64)
	pps, _ = strconv.ParseFloat(strings.ReplaceAll(m[2], ",", ""), 64)
	return mbps, pps, true
}

// testDemoEndToEnd is `make demo` in CI: the real binary, a real lab, the
// three experiments with short durations.
func testDemoEndToEnd(t *testing.T, bin string) {
	name, dir, tmp := demoLab(t)
	cmd := demoCommand(bin, dir, tmp, "--quick", "--name", name)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo --quick: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
		}
	case <-time.After(90 * time.Second):
		cmd.Process.Signal(os.Interrupt)
		<-done
		t.Fatalf("demo --quick still running after 90 s\nstdout:\n%s", out.String())
	}
	got := out.String()
	for _, e := range demo.Experiments {
		mbps, pps, ok := rowFigures(got, e.Title, "lan→wan")
		if !ok {
			t.Errorf("no row for %q lan→wan in:\n%s", e.Title, got)
			continue
		}
		if mbps <= 0 || pps <= 0 {
			t.Errorf("%s: %v Mb/s, %v pps: want figures above zero", e.Title, mbps, pps)
		}
	}
	// Both directions at once: the reverse row follows the forward one.
	if mbps, pps, ok := rowFigures(got, "", "wan→lan"); !ok || mbps <= 0 || pps <= 0 {
		t.Errorf("no wan→lan figures above zero in:\n%s", got)
	}
	for _, want := range []string{"[5/5]", "1G PORT", "CPU0", "lab " + name + " is gone",
		"diagnose: router (netns " + lab.NetnsName(name, "router") + ") during a flood of 64-byte UDP packets lan → wan",
		"tune auto on router", "before → after: ",
		"the router is as the demo found it, and its journal is empty and removed"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	// The before/after table: the seed's RPS change on the router, measured
	// before and after, kept or rolled back.
	if runtime.NumCPU() > 1 {
		row := regexp.MustCompile(`(?m)^CHANGE +FROM → TO +TRIED FOR +BEFORE +AFTER +DELTA +RESULT +WHY\n` +
			`rps lan/rx-0 +none → [0-9,-]+ +seeds/002 +[0-9.]+ k?pps +[0-9.]+ k?pps +[-+][0-9.]+% +(kept|rolled back) +\S`)
		if !row.MatchString(got) {
			t.Errorf("no before/after table with the seed's RPS change in:\n%s", got)
		}
	}
	if errb.Len() != 0 {
		t.Errorf("stderr: %s", errb.String())
	}
	demoLeftovers(t, bin, name, dir, tmp)
}

// testDemoInterrupted sends SIGINT once the lab is up and the first
// experiment runs: the demo exits 130 and leaves nothing behind.
func testDemoInterrupted(t *testing.T, bin string) {
	name, dir, tmp := demoLab(t)
	cmd := demoCommand(bin, dir, tmp, "--name", name)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	started := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "[1/5]") {
				once.Do(func() { close(started) })
			}
		}
	}()
	select {
	case <-started:
	case <-read:
		cmd.Wait()
		t.Fatalf("the demo ended before its first experiment: %s\n%s", out.String(), errb.String())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-read
		cmd.Wait()
		t.Fatalf("no experiment started within 30 s:\n%s", out.String())
	}
	// Let bench start in lan, then Ctrl-C.
	time.Sleep(700 * time.Millisecond)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { <-read; done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the demo did not end within 30 s of SIGINT:\n%s", out.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Errorf("interrupted demo: %v, want exit %d\nstdout:\n%s\nstderr:\n%s", err, exitInterrupted, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "demo interrupted during") {
		t.Errorf("stderr %q: want it to say the demo was interrupted", errb.String())
	}
	if !strings.Contains(out.String(), "lab "+name+" is gone") {
		t.Errorf("stdout does not say the lab is gone:\n%s", out.String())
	}
	demoLeftovers(t, bin, name, dir, tmp)
}

// testDemoInterruptedTune sends SIGINT while tune auto tries its first
// change on the router: the demo rolls the trial back, removes the lab and
// its journal, prints what it had, and exits 130.
func testDemoInterruptedTune(t *testing.T, bin string) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: the demo has no RPS change to try")
	}
	name, dir, tmp := demoLab(t)
	// Short experiments, one round per baseline and change, long enough to
	// stop in the middle.
	cmd := demoCommand(bin, dir, tmp, "--duration", "200ms", "--rounds", "1", "--round-duration", "2s", "--name", name)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out strings.Builder
	trial := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
			// tune auto's first trial, in the tune step.
			if strings.HasPrefix(sc.Text(), "  [1/") {
				once.Do(func() { close(trial) })
			}
		}
	}()
	output := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	select {
	case <-trial:
	case <-read:
		cmd.Wait()
		t.Fatalf("the demo ended before tune auto tried a change: %s\n%s", output(), errb.String())
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		<-read
		cmd.Wait()
		t.Fatalf("no trial started within 90 s:\n%s", output())
	}
	// In the trial's first round (1 s of warmup, then 2 s), Ctrl-C.
	time.Sleep(1500 * time.Millisecond)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { <-read; done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the demo did not end within 30 s of SIGINT:\n%s", output())
	}
	got := output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Errorf("interrupted demo: %v, want exit %d\nstdout:\n%s\nstderr:\n%s", err, exitInterrupted, got, errb.String())
	}
	if !strings.Contains(errb.String(), "demo interrupted during tune") {
		t.Errorf("stderr %q: want it to say the demo was interrupted during tune", errb.String())
	}
	for _, want := range []string{
		"interrupted: the change being tried was rolled back",
		"interrupted during the bench; rolled back",
		"the router is as the demo found it, and its journal is empty and removed",
		"lab " + name + " is gone",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stdout lacks %q:\n%s", want, got)
		}
	}
	demoLeftovers(t, bin, name, dir, tmp)
}
