package lab

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
)

// TestEtcNetnsHosts: node names resolve in commands `ip netns exec`
// starts, through the hosts file Up writes in /etc/netns/NETNS; Down
// removes it (cleanupLab checks).
func TestEtcNetnsHosts(t *testing.T) {
	l, _ := newLab(t, Spec{Topology: Router})
	lan, _ := l.Node("lan")
	out, err := exec.Command("ip", "netns", "exec", lan.Netns, "getent", "hosts", "wan").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "10.231.2.2 ") {
		t.Errorf("ip netns exec %s getent hosts wan: %q, %v", lan.Netns, out, err)
	}
}

// TestEtcNetnsForeign: an /etc/netns directory that exists before Up is
// someone else's: Up writes nothing in it and Down leaves it as it was.
func TestEtcNetnsForeign(t *testing.T) {
	testenv.RequireRoot(t)
	d := Dir(t.TempDir())
	name := uniqueName()
	dir := foreignEtcDir(t, NetnsName(name, "a"))
	foreign := filepath.Join(dir, "hosts")
	if err := os.WriteFile(foreign, []byte("192.0.2.1 mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.Up(ctx, Spec{Name: name, Topology: Pair}); err != nil {
		t.Fatal(err)
	}
	if err := d.Down(name); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(foreign); err != nil || string(b) != "192.0.2.1 mine\n" {
		t.Errorf("foreign hosts file after Up and Down: %q, %v", b, err)
	}
	if _, err := os.Stat(etcHostsDir(NetnsName(name, "b"))); !os.IsNotExist(err) {
		t.Errorf("b's /etc/netns directory after Down: %v", err)
	}
}

// TestEtcNetnsLeftOver: a hosts file a lab of the same name left behind
// (a reboot takes the state on /run, not /etc) is taken over and removed.
func TestEtcNetnsLeftOver(t *testing.T) {
	testenv.RequireRoot(t)
	d := Dir(t.TempDir())
	name := uniqueName()
	dir := foreignEtcDir(t, NetnsName(name, "a"))
	cleanupLab(t, d, name) // runs first: Down before /etc/netns goes
	l, err := Plan(Spec{Name: name, Topology: Pair})
	if err != nil {
		t.Fatal(err)
	}
	stale := strings.Replace(l.Hosts("a"), "10.231.1.2", "10.231.1.9", 1)
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.Up(ctx, Spec{Name: name, Topology: Pair}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hosts")); err != nil || string(b) != l.Hosts("a") {
		t.Errorf("hosts after Up: %q, %v; want it rewritten", b, err)
	}
}

// foreignEtcDir makes /etc/netns/NETNS as someone other than a lab would,
// and removes it when the test ends, with /etc/netns if the test made it.
func foreignEtcDir(t *testing.T, netns string) string {
	t.Helper()
	if _, err := os.Lstat(etcNetns); os.IsNotExist(err) {
		t.Cleanup(func() {
			if err := removeEmptyDir(etcNetns); err != nil {
				t.Error(err)
			}
		})
	}
	dir := etcHostsDir(netns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestEtcNetnsOverlap: /etc/netns that one lab made stays while another
// lab uses it and goes with whichever lab is removed last.
func TestEtcNetnsOverlap(t *testing.T) {
	testenv.RequireRoot(t)
	if _, err := os.Lstat(etcNetns); err == nil {
		t.Skipf("%s exists already: not this test's to remove", etcNetns)
	}
	a, da := newLab(t, Spec{Topology: Pair})
	b, db := newLab(t, Spec{Topology: Pair})
	if err := da.Down(a.Spec.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(etcHostsDir(NetnsName(b.Spec.Name, "a"))); err != nil {
		t.Fatalf("the second lab's hosts after the first lab went: %v", err)
	}
	if err := db.Down(b.Spec.Name); err != nil {
		t.Fatal(err)
	}
	// Gone, unless labs of other tests running meanwhile use it.
	if ents, err := os.ReadDir(etcNetns); err == nil && (len(ents) == 0 || len(ents) == 1 && ents[0].Name() == etcNetnsMark) {
		t.Errorf("%s after both labs went holds %v", etcNetns, ents)
	}
}
