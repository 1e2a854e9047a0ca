package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"linerate/internal/testenv"
	"linerate/tune"
)

// tuneWhere: a journal record belongs to the network namespace it was
// made in. An apply run under `ip netns exec A` (no --netns: "the host"
// as that process sees it) is refused a rollback from namespace B, and
// status there cannot check it (exit 1); from A both work, and status
// exits 1 once a value drifted. A record made with --netns NAME is dropped,
// not restored, when NAME was removed and made anew. Hints name the
// --state-dir when it is not the default.
func tuneWhere(t *testing.T, bin string) {
	testenv.RequireRoot(t)
	a, b := testenv.NewNetNS(t), testenv.NewNetNS(t)
	state := t.TempDir()
	in := func(ns string, args ...string) result {
		return run(t, "ip", append([]string{"netns", "exec", ns, bin}, args...)...)
	}
	forward := func(ns string) string {
		out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-n", "net.ipv4.ip_forward").CombinedOutput()
		if err != nil {
			t.Fatalf("%v %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if forward(a.Name) != "0" {
		t.Fatalf("ip_forward in a fresh namespace is %s", forward(a.Name))
	}

	r := in(a.Name, "tune", "apply", "--state-dir", state, "--set", "sysctl:net.ipv4.ip_forward=1")
	if r.code != 0 || forward(a.Name) != "1" {
		t.Fatalf("apply in %s: %d\n%s%s", a.Name, r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "undo with: linerate tune rollback --state-dir "+state) {
		t.Errorf("the hint does not name --state-dir %s:\n%s", state, r.stdout)
	}
	if r := in(a.Name, "tune", "status", "--state-dir", state); r.code != 0 {
		t.Errorf("status where the record was made: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = in(b.Name, "tune", "rollback", "--state-dir", state)
	t.Logf("rollback from elsewhere: %d %s", r.code, strings.TrimSpace(r.stderr))
	if r.code != 1 || !strings.Contains(r.stderr, "made in another network namespace") || !strings.Contains(r.stderr, "run it from there") {
		t.Errorf("rollback from another namespace: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if forward(a.Name) != "1" || forward(b.Name) != "0" {
		t.Errorf("after the refused rollback: ip_forward %s in a, %s in b; want 1 and 0", forward(a.Name), forward(b.Name))
	}
	if r := in(b.Name, "tune", "status", "--state-dir", state); r.code != 1 || !strings.Contains(r.stdout, "made in another network namespace") {
		t.Errorf("status from another namespace: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Drift: someone sets it back by hand.
	if out, err := exec.Command("ip", "netns", "exec", a.Name, "sysctl", "-qw", "net.ipv4.ip_forward=0").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	r = in(a.Name, "tune", "status", "--state-dir", state)
	if r.code != 1 || !strings.Contains(r.stdout, "DRIFTED") || !strings.Contains(r.stderr, "1 applied change no longer holds") {
		t.Errorf("status after drift: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := in(a.Name, "tune", "rollback", "--state-dir", state); r.code != 0 {
		t.Errorf("rollback where the record was made: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(state, "journal", "*.json")); len(left) != 0 {
		t.Errorf("journal after rollback: %v", left)
	}

	// A named namespace removed and made anew under the same name.
	var rb [3]byte
	_, _ = rand.Read(rb[:])
	name := "lrtw-" + hex.EncodeToString(rb[:])
	add := func() {
		if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add: %v %s", err, out)
		}
	}
	add()
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	if r := run(t, bin, "tune", "apply", "--netns", name, "--state-dir", state, "--set", "sysctl:net.ipv4.ip_forward=1"); r.code != 0 {
		t.Fatalf("apply --netns %s: %d\n%s%s", name, r.code, r.stdout, r.stderr)
	}
	if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns del: %v %s", err, out)
	}
	add()
	r = run(t, bin, "tune", "rollback", "--state-dir", state)
	if r.code != 0 || !strings.Contains(r.stdout, "made anew") || forward(name) != "0" {
		t.Errorf("rollback into a namespace made anew: %d, ip_forward %s\n%s%s", r.code, forward(name), r.stdout, r.stderr)
	}
	if ents, _ := os.ReadDir(filepath.Join(state, "journal")); len(ents) > 1 {
		t.Errorf("journal holds %d files after the drop, want only its lock", len(ents))
	}
}

// TestTuneFindingsFromElsewhere: findings diagnosed from a capture of the
// seeds' RouterPi are refused by tune plan here (exit 2 naming the host),
// taken with --force; findings made live on this machine are taken.
func TestTuneFindingsFromElsewhere(t *testing.T) {
	bin := buildLinerate(t, t.TempDir())
	dir := t.TempDir()
	d := run(t, bin, "diagnose", "--root", "testdata/captures/routerpi", "--json")
	if d.code != 0 || !strings.Contains(d.stdout, `"host": "routerpi"`) {
		t.Fatalf("diagnose the routerpi capture: %d\n%s%s", d.code, d.stdout, d.stderr)
	}
	there := filepath.Join(dir, "routerpi.json")
	if err := os.WriteFile(there, []byte(d.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, bin, "tune", "plan", "--findings", there)
	if r.code != 2 || !strings.Contains(r.stderr, "made from host routerpi (capture ") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("plan of another machine's findings: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, bin, "tune", "plan", "--findings", there, "--force"); r.code != 0 {
		t.Errorf("plan --force: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The same findings without their origin (a bare array) are taken.
	var doc struct {
		Findings json.RawMessage `json:"findings"`
	}
	if err := json.Unmarshal([]byte(d.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(dir, "bare.json")
	if err := os.WriteFile(bare, doc.Findings, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, bin, "tune", "plan", "--findings", bare); r.code != 0 {
		t.Errorf("plan of a bare array: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Made here, from the live box: taken.
	d = run(t, bin, "diagnose", "--live", "1s", "--json")
	if d.code != 0 {
		t.Fatalf("diagnose --live: %d\n%s", d.code, d.stderr)
	}
	here := filepath.Join(dir, "here.json")
	if err := os.WriteFile(here, []byte(d.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, bin, "tune", "plan", "--findings", here); r.code != 0 {
		t.Errorf("plan of this machine's findings: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// tuneBoundToNamespace: a record made under `ip netns exec` (no --netns,
// so "the host" as that process sees it) carries the namespace's identity;
// tune persist on the host leaves it out whatever its empty name says,
// for every target, and persist from inside the namespace is refused
// before anything is written. Host-wide items (a vm.* sysctl, an IRQ,
// irqbalance's defaults file, a boot file) are refused in plan and apply
// from inside the namespace, and the defaults file (a tmpfs of a private
// mount namespace here, never the machine's) is left as it was.
func tuneBoundToNamespace(t *testing.T, bin string) {
	ns := vethNetns(t)
	state := t.TempDir()
	in := func(args ...string) result {
		return run(t, "ip", append([]string{"netns", "exec", ns.Name, bin}, args...)...)
	}
	if r := in("tune", "apply", "--state-dir", state, "--set", "txqueuelen:b=1500"); r.code != 0 {
		t.Fatalf("apply under ip netns exec: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	recs, err := tune.NewStore(state).List()
	if err != nil || len(recs) != 1 {
		t.Fatalf("journal: %d records, %v", len(recs), err)
	}
	id := fmt.Sprintf("net:[%d]", ns.Inode(t))
	if recs[0].Netns != "" || recs[0].NetnsID != id {
		t.Errorf("record netns %q, id %q; want no name and %s", recs[0].Netns, recs[0].NetnsID, id)
	}

	for _, target := range tune.Targets() {
		root := t.TempDir()
		r := run(t, bin, "tune", "persist", "--state-dir", state, "--root-dir", root, "--binary", "/usr/bin/linerate", "--target", target)
		if r.code != 0 || !strings.Contains(r.stdout, "not persisted: "+recs[0].ID+": made in network namespace "+id) {
			t.Errorf("persist --target %s on the host: %d\n%s%s", target, r.code, r.stdout, r.stderr)
		}
		if files := filesMentioning(t, root, "txqueuelen"); len(files) > 0 {
			t.Errorf("persist --target %s on the host wrote the namespace's item to %v", target, files)
		}
	}
	root := t.TempDir()
	r := in("tune", "persist", "--state-dir", state, "--root-dir", root, "--binary", "/usr/bin/linerate", "--target", "openwrt")
	if r.code != 2 || !strings.Contains(r.stderr, "not changed from inside network namespace "+id) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("persist from inside the namespace: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("the refused persist wrote %d entries under its root", len(ents))
	}
	if r := run(t, bin, "tune", "status", "--state-dir", state); r.code != 1 || !strings.Contains(r.stdout, "made in another network namespace") {
		t.Errorf("status on the host: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := in("tune", "rollback", "--state-dir", state); r.code != 0 || !strings.Contains(r.stdout, "restored 1 change") {
		t.Errorf("rollback where it was made: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// plan asks for other values than the host's; apply for the values the
	// host holds, so that a linerate which let them through (as before
	// this test) changes nothing on the machine running the test.
	irq := anyIRQ(t)
	swappiness, affinity := readTrimmed(t, "/proc/sys/vm/swappiness"), readTrimmed(t, "/proc/irq/"+irq+"/smp_affinity_list")
	for _, c := range []struct {
		plan, apply []string
		want        string
	}{
		{[]string{"--set", "sysctl:vm.swappiness=1" + swappiness}, []string{"--set", "sysctl:vm.swappiness=" + swappiness},
			"vm.swappiness would change the host; not changed from inside network namespace " + id},
		{[]string{"--set", "irq-affinity:" + irq + "=0"}, []string{"--set", "irq-affinity:" + irq + "=" + affinity},
			"IRQs are the host's; not changed from inside network namespace " + id},
		{[]string{"--boot", "--set", "boot:grub=quiet"}, nil,
			"boot files are the host's; not changed from inside network namespace " + id},
	} {
		runs := [][]string{append([]string{"tune", "plan"}, c.plan...)}
		if c.apply != nil {
			runs = append(runs, append([]string{"tune", "apply", "--state-dir", state}, c.apply...))
		}
		for _, args := range runs {
			if r := in(args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("%v under ip netns exec: %d, want 2 and %q\n%s%s", args, r.code, c.want, r.stdout, r.stderr)
			}
		}
	}
	if got := readTrimmed(t, "/proc/sys/vm/swappiness"); got != swappiness {
		t.Fatalf("the host's vm.swappiness changed from %s to %s", swappiness, got)
	}

	// irqbalance's defaults file, on a tmpfs over /etc/default in a
	// private mount namespace: what the apply would have edited.
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) is not installed: it makes the private /etc/default")
	}
	const file = "# the test: no banned CPUs\n"
	script := fmt.Sprintf(`mount -t tmpfs linerate-test /etc/default || exit 97
printf '%%s' '%s' > /etc/default/irqbalance
ip netns exec %s %s tune apply --state-dir %s --set irqbalance-banned:box=0 >&2
echo "exit $?"
cat /etc/default/irqbalance`, file, ns.Name, bin, state)
	r = run(t, "unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	if r.code == 97 {
		t.Fatalf("private /etc/default: %s", r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "exit 2\n") || !strings.Contains(r.stderr, "irqbalance is the host's; not changed from inside network namespace "+id) {
		t.Errorf("irqbalance-banned under ip netns exec: %s%s", r.stdout, r.stderr)
	}
	if got := strings.TrimPrefix(r.stdout, "exit 2\n"); got != file {
		t.Errorf("the defaults file is %q after the refused apply, want %q", got, file)
	}
	if left, _ := filepath.Glob(filepath.Join(state, "journal", "*.json")); len(left) != 0 {
		t.Errorf("refused applies journalled %v", left)
	}
}

// filesMentioning lists the files under root whose text has s.
func filesMentioning(t *testing.T, root, s string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readTrimmed(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// anyIRQ is the number of an IRQ this machine has.
func anyIRQ(t *testing.T) string {
	t.Helper()
	ents, err := os.ReadDir("/proc/irq")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			return e.Name()
		}
	}
	t.Skip("no IRQ in /proc/irq")
	return ""
}

// tuneBannedWithoutSystemd: on a box where systemd does not run (made so
// for the test: a tmpfs over /run/systemd), irqbalance-banned edits the
// defaults file (a tmpfs over /etc/default, in a private mount namespace:
// never the machine's), says that irqbalance was not restarted and why,
// exits 0, and rollback puts the file back. irqbalance must not run: then
// the item is refused (TestIRQBalanceBannedWithoutServiceManager).
func tuneBannedWithoutSystemd(t *testing.T, bin string) {
	testenv.RequireRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) is not installed: it makes the private /etc/default")
	}
	if out, err := exec.Command("sh", "-c", "grep -lx irqbalance /proc/[0-9]*/comm").Output(); err == nil && len(out) > 0 {
		t.Skip("irqbalance runs on this machine: the item is refused without systemd, which the tune package tests")
	}
	state := t.TempDir()
	const file = "# the test: no banned CPUs\n"
	script := fmt.Sprintf(`mount -t tmpfs linerate-test /etc/default || exit 97
if [ -d /run/systemd ]; then mount -t tmpfs linerate-test /run/systemd || exit 97; fi
printf '%%s' '%s' > /etc/default/irqbalance
%s tune apply --state-dir %s --set irqbalance-banned:box=0
echo "exit $?"
cat /etc/default/irqbalance
%s tune rollback --state-dir %s
echo "exit $?"
cat /etc/default/irqbalance`, file, bin, state, bin, state)
	r := run(t, "unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	if r.code == 97 {
		t.Fatalf("private mounts: %s", r.stderr)
	}
	applied, rolled, _ := strings.Cut(r.stdout, "restored ")
	for _, want := range []string{"not restarted (systemd is not running (no /run/systemd/system))", "applied 1 change", "exit 0\n" + file + "IRQBALANCE_BANNED_CPULIST=0\n"} {
		if !strings.Contains(applied, want) {
			t.Errorf("apply without systemd: no %q in\n%s%s", want, r.stdout, r.stderr)
		}
	}
	if !strings.HasSuffix(rolled, "exit 0\n"+file) {
		t.Errorf("rollback without systemd:\n%s%s", r.stdout, r.stderr)
	}
}
