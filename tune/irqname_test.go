package tune

import (
	"context"
	"fmt"
	"linerate/box"
	"linerate/source"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// irqBox lays out a box whose eth0 (igb-style vectors: one for the link,
// then eth0-TxRx-N) has its interrupts at first..first+4, after another
// device's at other, on 4 CPUs. Everything starts allowed on 0-3.
func irqBox(t *testing.T, root string, other, first int) {
	t.Helper()
	for _, d := range []string{"proc/irq", "sys/class/net/eth0/device/msi_irqs"} {
		os.RemoveAll(filepath.Join(root, d))
	}
	var b strings.Builder
	b.WriteString("           CPU0       CPU1       CPU2       CPU3       \n")
	files := map[string]string{"sys/devices/system/cpu/online": "0-3\n"}
	line := func(n int, action string) {
		fmt.Fprintf(&b, "%4d:        120          0          0          0  IR-PCI-MSI %d-edge      %s\n", n, 524288+n, action)
		files[fmt.Sprintf("proc/irq/%d/smp_affinity_list", n)] = "0-3\n"
		files[fmt.Sprintf("proc/irq/%d/smp_affinity", n)] = "f\n"
	}
	line(other, "xhci_hcd")
	line(first, "eth0")
	files[fmt.Sprintf("sys/class/net/eth0/device/msi_irqs/%d", first)] = "msix\n"
	for q := range 4 {
		line(first+1+q, fmt.Sprintf("eth0-TxRx-%d", q))
		files[fmt.Sprintf("sys/class/net/eth0/device/msi_irqs/%d", first+1+q)] = "msix\n"
	}
	b.WriteString(" NMI:          0          0          0          0   Non-maskable interrupts\n")
	files["proc/interrupts"] = b.String()
	writeFiles(t, root, files)
}

// applied plans items on sys and applies them as one transaction,
// journalled in store.
func applied(t *testing.T, store Store, sys System, items []Item) *Transaction {
	t.Helper()
	p, err := NewPlan(sys, items)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := store.Begin(sys, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tx
}

func affinity(t *testing.T, root string, n int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, fmt.Sprintf("proc/irq/%d/smp_affinity_list", n)))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestIRQByNameResolves(t *testing.T) {
	root := t.TempDir()
	irqBox(t, root, 40, 41)
	sys := NewDir(root)
	cases := []struct {
		item string
		want []string // target irq from -> to
	}{
		{"irq-affinity:eth0/rx-1=2", []string{"eth0/TxRx-1 43 0-3 -> 2"}},
		{"irq-affinity:eth0/tx-3=2", []string{"eth0/TxRx-3 45 0-3 -> 2"}},
		{"irq-affinity:eth0/TxRx-0=1-2", []string{"eth0/TxRx-0 42 0-3 -> 1-2"}},
		{"irq-affinity:eth0/#0=3", []string{"eth0/#0 41 0-3 -> 3"}},
		{"irq-affinity:40=1", []string{"40 40 0-3 -> 1"}},
		{"irq-affinity:eth0=1-3", []string{"eth0/#0 41 0-3 -> 1", "eth0/TxRx-0 42 0-3 -> 2", "eth0/TxRx-1 43 0-3 -> 3",
			"eth0/TxRx-2 44 0-3 -> 1", "eth0/TxRx-3 45 0-3 -> 2"}},
		{"irq-affinity:eth0=same:1-3", []string{"eth0/#0 41 0-3 -> 1-3", "eth0/TxRx-0 42 0-3 -> 1-3", "eth0/TxRx-1 43 0-3 -> 1-3",
			"eth0/TxRx-2 44 0-3 -> 1-3", "eth0/TxRx-3 45 0-3 -> 1-3"}},
	}
	for _, c := range cases {
		it, err := ParseItem(c.item)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPlan(sys, []Item{it})
		if err != nil {
			t.Errorf("%s: %v", c.item, err)
			continue
		}
		var got []string
		for _, ch := range p.Changes() {
			got = append(got, fmt.Sprintf("%s %d %s -> %s", ch.Target, ch.IRQ, ch.From, ch.To))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.item, got, c.want)
		}
	}
	for _, bad := range []string{"irq-affinity:eth0/rx-7=1", "irq-affinity:eth9=1", "irq-affinity:eth0/bogus=1"} {
		it, _ := ParseItem(bad)
		if _, err := NewPlan(sys, []Item{it}); err == nil {
			t.Errorf("%s: planned", bad)
		} else {
			t.Logf("%s: %v", bad, err)
		}
	}
	if got := ItemIface(Item{Kind: "irq-affinity", Target: "eth0/rx-1"}); got != "eth0" {
		t.Errorf("ItemIface(eth0/rx-1) = %q", got)
	}
}

