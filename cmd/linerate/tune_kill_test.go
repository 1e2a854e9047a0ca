package main

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"linerate/internal/testenv"
)

// tuneKilled kills `tune apply` with SIGKILL at spread-out moments of its
// run, from before its first change to after its last, and after each kill
// runs `tune rollback`: the namespace must be back as it was every time,
// and the state directory must hold no journal entry or temporary file.
func tuneKilled(t *testing.T, bin string) {
	testenv.RequireRoot(t)
	ns := testenv.NewNetNS(t)
	testenv.Veth(t, ns, "a", ns, "b", 4)
	look := nsLook(t, ns, "cat /sys/class/net/a/queues/rx-*/rps_cpus /sys/class/net/a/queues/tx-0/xps_cpus; ip -o link show dev a; sysctl -n net.ipv4.ip_forward net.ipv4.conf.a.rp_filter")
	before := look()
	state := t.TempDir()
	args := []string{"tune", "apply", "--netns", ns.Name, "--state-dir", state,
		"--set", "rps:a/rx-*=0", "--set", "xps:a/tx-0=0", "--set", "mtu:a=4000",
		"--set", "sysctl:net.ipv4.ip_forward=1", "--set", "sysctl:net.ipv4.conf.a.rp_filter=2"}

	// How long a whole apply takes here, to spread the kills over it.
	start := time.Now()
	if r := run(t, bin, args...); r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	whole := time.Since(start)
	if r := run(t, bin, "tune", "rollback", "--state-dir", state); r.code != 0 {
		t.Fatalf("rollback: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	const tries = 12
	rng := rand.New(rand.NewPCG(11, uint64(time.Now().UnixNano())))
	changed := 0
	for i := range tries {
		// From nothing done to everything done: i/tries of the run, and a
		// little either side.
		at := time.Duration(float64(whole) * (float64(i) + rng.Float64()) / tries)
		cmd := exec.Command(bin, args...)
		cmd.Dir = repoRoot
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(at)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if look() != before {
			changed++
		}
		r := run(t, bin, "tune", "rollback", "--state-dir", state)
		if r.code != 0 {
			t.Fatalf("try %d (kill at %s of %s): rollback exit %d\n%s%s", i, at, whole, r.code, r.stdout, r.stderr)
		}
		if got := look(); got != before {
			t.Fatalf("try %d (kill at %s of %s): after rollback:\n%s\nwant:\n%s\nrollback said: %s", i, at, whole, got, before, r.stdout)
		}
		if r := run(t, bin, "tune", "status", "--state-dir", state); !strings.Contains(r.stdout+r.stderr, "nothing") && !strings.Contains(r.stdout+r.stderr, "no change") {
			t.Fatalf("try %d: status after rollback still shows changes:\n%s%s", i, r.stdout, r.stderr)
		}
		left, _ := filepath.Glob(filepath.Join(state, "*.tmp*"))
		if len(left) > 0 {
			t.Fatalf("try %d: temporary files left in the state directory: %v", i, left)
		}
	}
	t.Logf("%d tries, kill within %s; %d killed after a change was made", tries, whole, changed)
	if _, err := os.Stat(state); err != nil {
		t.Fatal(err)
	}
}
