package main

import (
	"os/exec"
	"strings"
	"testing"

	"linerate/autotune"
)

// TestTuneAutoFrom runs the real binary on the router of a lab with an
// agent in every node: `tune auto --from lan --to wan` floods lan → wan
// through the router, samples the router's own counters in each round,
// diagnoses it (--dry-run) and tries a change on it, kept or rolled back
// and restored either way.
func TestTuneAutoFrom(t *testing.T) {
	l := upAgentLab(t, "tf-", "router")
	bin, dir, name := l.bin, l.dir, l.name
	state := t.TempDir()
	onRouter := func(args ...string) *exec.Cmd {
		return exec.Command(bin, append([]string{"lab", "exec", "--state-dir", dir, name, "router", "--", bin,
			"tune", "auto", "--from", "lan", "--to", "wan", "--warmup", "300ms", "--duration", "1s", "--rounds", "1", "--max-rounds", "3",
			"--state-dir", state, "--json", "--no-save"}, args...)...)
	}
	rps := func() string {
		t.Helper()
		r := l.exec("router", "cat", "/sys/class/net/lan/queues/rx-0/rps_cpus")
		return strings.Trim(strings.TrimSpace(r.stdout), "0,")
	}
	t.Cleanup(func() {
		l.exec("router", "linerate", "tune", "rollback", "--state-dir", state)
	})

	rep, progress := autoJSON(t, onRouter("--dry-run"))
	t.Logf("dry run: %s, baseline %.0f pps, %d findings, %d candidates", rep.Rig, rep.Before.ReceivedPPS, len(rep.Findings), len(rep.Candidates))
	if len(rep.Baseline) != 1 || rep.Before.ReceivedPPS < 1000 || !rep.Before.CPUSampled {
		t.Fatalf("baseline through the router: %+v\n%s", rep.Baseline, progress)
	}
	if !rep.Diagnosed || !strings.Contains(rep.Rig, "lan") {
		t.Errorf("diagnosed %v, rig %q", rep.Diagnosed, rep.Rig)
	}

	rep, progress = autoJSON(t, onRouter("--try", "rps:lan/rx-0=1", "--no-fixes"))
	if len(rep.Trials) != 1 {
		t.Fatalf("trials %+v\n%s", rep.Trials, progress)
	}
	tr := rep.Trials[0]
	t.Logf("rps lan/rx-0=1 through the router: %s (%s)", tr.Outcome, tr.Why)
	switch tr.Outcome {
	case autotune.Kept:
		if rps() == "" {
			t.Error("kept, but the router's lan rx-0 has no RPS")
		}
		if r := l.exec("router", "linerate", "tune", "rollback", "--state-dir", state); r.code != 0 {
			t.Fatalf("rollback: %s", r.stderr)
		}
	case autotune.RolledBack, autotune.Undecided:
		if !tr.Restored {
			t.Errorf("rolled back, not restored: %+v", tr)
		}
	default:
		t.Errorf("outcome %q: %s", tr.Outcome, tr.Why)
	}
	if got := rps(); got != "" {
		t.Errorf("rps_cpus %q after the run, want none", got)
	}
}
