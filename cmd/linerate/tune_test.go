package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"linerate/diagnose"
	"linerate/internal/testenv"
	"linerate/tune"
)

// TestTuneCommand runs the real binary, built once for its subtests.
func TestTuneCommand(t *testing.T) {
	bin := buildLinerate(t, t.TempDir())
	t.Run("bad input", func(t *testing.T) { tuneBadInput(t, bin) })
	t.Run("help", func(t *testing.T) { tuneHelp(t, bin) })
	t.Run("persist", func(t *testing.T) { tunePersist(t, bin) })
	t.Run("netns", func(t *testing.T) { tuneNetns(t, bin) })
	t.Run("reapply a re-created interface", func(t *testing.T) { tuneReapply(t, bin) })
	t.Run("killed at any moment", func(t *testing.T) { tuneKilled(t, bin) })
	t.Run("journal belongs where it was made", func(t *testing.T) { tuneWhere(t, bin) })
	t.Run("records bound to their namespace", func(t *testing.T) { tuneBoundToNamespace(t, bin) })
	t.Run("irqbalance-banned without systemd", func(t *testing.T) { tuneBannedWithoutSystemd(t, bin) })
}

// tuneBadInput: every mistake is exit 2 with one line naming it.
func tuneBadInput(t *testing.T, bin string) {
	state := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "plan"}, "nothing to plan"},
		{[]string{"tune", "plan", "--set", "rps"}, `--set "rps": want KIND:TARGET=VALUE`},
		{[]string{"tune", "plan", "--set", "warp:x=1"}, `unknown kind "warp"`},
		{[]string{"tune", "plan", "--set", "rps:eth1/rx-0=1", "--netns", "no-such-ns-h9"}, "no network namespace no-such-ns-h9"},
		{[]string{"tune", "plan", "--findings", "/nonexistent/findings.json"}, "--findings /nonexistent/findings.json: no such file"},
		{[]string{"tune", "plan", "--plan", "go.mod"}, "go.mod: plan file"},
		{[]string{"tune", "apply", "--state-dir", state, "--set", "rps-flow:lo/rx-0=1000"}, "ask for 1024"},
		{[]string{"tune", "apply", "--state-dir", state, "--set", "sysctl:net..x=1"}, "not a sysctl name"},
		{[]string{"tune", "rollback", "extra"}, "unknown command"},
		{[]string{"tune", "status", "--bogus"}, "unknown flag: --bogus"},
	} {
		r := run(t, bin, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	// Nothing was journalled by the refused applies.
	if r := run(t, bin, "tune", "status", "--state-dir", state); r.code != 0 || !strings.Contains(r.stdout, "journal is empty") {
		t.Errorf("status after refused applies: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

func tuneHelp(t *testing.T, bin string) {
	// Every kind of the one registry is in tune's help, and boot items
	// are described as what --boot does with them.
	r := run(t, bin, "tune", "--help")
	words := strings.FieldsFunc(r.stdout, func(c rune) bool { return c == ' ' || c == ',' || c == '.' || c == '\n' })
	for _, k := range diagnose.FixKinds() {
		if !slices.Contains(words, k.String()) {
			t.Errorf("tune --help does not list the kind %s:\n%s", k, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "never applied") || !strings.Contains(r.stdout, "with --boot, made to the file") {
		t.Errorf("tune --help says boot items are never applied, or not what --boot does:\n%s", r.stdout)
	}
	for _, sub := range []string{"plan", "apply", "rollback", "status", "persist", "unpersist"} {
		r := run(t, bin, "tune", sub, "--help")
		if r.code != 0 || !strings.Contains(r.stdout, "Examples:\n  linerate tune "+sub) {
			t.Errorf("tune %s --help: exit %d, no example:\n%s", sub, r.code, r.stdout)
		}
	}
}

// tunePersist persists a journal into a temporary root and removes it
// again.
func tunePersist(t *testing.T, bin string) {
	state, root := t.TempDir(), t.TempDir()
	rec := `{"schema":1,"id":"20260101T000000.000000000-1","created":"2026-01-01T00:00:00Z","state":"applied",
 "items":[{"kind":"rps","target":"eth1/rx-0","value":"3"},{"kind":"sysctl","target":"net.core.netdev_max_backlog","value":"4096"},
          {"kind":"boot","target":"cmdline.txt","value":"pci=pcie_bus_perf"}],"entries":[]}`
	if err := os.MkdirAll(filepath.Join(state, "journal"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "journal", "20260101T000000.000000000-1.json"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, bin, "tune", "persist", "--state-dir", state, "--root-dir", root, "--binary", "/usr/bin/linerate")
	if r.code != 0 {
		t.Fatalf("persist: %d %s", r.code, r.stderr)
	}
	for _, want := range []string{"wrote /etc/sysctl.d/90-linerate.conf", "wrote /etc/systemd/system/linerate-tune@.service",
		"add pci=pcie_bus_perf before rootwait in /boot/cmdline.txt"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("persist output lacks %q:\n%s", want, r.stdout)
		}
	}
	unit, err := os.ReadFile(filepath.Join(root, "etc/systemd/system/linerate-tune@.service"))
	if err != nil || !strings.Contains(string(unit), "ExecStart=/usr/bin/linerate tune reapply --plan /etc/linerate/tune-plan.json --state-dir "+state+" %I") {
		t.Errorf("unit: %v\n%s", err, unit)
	}
	if r := run(t, bin, "tune", "unpersist", "--root-dir", root); r.code != 0 || strings.Count(r.stdout, "removed ") != 6 { // plan, sysctl.d, the two link-up hooks, the device link, the unit
		t.Errorf("unpersist: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// tuneNetns applies, checks, kills and rolls back through the real
// binary, inside a namespace the test makes.
func tuneNetns(t *testing.T, bin string) {
	ns := vethNetns(t)
	look := nsLook(t, ns, "cat /sys/class/net/a/queues/rx-*/rps_cpus /sys/class/net/a/queues/tx-0/xps_cpus; ethtool -l b; ethtool -k a; ip -o link show dev a; sysctl -n net.ipv4.ip_forward")
	before := look()
	state := t.TempDir()
	args := []string{"tune", "apply", "--netns", ns.Name, "--state-dir", state,
		"--set", "rps:a/rx-*=0", "--set", "xps:a/tx-0=0", "--set", "channels:b=rx=2,tx=2",
		"--set", "feature:a/generic-receive-offload=on", "--set", "mtu:a=4000", "--set", "sysctl:net.ipv4.ip_forward=1"}

	r := run(t, bin, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "RESETS LINK") || !strings.Contains(r.stdout, "applied 9 changes") {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if look() == before {
		t.Fatal("apply changed nothing")
	}
	r = run(t, bin, "tune", "status", "--state-dir", state, "--json")
	var sts []tune.RecordStatus
	if err := json.Unmarshal([]byte(r.stdout), &sts); err != nil || len(sts) != 1 || len(sts[0].Entries) != 9 {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	for _, e := range sts[0].Entries {
		if !e.Holds {
			t.Errorf("status: %s %s does not hold (%q)", e.Kind, e.Target, e.Live)
		}
	}
	if r := run(t, bin, "tune", "rollback", "--state-dir", state); r.code != 0 || !strings.Contains(r.stdout, "restored 9 changes") {
		t.Fatalf("rollback: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := look(); got != before {
		t.Errorf("after rollback:\n%s\nwant:\n%s", got, before)
	}

	// kill -9 after the 8th change (rps makes four: the MTU), then roll back.
	t.Setenv(tuneKillAfterEnv, "8")
	r = run(t, bin, args...)
	if r.code != -1 {
		t.Fatalf("apply with the kill hook: exit %d, want killed\n%s", r.code, r.stderr)
	}
	os.Unsetenv(tuneKillAfterEnv)
	if !strings.Contains(look(), "mtu 4000") {
		t.Error("the killed apply had not changed the MTU yet")
	}
	if r := run(t, bin, "tune", "rollback", "--state-dir", state); r.code != 0 || !strings.Contains(r.stdout, "restored 8 changes") {
		t.Fatalf("rollback after kill: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := look(); got != before {
		t.Errorf("after kill and rollback:\n%s\nwant:\n%s", got, before)
	}
}

// tuneReapply: a persisted plan's NIC and queue settings come back when
// the interface is deleted and made again under the same name, by running
// what the hooks run (linerate tune reapply); a second run changes nothing.
func tuneReapply(t *testing.T, bin string) {
	ns := vethNetns(t)
	look := nsLook(t, ns, "cat /sys/class/net/b/queues/rx-*/rps_cpus /sys/class/net/b/queues/tx-*/xps_cpus; ethtool -l b | tail -5")
	fresh := look()
	dir := t.TempDir()
	state, plan := filepath.Join(dir, "state"), filepath.Join(dir, "tune-plan.json")
	// The channels decide which queues exist: reapply sets them first.
	if err := os.WriteFile(plan, []byte(`{"schema":1,"items":[
  {"kind":"rps","target":"b/rx-*","value":"0"},
  {"kind":"xps","target":"b/tx-*","value":"0"},
  {"kind":"channels","target":"b","value":"rx=2,tx=2"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	reapply := []string{"tune", "reapply", "--netns", ns.Name, "--plan", plan, "--state-dir", state}
	r := run(t, bin, append(reapply, "b")...)
	if r.code != 0 || !strings.Contains(r.stdout, "reapply b: 1 changed") || !strings.Contains(r.stdout, "reapply b: 4 changed") {
		t.Fatalf("reapply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	tuned := look()
	if tuned == fresh || strings.Count(tuned, "\n1\n")+strings.Count(tuned, "00000001") == 0 {
		t.Fatalf("reapply changed nothing:\n%s", tuned)
	}
	if r := run(t, bin, append(reapply, "b")...); r.code != 0 || strings.Count(r.stdout, "everything holds") != 2 {
		t.Errorf("second reapply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The interface goes away and comes back with its driver's defaults.
	if out, err := exec.Command("ip", "-n", ns.Name, "link", "del", "dev", "a").CombinedOutput(); err != nil {
		t.Fatalf("delete veth: %v\n%s", err, out)
	}
	testenv.Veth(t, ns, "a", ns, "b", 4)
	if got := look(); got != fresh {
		t.Fatalf("a re-created b is not fresh:\n%s\nwant\n%s", got, fresh)
	}
	r = run(t, bin, reapply...) // as at boot: the box and every interface present
	if r.code != 0 {
		t.Fatalf("reapply after re-creation: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := look(); got != tuned {
		t.Errorf("after re-creation and reapply:\n%s\nwant\n%s\n%s", got, tuned, r.stdout)
	}
	log, err := os.ReadFile(filepath.Join(state, "reapply.log"))
	if err != nil || strings.Count(string(log), "reapply b: ") != 6 {
		t.Errorf("reapply.log: %v\n%s", err, log)
	}
	t.Logf("reapply.log:\n%s", log)
}

// vethNetns is a namespace the test makes, with a veth pair a/b of four
// queues; ethtool is the independent check of what tune changes.
func vethNetns(t *testing.T) *testenv.NetNS {
	testenv.RequireRoot(t)
	if _, err := exec.LookPath("ethtool"); err != nil {
		t.Skip("ethtool is not installed: it is the independent check")
	}
	ns := testenv.NewNetNS(t)
	testenv.Veth(t, ns, "a", ns, "b", 4)
	return ns
}

// nsLook returns a function printing what script shows inside ns: the
// independent view of what tune changed.
func nsLook(t *testing.T, ns *testenv.NetNS, script string) func() string {
	return func() string {
		out, err := exec.Command("ip", "netns", "exec", ns.Name, "sh", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return string(out)
	}
}
