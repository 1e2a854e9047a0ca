package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/internal/usage"
	"linerate/lab"
)

// The tests here build real router labs (as root, skipped with -short) in a
// state directory of their own, under names of their own, and check that
// Run removes them whatever happens. The whole demo through the linerate
// binary, and Ctrl-C, are tested in cmd/linerate.

// linerateBinary is cmd/linerate, built once for the tests that need a
// real serve in the lab.
func linerateBinary(t *testing.T) string { return testenv.Linerate(t) }

func TestMain(m *testing.M) {
	// The demo's runs go to a history of the test's own, not the machine's.
	hist, err := os.MkdirTemp("", "linerate-history-")
	if err == nil {
		os.Setenv("LINERATE_HISTORY_DIR", hist)
	}
	code := m.Run()
	if err == nil {
		os.RemoveAll(hist)
	}
	testenv.RemoveLinerate()
	os.Exit(code)
}

// testLab is a fresh lab name and state directory; whatever is left of the
// lab when the test ends is removed.
func testLab(t *testing.T) (string, lab.Dir) {
	t.Helper()
	testenv.RequireRoot(t)
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := "dt-" + hex.EncodeToString(b[:])
	dir := lab.Dir(t.TempDir())
	t.Cleanup(func() {
		if _, err := dir.Load(name); err == nil {
			if err := dir.Down(name); err != nil {
				t.Errorf("clean up lab %s: %v", name, err)
			}
		}
	})
	return name, dir
}

// nothingLeft fails the test if the lab's state file or any of its
// namespaces remains.
func nothingLeft(t *testing.T, name string, dir lab.Dir) {
	t.Helper()
	labs, err := dir.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range labs {
		t.Errorf("lab %s (%s) is left in %s", l.Spec.Name, l.Status(), dir)
	}
	for _, node := range []string{clientNode, routerNode, serverNode} {
		ns := lab.NetnsName(name, node)
		if ok, err := lab.NetnsExists(ns); ok || err != nil {
			t.Errorf("network namespace %s is left (%v)", ns, err)
		}
	}
	// The agents, and anything else started in the lab's nodes.
	if pids := testenv.PidsWithEnv(t, lab.EnvLab+"="+name); len(pids) > 0 {
		t.Errorf("processes of lab %s still run: %v", name, pids)
	}
	// The agents' secret and log.
	ents, err := os.ReadDir(string(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("%s is left in the state directory %s", e.Name(), dir)
	}
}

func TestRunRefusesExistingLab(t *testing.T) {
	name, dir := testLab(t)
	if _, err := dir.Up(context.Background(), lab.Spec{Name: name, Topology: lab.Pair}); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	_, err := Run(context.Background(), Config{Self: "/bin/false", Name: name, Dir: dir, Progress: &progress})
	if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "a lab named "+name+" exists already") {
		t.Fatalf("Run over an existing lab: %v, want a usage error saying it exists", err)
	}
	// The existing lab is not the demo's: it is left as it was.
	l, err := dir.Load(name)
	if err != nil {
		t.Fatalf("the existing lab is gone: %v", err)
	}
	for _, n := range l.Nodes {
		if ok, err := lab.NetnsExists(n.Netns); !ok || err != nil {
			t.Errorf("namespace %s of the existing lab is gone (%v)", n.Netns, err)
		}
	}
	if progress.Len() != 0 {
		t.Errorf("progress before refusing: %q", progress.String())
	}
}

func TestRunAgentsFail(t *testing.T) {
	// The agents are /bin/false here: the first exits at once, the lab is
	// not built, and the demo must say so and leave nothing behind.
	name, dir := testLab(t)
	var progress bytes.Buffer
	rep, err := Run(context.Background(), Config{Self: "/bin/false", Name: name, Dir: dir, Progress: &progress})
	if err == nil || !strings.Contains(err.Error(), "ended before it listened") {
		t.Fatalf("Run with agents that fail: %v\n%s", err, progress.String())
	}
	if rep == nil || len(rep.Outcomes) != 0 || rep.Kept || rep.HasPage() {
		t.Errorf("report %+v: want one with no outcomes", rep)
	}
	if !strings.Contains(progress.String(), "building lab "+name) {
		t.Errorf("progress lacks the lab being built:\n%s", progress.String())
	}
	nothingLeft(t, name, dir)
}

func TestRunCancelled(t *testing.T) {
	// A step that cancels the run, as Ctrl-C would: Run stops serve,
	// removes the lab and says it was interrupted.
	bin := linerateBinary(t)
	name, dir := testLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var reached []string
	steps := []Step{
		{Name: "look", Title: "look around", Run: func(ctx context.Context, s *Session) error {
			reached = append(reached, "look")
			// Inside the lab while the step runs: the server node is up,
			// with an agent in every node.
			if ok, err := lab.NetnsExists(lab.NetnsName(name, serverNode)); !ok || err != nil {
				t.Errorf("namespace of %s missing during a step (%v)", serverNode, err)
			}
			if n := s.Lab.AgentsRunning(); n != 3 {
				t.Errorf("%d agents run during a step, want 3", n)
			}
			return nil
		}},
		{Name: "wait", Title: "wait for Ctrl-C", Run: func(ctx context.Context, s *Session) error {
			reached = append(reached, "wait")
			cancel()
			<-ctx.Done()
			return ctx.Err()
		}},
		{Name: "never", Title: "never reached", Run: func(ctx context.Context, s *Session) error {
			reached = append(reached, "never")
			return nil
		}},
	}
	var progress bytes.Buffer
	start := time.Now()
	_, err := Run(ctx, Config{Self: bin, Name: name, Dir: dir, Progress: &progress, Steps: steps})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "demo interrupted during wait") {
		t.Errorf("cancelled Run: %v, want an interruption during wait", err)
	}
	if strings.Join(reached, ",") != "look,wait" {
		t.Errorf("steps reached: %v", reached)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("teardown took %s", d)
	}
	if !strings.Contains(progress.String(), "agents: linerate serve --cpus ") {
		t.Errorf("no agents were started:\n%s", progress.String())
	}
	nothingLeft(t, name, dir)
}

func TestRunKeep(t *testing.T) {
	bin := linerateBinary(t)
	name, dir := testLab(t)
	var progress bytes.Buffer
	noop := []Step{{Name: "noop", Title: "nothing", Run: func(context.Context, *Session) error { return nil }}}
	rep, err := Run(context.Background(), Config{Self: bin, Name: name, Dir: dir, Keep: true, Progress: &progress, Steps: noop})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Kept {
		t.Error("report does not say the lab was kept")
	}
	l, err := dir.Load(name)
	if err != nil || l.Status() != "up" {
		t.Fatalf("kept lab: %v", err)
	}
	if !strings.Contains(progress.String(), "linerate lab down "+name) {
		t.Errorf("progress does not say how to remove the lab:\n%s", progress.String())
	}
	if err := dir.Down(name); err != nil {
		t.Fatal(err)
	}
	nothingLeft(t, name, dir)
}
