package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/lab"
)

// TestLabServe runs the real binary: `lab up --serve` starts an agent in
// every node; `lab exec` benches lan → wan through the router against
// wan's agent, by name and with the lab's secret; `lab down` leaves no
// namespace, agent or state. Then `lab up --serve` is killed with
// SIGKILL after increasing delays across the whole build, and each time
// `lab list` and `lab down` work and leave nothing behind; the name builds
// a lab again at the end.
func TestLabServe(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildLinerate(t, t.TempDir())
	name, dir := labName(t, bin, "ls-")

	start := time.Now()
	up := run(t, bin, "lab", "up", "router", "--name", name, "--serve", "--state-dir", dir)
	full := time.Since(start)
	if up.code != 0 || !strings.Contains(up.stdout, "agents: linerate serve in 3 of 3 nodes, port 7557") {
		t.Fatalf("lab up --serve: %d\n%s%s", up.code, up.stdout, up.stderr)
	}
	if st, err := os.Stat(filepath.Join(dir, name+".secret")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret: %v %v", err, st)
	}
	if n := len(labPids(t, name)); n != 3 {
		t.Errorf("%d processes run in the lab after lab up --serve, want its 3 agents", n)
	}
	bench := run(t, bin, "lab", "exec", "--state-dir", dir, name, "lan", "--", bin, "bench", "udp", "--to", "wan",
		"-t", "1", "--warmup", "200ms", "-b", "5kpps", "--json")
	if bench.code != 0 || !strings.Contains(bench.stdout, `"received_packets"`) {
		t.Fatalf("bench lan → wan's agent: %d\n%s%s", bench.code, bench.stdout, bench.stderr)
	}
	if down := run(t, bin, "lab", "down", name, "--state-dir", dir); down.code != 0 {
		t.Fatalf("lab down: %d %s", down.code, down.stderr)
	}
	checkLabGone(t, dir, name)
	t.Logf("lab up --serve took %s", full)

	// kill -9 across the build: 8 delays from 0 to the time a whole build
	// took (the delays pick kill moments; nothing is asserted on time).
	const tries = 8
	for i := range tries {
		delay := full * time.Duration(i) / tries
		c := exec.Command(bin, "lab", "up", "router", "--name", name, "--serve", "--state-dir", dir)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		c.Process.Kill()
		err := c.Wait()
		killed := err != nil
		agents := len(labPids(t, name))
		list := run(t, bin, "lab", "list", "--state-dir", dir)
		if list.code != 0 {
			t.Fatalf("kill after %s: lab list: %d %s", delay, list.code, list.stderr)
		}
		down := run(t, bin, "lab", "down", "--all", "--state-dir", dir)
		if down.code != 0 {
			t.Fatalf("kill after %s: lab down --all: %d %s", delay, down.code, down.stderr)
		}
		t.Logf("kill -9 after %s (killed %v, %d agents running): list %q; down %q", delay, killed, agents,
			strings.TrimSpace(list.stdout), strings.TrimSpace(down.stdout))
		checkLabGone(t, dir, name)
	}
	if up := run(t, bin, "lab", "up", "router", "--name", name, "--serve", "--state-dir", dir); up.code != 0 {
		t.Fatalf("the name after the kills: %d %s", up.code, up.stderr)
	}
	if down := run(t, bin, "lab", "down", name, "--state-dir", dir); down.code != 0 {
		t.Fatalf("lab down: %d %s", down.code, down.stderr)
	}
	checkLabGone(t, dir, name)
}

// labName is a fresh lab name with its own state directory; whatever of
// the lab is left when the test ends is taken down, and the test fails if
// anything remains.
func labName(t testing.TB, bin, prefix string) (name, dir string) {
	t.Helper()
	dir = t.TempDir()
	var b [3]byte
	_, _ = rand.Read(b[:])
	name = prefix + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		exec.Command(bin, "lab", "down", name, "--state-dir", dir).Run()
		for _, pid := range labPids(t, name) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		checkLabGone(t, dir, name)
	})
	return name, dir
}

// agentLab is a lab made for the test with an agent in every node (`lab up
// TOPOLOGY ARGS... --serve`), taken down when the test ends; exec runs the
// linerate built for the test (args) in one of its nodes.
type agentLab struct {
	t              testing.TB
	bin, name, dir string
}

func upAgentLab(t testing.TB, prefix, topology string, args ...string) *agentLab {
	t.Helper()
	testenv.RequireRoot(t)
	l := &agentLab{t: t, bin: buildLinerate(t, t.TempDir())}
	l.name, l.dir = labName(t, l.bin, prefix)
	up := run(t, l.bin, append(append([]string{"lab", "up", topology, "--name", l.name}, args...), "--serve", "--state-dir", l.dir)...)
	if up.code != 0 {
		t.Fatalf("lab up: %d\n%s%s", up.code, up.stdout, up.stderr)
	}
	return l
}

// exec runs a command in a node: "linerate" as its first word is the
// binary built for the test.
func (l *agentLab) exec(node string, args ...string) result {
	l.t.Helper()
	if len(args) > 0 && args[0] == "linerate" {
		args = append([]string{l.bin}, args[1:]...)
	}
	return run(l.t, l.bin, append([]string{"lab", "exec", "--state-dir", l.dir, l.name, node, "--"}, args...)...)
}

// checkLabGone fails the test if anything of lab name is left: a
// namespace, a process started in it, a file in the state directory.
func checkLabGone(t testing.TB, dir, name string) {
	t.Helper()
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), lab.NetnsPrefix+name+"-") {
			t.Errorf("namespace %s is left", e.Name())
		}
	}
	if pids := labPids(t, name); len(pids) > 0 {
		t.Errorf("processes of lab %s still run: %v", name, pids)
	}
	ents, _ = os.ReadDir(dir)
	for _, e := range ents {
		t.Errorf("state directory holds %s", e.Name())
	}
}

// labPids lists the running processes started in lab name's nodes.
func labPids(t testing.TB, name string) []int { return testenv.PidsWithEnv(t, lab.EnvLab+"="+name) }
