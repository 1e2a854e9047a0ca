package tune

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"linerate/internal/usage"
)

// An /etc/default/irqbalance in the form Debian's package ships it (its
// comment abridged), with the old mask variable commented out.
const debianIRQBalance = `# irqbalance is a daemon process that distributes interrupts across
# CPUS on SMP systems. The default is to rebalance once every 10
# seconds. This is the environment file that is specified to systemd via the
# EnvironmentFile key in the service unit file (or via /etc/default in
# SysV init scripts).
#
# IRQBALANCE_BANNED_CPUS
#     64 bit bitmask which allows you to indicate which cpu's should
#     be skipped when reblancing irqs. Cpu numbers which have their
#     corresponding bits set to one in this mask will not have any
#     irq's assigned to them on rebalance
#
#IRQBALANCE_BANNED_CPUS=
`

// irqbalance-banned edits the defaults file, restarts a running
// irqbalance to read it, reads back, and rollback puts the file back to
// the byte; txqueuelen is a sysfs file like the others.
func TestIRQBalanceBannedAndTxQueueLen(t *testing.T) {
	root, sys := fakeBox(t)
	writeFiles(t, root, map[string]string{"etc/default/irqbalance": debianIRQBalance, "sys/class/net/eth0/tx_queue_len": "1000\n"})
	svc := fakeSystemctl(t, "active")
	sys.SetServices(svc)
	store := NewStore(t.TempDir())
	tx := applied(t, store, sys, []Item{
		{Kind: "irqbalance-banned", Target: "box", Value: "1-2"},
		{Kind: "txqueuelen", Target: "eth0", Value: "2000"},
	})
	got := readRoot(t, root, "etc/default/irqbalance")
	if !strings.HasSuffix(got, "#IRQBALANCE_BANNED_CPUS=\nIRQBALANCE_BANNED_CPULIST=1-2\n") {
		t.Errorf("defaults file:\n%s", got)
	}
	if l := readRoot(t, root, "sys/class/net/eth0/tx_queue_len"); strings.TrimSpace(l) != "2000" {
		t.Errorf("tx_queue_len %q", l)
	}
	log, _ := os.ReadFile(filepath.Join(filepath.Dir(svc.Path), "log"))
	if !strings.Contains(string(log), "stop irqbalance.service\nstart irqbalance.service\n") {
		t.Errorf("irqbalance not restarted:\n%s", log)
	}
	for _, st := range Check(sys, tx.Record()) {
		if !st.Holds {
			t.Errorf("status: %s %s live %q", st.Kind, st.Target, st.Live)
		}
	}
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := readRoot(t, root, "etc/default/irqbalance"); got != debianIRQBalance {
		t.Errorf("after rollback:\n%q", got)
	}
	if l := readRoot(t, root, "sys/class/net/eth0/tx_queue_len"); strings.TrimSpace(l) != "1000" {
		t.Errorf("tx_queue_len after rollback %q", l)
	}
}

// A veth's txqueuelen is 0 (it has no queue of its own): an apply there
// rolls back to 0, which is a length like any other.
func TestNetnsTxQueueLenBackToZero(t *testing.T) {
	l := newLab(t)
	qlen := func() string { return strings.TrimSpace(l.sh(t, "cat", "/sys/class/net/b/tx_queue_len")) }
	if qlen() != "0" {
		t.Skipf("veth b has txqueuelen %s here, not 0", qlen())
	}
	sys := openNetns(t, l.ns.Name)
	store, err := applyOne(t, sys, Item{Kind: "txqueuelen", Target: "b", Value: "1500"})
	if err != nil {
		t.Fatal(err)
	}
	if qlen() != "1500" {
		t.Fatalf("after apply: qlen %s", qlen())
	}
	rollbackAll(t, sys, store)
	if qlen() != "0" {
		t.Errorf("after rollback: qlen %s, want 0", qlen())
	}
}

// With no service manager (no systemd running) a running irqbalance
// cannot be made to read the file: the item is refused in plan, nothing
// changed. With none running the file is edited, said so, and a rollback
// puts it back even once an irqbalance runs.
func TestIRQBalanceBannedWithoutServiceManager(t *testing.T) {
	root, sys := fakeBox(t)
	writeFiles(t, root, map[string]string{"etc/default/irqbalance": debianIRQBalance, "proc/4242/comm": "irqbalance\n", "proc/1/comm": "init\n"})
	item := Item{Kind: "irqbalance-banned", Target: "box", Value: "1"}
	_, err := NewPlan(sys, []Item{item})
	if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "irqbalance runs (pid 4242)") {
		t.Fatalf("plan with irqbalance running and no service manager: %v", err)
	}
	if got := readRoot(t, root, "etc/default/irqbalance"); got != debianIRQBalance {
		t.Fatalf("the refused plan changed the file:\n%s", got)
	}

	if err := os.RemoveAll(filepath.Join(root, "proc/4242")); err != nil {
		t.Fatal(err)
	}
	tx := applied(t, NewStore(t.TempDir()), sys, []Item{item})
	if n := tx.Record().Entries[0].Note; !strings.Contains(n, "not restarted (service manager on dir") || !strings.Contains(n, "irqbalance reads it when it starts") {
		t.Errorf("note %q", n)
	}
	if got := readRoot(t, root, "etc/default/irqbalance"); !strings.HasSuffix(got, "IRQBALANCE_BANNED_CPULIST=1\n") {
		t.Errorf("after apply:\n%s", got)
	}
	writeFiles(t, root, map[string]string{"proc/4243/comm": "irqbalance\n"})
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := readRoot(t, root, "etc/default/irqbalance"); got != debianIRQBalance {
		t.Errorf("after rollback:\n%s", got)
	}
}
