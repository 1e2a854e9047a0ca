package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"linerate/internal/testenv"
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