// The box reboots with another device probed first: every interrupt of
// eth0 has a new number, and eth0's old numbers belong to someone else.
// The persisted plan names eth0's queues, so the replay pins them, and the
// interrupt that now has the old number keeps its affinity.
func TestIRQRenumberedReplay(t *testing.T) {
	root := t.TempDir()
	irqBox(t, root, 40, 41)
	sys := NewDir(root)
	items := []Item{
		{Kind: "irq-affinity", Target: "eth0/rx-1", Value: "2"},
		{Kind: "irq-affinity", Target: "eth0/#0", Value: "3"},
	}
	store := NewStore(t.TempDir())
	tx := applied(t, store, sys, items)
	if a, b := affinity(t, root, 43), affinity(t, root, 41); a != "2" || b != "3" {
		t.Fatalf("after apply: IRQ 43 %s, IRQ 41 %s", a, b)
	}
	rec := tx.Record()
	for _, e := range rec.Entries {
		if e.IRQ == 0 || !strings.HasPrefix(e.Target, "eth0/") || !strings.HasPrefix(e.Restore.Target, "eth0/") {
			t.Errorf("journal entry %+v: want the name and the number", e.Change)
		}
	}

	etc := t.TempDir()
	if _, err := Persist([]*Record{rec}, PersistOptions{Root: etc, Binary: "/usr/bin/linerate", StateDir: "/var/lib/linerate"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(etc, planPath))
	if err != nil {
		t.Fatal(err)
	}
	pf, err := ReadPlanFile(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}

	var planned []string
	for _, it := range pf.Items {
		planned = append(planned, it.String())
	}
	if want := []string{"irq-affinity:eth0/rx-1=2", "irq-affinity:eth0/#0=3"}; !slices.Equal(planned, want) {
		t.Errorf("persisted %q, want the names %q", planned, want)
	}

	// Renumber: the USB controller now has 41, eth0 has 50-54.
	irqBox(t, root, 41, 50)
	if sts := Check(sys, rec); len(sts) != 2 {
		t.Errorf("%d statuses after renumbering, want the 2 items'", len(sts))
	}
	for _, st := range Check(sys, rec) {
		if st.Renumbered == "" || st.Holds {
			t.Errorf("status of %s after renumbering: %+v", st.Target, st)
		} else {
			t.Logf("status: %s; live %s", st.Renumbered, st.Live)
		}
	}
	tx = applied(t, store, sys, pf.Items)
	want := map[int]string{41: "0-3", 50: "3", 51: "0-3", 52: "2", 53: "0-3"}
	for n, v := range want {
		if got := affinity(t, root, n); got != v {
			t.Errorf("after replay: IRQ %d = %s, want %s", n, got, v)
		}
	}
	if sts := Check(sys, tx.Record()); len(sts) != 2 {
		t.Errorf("%d statuses after replay, want the 2 items'", len(sts))
	}
	for _, st := range Check(sys, tx.Record()) {
		if !st.Holds || st.Renumbered != "" {
			t.Errorf("status after replay: %+v", st)
		}
	}
}

// TestIRQVirtioAsBoxNamesThem resolves the interrupts of this machine's
// virtio NIC (captured): its vectors are in the msi_irqs of the PCI
// function above the virtio device, and no action names eth0. Every name
// box gives one resolves to the same number, and eth0 as a whole is the
// three of them.
func TestIRQVirtioAsBoxNamesThem(t *testing.T) {
	const capture = "../testdata/captures/this-machine"
	src, err := source.OpenCapture(capture)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	b, err := box.Collect(context.Background(), src, "eth0")
	if err != nil {
		t.Fatal(err)
	}
	sys := NewDir(capture)
	var all []int
	for _, q := range b.IRQs {
		all = append(all, q.Number)
		got, whole, err := resolveIRQs(sys, q.Ref)
		if err != nil || whole || len(got) != 1 || got[0].Number != q.Number {
			t.Errorf("%s (box: IRQ %d): %v %v %v", q.Ref, q.Number, got, whole, err)
		}
	}
	if !slices.Equal(all, []int{37, 38, 39}) {
		t.Fatalf("box found %v for the virtio NIC, want 37-39", all)
	}
	got, whole, err := resolveIRQs(sys, "eth0")
	var nums []int
	for _, q := range got {
		nums = append(nums, q.Number)
	}
	if err != nil || !whole || !slices.Equal(nums, all) {
		t.Errorf("eth0: %v %v %v, want %v", nums, whole, err, all)
	}
}
