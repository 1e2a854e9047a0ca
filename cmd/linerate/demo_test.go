package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"linerate/demo"
	"linerate/history"
	"linerate/internal/testenv"
	"linerate/internal/usage"
	"linerate/lab"
	reportpage "linerate/report/page"
	"linerate/results"
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
	_, err := runArgs(t, append([]string{"demo"}, args...)...)
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
		{[]string{"--report", ""}, `--report "": give a file`},
		{[]string{"-o", "-"}, `--report "-": give a file`},
		{[]string{"-o", "/nonexistent-dir/demo.html"}, "--report /nonexistent-dir/demo.html: no directory /nonexistent-dir"},
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
	demoCmd := newDemoCmd()
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

// demoRun is where one demo run keeps its lab and writes: the lab's name
// and state directory, its TMPDIR (tune's journal: empty at the end), its
// run history, and its report page. All are the test's own temporary
// directories; the demo runs in another, so nothing lands in the repo.
type demoRun struct {
	name    string
	dir     lab.Dir
	tmp     string
	history string
	page    string
	cwd     string
}

// demoLab is a fresh lab name and state directory for one demo run; what
// is left of it when the test ends is removed.
func demoLab(t *testing.T) demoRun {
	t.Helper()
	testenv.RequireRoot(t)
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := "de-" + hex.EncodeToString(b[:])
	dir := lab.Dir(t.TempDir())
	// The demo's TMPDIR, where tune's journal goes: empty at the end.
	tmp := t.TempDir()
	d := demoRun{name: name, dir: dir, tmp: tmp, history: t.TempDir(), cwd: t.TempDir()}
	d.page = filepath.Join(t.TempDir(), "demo.html")
	t.Cleanup(func() {
		if _, err := dir.Load(name); err == nil {
			t.Errorf("lab %s was left behind; removing it", name)
			if err := dir.Down(name); err != nil {
				t.Errorf("clean up lab %s: %v", name, err)
			}
		}
	})
	return d
}

// demoCommand is the binary's `demo --name NAME -o PAGE ARGS...` recording
// its lab in d.dir, with TMPDIR d.tmp and its history in d.history.
func demoCommand(bin string, d demoRun, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, append([]string{"demo", "--name", d.name, "-o", d.page}, args...)...)
	cmd.Env = append(os.Environ(), lab.EnvDir+"="+string(d.dir), "TMPDIR="+d.tmp, "LINERATE_HISTORY_DIR="+d.history)
	cmd.Dir = d.cwd
	return cmd
}

// demoLeftovers fails the test if anything of the lab remains: its state
// file, its namespaces, a process running the test's binary bin (serve
// or bench in a node), or anything in the demo's TMPDIR (tune's journal).
func demoLeftovers(t *testing.T, bin string, d demoRun) {
	t.Helper()
	name, dir, tmp := d.name, d.dir, d.tmp
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
	// The directory the demo ran in: the page went to -o.
	if ents, _ := os.ReadDir(d.cwd); len(ents) > 0 {
		t.Errorf("the demo wrote %s in the directory it ran in", ents[0].Name())
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
	d := demoLab(t)
	name := d.name
	cmd := demoCommand(bin, d, "--quick")
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
	case <-time.After(180 * time.Second):
		cmd.Process.Signal(os.Interrupt)
		<-done
		t.Fatalf("demo --quick still running after 180 s\nstdout:\n%s", out.String())
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
		"agents: linerate serve --cpus ", "router: linerate bench tcp --bidir --from lan --to wan",
		"after tuning (", "saved as run ",
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
		row := regexp.MustCompile(`(?m)^CHANGE +FROM → TO +TRIED FOR +WITHOUT +WITH +GAIN +INTERVAL +PAIRS +RESULT +WHY\n` +
			`rps lan/rx-0 +none → [0-9,-]+ +seeds/002 +[0-9.]+ k?pps +[0-9.]+ k?pps +[-+][0-9.]+ % +\S.* to .*\S +[0-9]+ +(kept|rolled back|undecided \(rolled back\)) +\S`)
		if !row.MatchString(got) {
			t.Errorf("no before/after table with the seed's RPS change in:\n%s", got)
		}
	}
	if errb.Len() != 0 {
		t.Errorf("stderr: %s", errb.String())
	}
	page := checkDemoPage(t, d, got)
	// Tune auto's before and after, as the text says them.
	if m := regexp.MustCompile(`(?m)^before → after: (\S+ k?pps → \S+ k?pps)`).FindStringSubmatch(got); m == nil {
		t.Errorf("no before → after line in:\n%s", got)
	} else if !strings.Contains(page, m[1]) {
		t.Errorf("the page lacks tune auto's %q", m[1])
	}
	// Every experiment, the floods before and after, tune auto: in the
	// history, and the floods' received figures on the page side by side.
	runs := demoRuns(t, d.history)
	var kinds []string
	for _, r := range runs {
		kinds = append(kinds, r.Kind)
	}
	if want := "flows,flows,flows,bench,tune-auto,bench"; strings.Join(kinds, ",") != want {
		t.Errorf("the history holds runs of kinds %v, want %s", kinds, want)
	}
	if len(runs) == 6 {
		for i, r := range []*history.Run{runs[3], runs[5]} {
			var res results.Result
			if err := json.Unmarshal(r.Result, &res); err != nil {
				t.Fatalf("run %s: %v", r.ID, err)
			}
			if !slices.ContainsFunc(res.Samples, func(s results.Sample) bool { return s.Side == "dut" && s.Host == "router" }) {
				t.Errorf("run %s has no samples of the router", r.ID)
			}
			if v := res.Summary.ReceivedPPS; v <= 0 || !strings.Contains(page, reportpage.SI(v)+" pps") {
				t.Errorf("the page lacks the received %s pps of run %s", reportpage.SI(v), r.ID)
			}
			if label := []string{"demo, before tuning: ", "demo, after tuning: "}[i]; !strings.HasPrefix(r.Headline, label) || !strings.Contains(page, r.Headline) {
				t.Errorf("run %s: headline %q, want it to start with %q and be on the page", r.ID, r.Headline, label)
			}
		}
	}
	demoLeftovers(t, bin, d)
}

