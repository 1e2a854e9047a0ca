package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"linerate/internal/testenv"
)

// TestLabServeCPUs: `lab up --serve --cpus 0` starts every agent with
// serve --cpus 0 and says so; --cpus without --serve is bad input.
func TestLabServeCPUs(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildLinerate(t, t.TempDir())
	name, dir := labName(t, bin, "lc-")
	if r := run(t, bin, "lab", "up", "pair", "--name", name, "--cpus", "0", "--state-dir", dir); r.code != exitBadInput ||
		!strings.Contains(r.stderr, "--cpus pins the agents: it goes with --serve") {
		t.Errorf("--cpus without --serve: exit %d, %q", r.code, r.stderr)
	}
	up := run(t, bin, "lab", "up", "pair", "--name", name, "--serve", "--cpus", "0", "--state-dir", dir)
	if up.code != 0 || !strings.Contains(up.stdout, "agents: linerate serve in 2 of 2 nodes, port 7557; pinned to CPUs 0;") {
		t.Fatalf("lab up --serve --cpus 0: %d\n%s%s", up.code, up.stdout, up.stderr)
	}
	pids := labPids(t, name)
	if len(pids) != 2 {
		t.Fatalf("%d processes in the lab, want its 2 agents", len(pids))
	}
	for _, pid := range pids {
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil {
			t.Fatal(err)
		}
		if args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"); !strings.Contains(strings.Join(args, " "), "serve --token-file") ||
			args[len(args)-2] != "--cpus" || args[len(args)-1] != "0" {
			t.Errorf("agent %d runs %q, want serve ... --cpus 0", pid, args)
		}
	}
	if down := run(t, bin, "lab", "down", name, "--state-dir", dir); down.code != 0 {
		t.Fatalf("lab down: %d %s", down.code, down.stderr)
	}
	checkLabGone(t, dir, name)
}