// checkDemoPage checks the last line of the demo's output is the report
// page's path, and the page is a whole HTML document; it returns the page.
func checkDemoPage(t *testing.T, d demoRun, out string) string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if last := lines[len(lines)-1]; last != d.page {
		t.Errorf("last line %q, want the page's path %s", last, d.page)
	}
	b, err := os.ReadFile(d.page)
	if err != nil {
		t.Fatalf("the report page: %v", err)
	}
	page := string(b)
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.HasSuffix(strings.TrimSpace(page), "</html>") {
		t.Errorf("the report page is not a whole HTML document: %.200q", page)
	}
	return page
}

// demoRuns are the runs in the history dir, oldest first.
func demoRuns(t *testing.T, dir string) []*history.Run {
	t.Helper()
	store := history.Open(dir)
	list, err := store.List()
	if err != nil {
		t.Fatal(err)
	}
	var out []*history.Run
	for i := len(list) - 1; i >= 0; i-- {
		r, err := store.Load(list[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// testDemoInterrupted sends SIGINT once the lab is up and the first
// experiment runs: the demo exits 130 and leaves nothing behind.
func testDemoInterrupted(t *testing.T, bin string) {
	d := demoLab(t)
	name := d.name
	cmd := demoCommand(bin, d)
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
	// Stopped before the flood through the router: no page to write.
	if _, err := os.Stat(d.page); err == nil {
		t.Errorf("a page was written with no run for it")
	}
	demoLeftovers(t, bin, d)
}

// testDemoInterruptedTune sends SIGINT while tune auto tries its first
// change on the router: the demo rolls the trial back, removes the lab and
// its journal, prints what it had, and exits 130.
func testDemoInterruptedTune(t *testing.T, bin string) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: the demo has no RPS change to try")
	}
	d := demoLab(t)
	name := d.name
	// Short experiments, one round per baseline and change, long enough to
	// stop in the middle; nothing saved.
	cmd := demoCommand(bin, d, "--duration", "200ms", "--rounds", "1", "--round-duration", "2s", "--no-save")
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
	// The page of what was measured is written all the same: the flood
	// before tuning and tune auto's interrupted report; and with
	// --no-save the history holds nothing.
	page := checkDemoPage(t, d, got)
	if !strings.Contains(page, "interrupted") {
		t.Errorf("the page does not say tune auto was interrupted")
	}
	if ents, _ := os.ReadDir(d.history); len(ents) > 0 {
		t.Errorf("--no-save, but the history holds %s", ents[0].Name())
	}
	demoLeftovers(t, bin, d)
}
