package tune

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/internal/usage"
)

// These tests run anywhere: the System is a directory laid out like /,
// holding the proc and sys files of a box (a copy of a seed-modelled
// capture, or files written by the test). It is a filesystem, not a mock:
// the code reads and writes it exactly as it does /proc and /sys.

// copyTree copies a directory, keeping symlinks as symlinks.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, out)
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The file helpers live in testenv (autotune's tests use them too).
var (
	writeFiles = testenv.WriteFiles
	readFiles  = testenv.ReadFiles
)

// TestRouterPiFixes runs the whole chain on the RouterPi capture of seed
// 002: diagnose's fixes become a plan against a copy of the capture's
// files, which is applied and rolled back.
func TestRouterPiFixes(t *testing.T) {
	const capture = "../testdata/captures/routerpi"
	items := ItemsFromFindings(captureFindings(t, capture))

	root := t.TempDir()
	copyTree(t, filepath.Join(capture, "proc"), filepath.Join(root, "proc"))
	copyTree(t, filepath.Join(capture, "sys"), filepath.Join(root, "sys"))
	sys := NewDir(root)
	p, err := PlanFixes(sys, items)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Change{}
	for _, c := range p.Changes() {
		got[c.Kind.String()+" "+c.Target] = c
	}
	// Seed 002: "echo 2 > /proc/irq/41/smp_affinity", RPS on the single
	// rx queue. IRQ 41 allows CPUs 0-3 (and runs on 0); RPS is off. The
	// fix names IRQ 41 by what it serves, the first of eth0's two vectors
	// (both named "eth0"): the seed's "The IRQ numbers 41 and 42 can move
	// around".
	if c := got["irq-affinity eth0/#0"]; c.IRQ != 41 {
		t.Errorf("irq-affinity eth0/#0 resolves to IRQ %d, want 41", c.IRQ)
	}
	got["irq-affinity 41"] = got["irq-affinity eth0/#0"]
	for _, k := range []string{"irq-affinity 41", "rps eth0/rx-0", "rps eth1/rx-0"} {
		c, ok := got[k]
		if !ok {
			t.Errorf("plan lacks %s; plan: %v", k, p.Changes())
			continue
		}
		if k == "irq-affinity 41" && c.From != "0-3" || k != "irq-affinity 41" && c.From != "none" {
			t.Errorf("%s: from %q, want the capture's value", k, c.From)
		}
	}
	// The directory has no ethtool: the coalescing fix is skipped, with why.
	var skipped []string
	for _, s := range p.Skipped {
		skipped = append(skipped, s.Item.Kind.String()+": "+s.Reason)
	}
	if !slices.ContainsFunc(skipped, func(s string) bool { return strings.HasPrefix(s, "coalesce:") && strings.Contains(s, "not supported") }) {
		t.Errorf("skipped: %q, want coalesce as not supported", skipped)
	}

	files := []string{"proc/irq/41/smp_affinity_list", "proc/irq/42/smp_affinity_list",
		"sys/class/net/eth0/queues/rx-0/rps_cpus", "sys/class/net/eth1/queues/rx-0/rps_cpus",
		"sys/class/net/eth0/queues/rx-0/rps_flow_cnt", "proc/sys/net/core/rps_sock_flow_entries"}
	before := readFiles(t, root, files)
	store := NewStore(t.TempDir())
	tx, err := store.Begin(sys, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := readFiles(t, root, files)
	if after["proc/irq/41/smp_affinity_list"] != got["irq-affinity 41"].To {
		t.Errorf("irq 41 affinity %q, want %q", after["proc/irq/41/smp_affinity_list"], got["irq-affinity 41"].To)
	}
	if after["sys/class/net/eth0/queues/rx-0/rps_cpus"] == before["sys/class/net/eth0/queues/rx-0/rps_cpus"] {
		t.Errorf("eth0 rps_cpus unchanged")
	}
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Restored values are equal as values: a mask "0" written back where
	// the capture held "0".
	restored := readFiles(t, root, files)
	for _, f := range files {
		if restored[f] != before[f] {
			t.Errorf("%s: %q after rollback, was %q", f, restored[f], before[f])
		}
	}
}

// fakeBox is a four-CPU box: two IRQs (one with only smp_affinity, as on
// old kernels), cpufreq on every CPU, one NIC with a queue.
func fakeBox(t *testing.T) (string, *Dir) {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"proc/irq/41/smp_affinity_list":           "0-3\n",
		"proc/irq/41/smp_affinity":                "f\n",
		"proc/irq/42/smp_affinity":                "1\n",
		"sys/devices/system/cpu/online":           "0-3\n",
		"proc/sys/net/core/netdev_max_backlog":    "1000\n",
		"proc/sys/net/ipv4/tcp_rmem":              "4096\t131072\t6291456\n",
		"sys/class/net/eth0/queues/rx-0/rps_cpus": "0\n",
		"sys/class/net/eth0/queues/tx-0/xps_cpus": "00000000,00000000\n",
	}
	for cpu := range 4 {
		dir := "sys/devices/system/cpu/cpu" + strconv.Itoa(cpu) + "/cpufreq/"
		files[dir+"scaling_governor"] = "ondemand\n"
		files[dir+"scaling_available_governors"] = "ondemand performance powersave\n"
	}
	writeFiles(t, root, files)
	return root, NewDir(root)
}

var fakeFiles = []string{
	"proc/irq/41/smp_affinity_list", "proc/irq/42/smp_affinity",
	"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "sys/devices/system/cpu/cpu3/cpufreq/scaling_governor",
	"proc/sys/net/core/netdev_max_backlog", "proc/sys/net/ipv4/tcp_rmem",
	"sys/class/net/eth0/queues/rx-0/rps_cpus", "sys/class/net/eth0/queues/tx-0/xps_cpus",
}

var fakeItems = []Item{
	{Kind: "irq-affinity", Target: "41", Value: "1"},
	{Kind: "irq-affinity", Target: "42", Value: "2-3"},
	{Kind: "governor", Target: "all", Value: "performance"},
	{Kind: "sysctl", Target: "net.core.netdev_max_backlog", Value: "4096"},
	{Kind: "sysctl", Target: "net.ipv4.tcp_rmem", Value: "4096 262144 16777216"},
	{Kind: "rps", Target: "eth0/rx-*", Value: "1-3"},
	{Kind: "xps", Target: "eth0/tx-0", Value: "0"},
	{Kind: "boot", Target: "cmdline.txt", Value: "pci=pcie_bus_perf"},
}

func TestDirApplyRollback(t *testing.T) {
	root, sys := fakeBox(t)
	before := readFiles(t, root, fakeFiles)
	p, err := NewPlan(sys, fakeItems)
	if err != nil {
		t.Fatal(err)
	}
	// governor all expands to one change per CPU; boot is advice.
	var kinds []string
	for _, c := range p.Changes() {
		kinds = append(kinds, c.Kind.String()+" "+c.Target+" "+c.From+" -> "+c.To)
	}
	want := []string{
		"irq-affinity 41 0-3 -> 1", "irq-affinity 42 0 -> 2-3",
		"governor cpu0 ondemand -> performance", "governor cpu1 ondemand -> performance",
		"governor cpu2 ondemand -> performance", "governor cpu3 ondemand -> performance",
		"sysctl net.core.netdev_max_backlog 1000 -> 4096",
		"sysctl net.ipv4.tcp_rmem 4096 131072 6291456 -> 4096 262144 16777216",
		"rps eth0/rx-0 none -> 1-3", "xps eth0/tx-0 none -> 0",
		"boot cmdline.txt not on the running kernel's command line -> pci=pcie_bus_perf",
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}
	store := NewStore(t.TempDir())
	tx, err := store.Begin(sys, p)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tx.Record().Entries); n != 10 {
		t.Errorf("journal holds %d entries, want 10 (boot advice is not journalled)", n)
	}
	if err := tx.Apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := readFiles(t, root, fakeFiles)
	for f, v := range map[string]string{
		"proc/irq/41/smp_affinity_list":                        "1",
		"proc/irq/42/smp_affinity":                             "c", // mask, no list file
		"sys/devices/system/cpu/cpu3/cpufreq/scaling_governor": "performance",
		"proc/sys/net/ipv4/tcp_rmem":                           "4096 262144 16777216",
		"sys/class/net/eth0/queues/rx-0/rps_cpus":              "e",
		"sys/class/net/eth0/queues/tx-0/xps_cpus":              "1",
	} {
		if after[f] != v {
			t.Errorf("%s = %q, want %q", f, after[f], v)
		}
	}
	recs, err := store.List()
	if err != nil || len(recs) != 1 || recs[0].State != RecApplied {
		t.Fatalf("journal: %v %v", recs, err)
	}
	// Drift: something else moves IRQ 41 back.
	writeFiles(t, root, map[string]string{"proc/irq/41/smp_affinity_list": "0-3\n"})
	for _, st := range Check(sys, recs[0]) {
		if st.Holds == (st.Target == "41") {
			t.Errorf("status %s %s: holds %v, live %q", st.Kind, st.Target, st.Holds, st.Live)
		}
	}
	if _, err := store.Rollback(context.Background(), sys, recs[0]); err != nil {
		t.Fatal(err)
	}
	got := readFiles(t, root, fakeFiles)
	for _, f := range fakeFiles {
		if !sameValue(got[f], before[f]) {
			t.Errorf("%s: %q after rollback, was %q", f, got[f], before[f])
		}
	}
	if recs, _ := store.List(); len(recs) != 0 {
		t.Errorf("journal keeps %d records", len(recs))
	}
}

// sameValue compares file contents as the kernel would: white space
// folded, and masks equal when they name the same CPUs ("0" and
// "00000000,00000000").
func sameValue(a, b string) bool {
	if strings.Join(strings.Fields(a), " ") == strings.Join(strings.Fields(b), " ") {
		return true
	}
	trim := func(s string) string { return strings.TrimLeft(strings.ReplaceAll(s, ",", ""), "0") }
	return trim(a) == trim(b)
}

func TestDirChecks(t *testing.T) {
	_, sys := fakeBox(t)
	for _, tc := range []struct {
		it   Item
		want string
	}{
		{Item{Kind: "irq-affinity", Target: "99", Value: "1"}, "no IRQ 99"},
		{Item{Kind: "irq-affinity", Target: "41", Value: "7"}, "CPU 7 is not online (online: 0-3)"},
		{Item{Kind: "irq-affinity", Target: "41", Value: "none"}, "at least one CPU"},
		{Item{Kind: "irq-affinity", Target: "x", Value: "1"}, "no interface x"},
		{Item{Kind: "irq-affinity", Target: "-1", Value: "1"}, "want an IRQ number"},
		{Item{Kind: "governor", Target: "all", Value: "turbo"}, `no governor "turbo"`},
		{Item{Kind: "governor", Target: "cpu9", Value: "performance"}, "cpu9 has no cpufreq"},
		{Item{Kind: "rps", Target: "eth0/rx-1", Value: "1"}, "eth0 has no queue rx-1 (has: rx-0)"},
		{Item{Kind: "rps", Target: "eth9/rx-0", Value: "1"}, "no interface eth9 (have: eth0)"},
		{Item{Kind: "rps", Target: "eth0", Value: "1"}, "want IFACE/rx-N"},
		{Item{Kind: "rps", Target: "eth0/rx-0", Value: "1-x"}, "not a CPU number"},
		{Item{Kind: "rps-flow", Target: "eth0/rx-0", Value: "4000"}, "ask for 4096"},
		{Item{Kind: "rps-flow", Target: "eth0/rx-0", Value: "4096"}, "not supported by this kernel"},
		{Item{Kind: "sysctl", Target: "net.core.nope", Value: "1"}, "no sysctl net.core.nope on this system"},
		{Item{Kind: "sysctl", Target: "net..core", Value: "1"}, "not a sysctl name"},
		{Item{Kind: "coalesce", Target: "eth0", Value: "rx-usecs=1"}, "not supported"},
		{Item{Kind: "mtu", Target: "eth0", Value: "9000"}, "not supported"},
		{Item{Kind: "irqbalance", Target: "box", Value: "stop"}, "not supported"},
		{Item{Kind: "warp", Target: "x", Value: "1"}, "unknown kind"},
	} {
		_, err := Build(sys, tc.it)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.it, err, tc.want)
			continue
		}
		if !usage.Is(err) {
			t.Errorf("%s: %v is not marked bad input", tc.it, err)
		}
		if !strings.HasPrefix(err.Error(), tc.it.String()+": ") {
			t.Errorf("%s: error %q does not name the item", tc.it, err)
		}
	}
	// All problems of a plan together, on one line.
	_, err := NewPlan(sys, []Item{{Kind: "irq-affinity", Target: "99", Value: "1"}, {Kind: "rps", Target: "eth9/rx-0", Value: "1"}})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "no IRQ 99") || !strings.Contains(err.Error(), "no interface eth9") {
		t.Errorf("plan error: %q", err)
	}
	_, err = NewPlan(sys, []Item{{Kind: "rps", Target: "eth0/rx-*", Value: "1"}, {Kind: "rps", Target: "eth0/rx-0", Value: "2"}})
	if err == nil || !strings.Contains(err.Error(), "set twice") {
		t.Errorf("a target set twice: %v", err)
	}
}

func TestDirFailHalfwayRestores(t *testing.T) {
	root, sys := fakeBox(t)
	before := readFiles(t, root, fakeFiles)
	p, err := NewPlan(sys, fakeItems[:4])
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(t.TempDir())
	tx, err := store.Begin(sys, p)
	if err != nil {
		t.Fatal(err)
	}
	// Between plan and apply, cpu2's cpufreq file turns into something the
	// write fails on: the fifth change fails after four were made.
	gov := filepath.Join(root, "sys/devices/system/cpu/cpu2/cpufreq/scaling_governor")
	if err := os.Remove(gov); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(gov, 0o755); err != nil {
		t.Fatal(err)
	}
	err = tx.Apply(context.Background())
	var ae *ApplyError
	if !errors.As(err, &ae) || ae.Change.Target != "cpu2" || ae.Restored != 4 || len(ae.Unrestored) != 0 {
		t.Fatalf("apply: %v (%+v)", err, ae)
	}
	if !strings.Contains(err.Error(), "nothing is left changed (4 changes restored)") {
		t.Errorf("error %q", err)
	}
	got := readFiles(t, root, fakeFiles)
	for _, f := range fakeFiles {
		if !sameValue(got[f], before[f]) {
			t.Errorf("%s: %q after the failed apply, was %q", f, got[f], before[f])
		}
	}
	if recs, _ := store.List(); len(recs) != 0 {
		t.Errorf("journal keeps %d records", len(recs))
	}
}

// TestDirKilledMidApply is the kill -9 test without root: the child
// applies the fake box's plan and SIGKILLs itself after its third change.
func TestDirKilledMidApply(t *testing.T) {
	root, sys := fakeBox(t)
	before := readFiles(t, root, fakeFiles)
	state := t.TempDir()
	runKilled(t, childEnv+"_ROOT="+root, childEnv+"_STATE="+state,
		childEnv+"_ITEMS="+itemLines(fakeItems[:4]), childEnv+"_KILL=3")
	if got := readFiles(t, root, fakeFiles)["sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"]; got != "performance" {
		t.Fatalf("the child did not get to its third change (cpu0 governor %q)", got)
	}
	store := NewStore(state)
	recs, err := store.List()
	if err != nil || len(recs) != 1 {
		t.Fatalf("journal: %d records, %v", len(recs), err)
	}
	var states []string
	for _, e := range recs[0].Entries {
		states = append(states, e.State)
	}
	if want := []string{Applied, Applied, Changing, Pending, Pending, Pending, Pending}; !slices.Equal(states, want) {
		t.Errorf("entry states %v, want %v", states, want)
	}
	n, err := store.Rollback(context.Background(), sys, recs[0])
	if err != nil || n != 3 {
		t.Fatalf("rollback: %d restored, %v", n, err)
	}
	got := readFiles(t, root, fakeFiles)
	for _, f := range fakeFiles {
		if !sameValue(got[f], before[f]) {
			t.Errorf("%s: %q after rollback, was %q", f, got[f], before[f])
		}
	}
}

func TestStaleRecordIsDropped(t *testing.T) {
	root, sys := fakeBox(t)
	writeFiles(t, root, map[string]string{"proc/sys/kernel/random/boot_id": "aaaa\n"})
	store := NewStore(t.TempDir())
	applied(t, store, sys, fakeItems[:1])
	// A reboot: new boot_id, and the kernel's default affinity again.
	writeFiles(t, root, map[string]string{"proc/sys/kernel/random/boot_id": "bbbb\n", "proc/irq/41/smp_affinity_list": "0-1\n"})
	recs, _ := store.List()
	if !Stale(sys, recs[0]) {
		t.Fatal("record from the earlier boot is not stale")
	}
	if n, err := store.Rollback(context.Background(), sys, recs[0]); err != nil || n != 0 {
		t.Fatalf("rollback of a stale record: %d, %v", n, err)
	}
	if got := readFiles(t, root, []string{"proc/irq/41/smp_affinity_list"})["proc/irq/41/smp_affinity_list"]; got != "0-1" {
		t.Errorf("a stale rollback wrote %q", got)
	}
	if recs, _ := store.List(); len(recs) != 0 {
		t.Errorf("stale record kept")
	}
}

// fakeSystemctl is a systemctl for one unit, keeping its state in a file.
func fakeSystemctl(t *testing.T, state string) Systemctl {
	t.Helper()
	dir := t.TempDir()
	st := filepath.Join(dir, "state")
	script := filepath.Join(dir, "systemctl")
	writeFiles(t, dir, map[string]string{"state": state + "\n", "log": ""})
	body := `#!/bin/sh
st=` + st + `
echo "$@" >> ` + filepath.Join(dir, "log") + `
case "$1" in
show) [ "$4" = irqbalance.service ] || exit 1
      if [ "$(cat $st)" = missing ]; then echo LoadState=not-found; echo ActiveState=inactive
      else echo LoadState=loaded; echo "ActiveState=$(cat $st)"; fi ;;
stop) echo inactive > $st ;;
start) echo active > $st ;;
*) echo "unknown command $1" >&2; exit 1 ;;
esac
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return Systemctl{Path: script}
}

func TestIRQBalance(t *testing.T) {
	_, sys := fakeBox(t)
	svc := fakeSystemctl(t, "active")
	sys.SetServices(svc)
	p, err := NewPlan(sys, []Item{{Kind: "irqbalance", Target: "box", Value: "stop"}})
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Changes()[0]; c.From != "start" || c.To != "stop" {
		t.Errorf("change %+v", c)
	}
	store := NewStore(t.TempDir())
	tx, err := store.Begin(sys, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _ := svc.State(irqbalanceUnit); st.Active != "inactive" {
		t.Errorf("after stop: %+v", st)
	}
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _ := svc.State(irqbalanceUnit); st.Active != "active" {
		t.Errorf("after rollback: %+v", st)
	}
	// Not installed: stopping is already done, starting is refused.
	sys.SetServices(fakeSystemctl(t, "missing"))
	acts, err := Build(sys, Item{Kind: "irqbalance", Target: "box", Value: "stop"})
	if err != nil || !acts[0].Describe().Unchanged {
		t.Errorf("stop when not installed: %v", err)
	}
	if _, err := Build(sys, Item{Kind: "irqbalance", Target: "box", Value: "start"}); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("start when not installed: %v", err)
	}
}

func TestBootAdvice(t *testing.T) {
	root, sys := fakeBox(t)
	writeFiles(t, root, map[string]string{
		"boot/cmdline.txt": "console=serial0,115200 console=tty1 root=PARTUUID=738a4d67-02 rootfstype=ext4 fsck.repair=yes rootwait\n",
		"proc/cmdline":     "coherent_pool=1M 8250.nr_uarts=1 console=tty1 root=PARTUUID=738a4d67-02 rootfstype=ext4 fsck.repair=yes rootwait\n",
		"boot/config.txt":  "dtparam=audio=on\narm_freq=1800\n[all]\n",
	})
	acts, err := Build(sys, Item{Kind: "boot", Target: "cmdline.txt", Value: "pci=pcie_bus_perf"})
	if err != nil {
		t.Fatal(err)
	}
	c := acts[0].Describe()
	if want := "add pci=pcie_bus_perf before rootwait in /boot/cmdline.txt (it is a single line), then reboot"; c.Advice != want || !c.Boot || !c.Manual {
		t.Errorf("cmdline advice %+v, want %q", c, want)
	}
	if _, err := acts[0].Apply(context.Background()); err == nil {
		t.Error("a boot item applied")
	}
	acts, err = Build(sys, Item{Kind: "boot", Target: "config.txt", Value: "over_voltage=6,arm_freq=2000"})
	if err != nil {
		t.Fatal(err)
	}
	c = acts[0].Describe()
	if c.From != "arm_freq=1800" || c.Advice != "add these lines under [all] in /boot/config.txt, then reboot: over_voltage=6  arm_freq=2000" {
		t.Errorf("config advice %+v", c)
	}
	// Bookworm's boot partition, and a kernel that already has the option.
	writeFiles(t, root, map[string]string{
		"boot/firmware/cmdline.txt": "root=/dev/mmcblk0p2 rootwait\n",
		"proc/cmdline":              "root=/dev/mmcblk0p2 rootwait pci=pcie_bus_perf\n",
	})
	acts, _ = Build(sys, Item{Kind: "boot", Target: "cmdline.txt", Value: "pci=pcie_bus_perf"})
	if c := acts[0].Describe(); !c.Unchanged || !strings.Contains(c.Advice, "/boot/firmware/cmdline.txt") {
		t.Errorf("bookworm advice %+v", c)
	}
	// Advice from diagnose that is not about files.
	acts, _ = Build(sys, Item{Kind: "boot", Target: "cable", Value: "check the cable"})
	if c := acts[0].Describe(); c.Advice != "check the cable" {
		t.Errorf("cable advice %+v", c)
	}
}

func TestPersist(t *testing.T) {
	root := t.TempDir()
	recs := []*Record{
		{ID: "1", State: RecApplied, Items: []Item{
			{Kind: "irq-affinity", Target: "41", Value: "1"},
			{Kind: "sysctl", Target: "net.core.netdev_max_backlog", Value: "2048"},
			{Kind: "rps", Target: "eth1/rx-0", Value: "3"},
			{Kind: "boot", Target: "cmdline.txt", Value: "pci=pcie_bus_perf"},
		}},
		{ID: "2", State: RecApplied, Items: []Item{
			{Kind: "sysctl", Target: "net.core.netdev_max_backlog", Value: "4096"},
			{Kind: "coalesce", Target: "wg-home", Value: "rx-usecs=100"},
		}},
		{ID: "3", State: RecApplied, Netns: "lab-r1", Items: []Item{{Kind: "mtu", Target: "a", Value: "9000"}}},
		{ID: "4", State: RecFailed, Items: []Item{{Kind: "mtu", Target: "eth0", Value: "9000"}}},
	}
	res, err := Persist(recs, PersistOptions{Root: root, Binary: "/usr/local/bin/linerate", StateDir: "/var/lib/linerate"})
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("etc/sysctl.d/90-linerate.conf"); !strings.HasSuffix(got, "\nnet.core.netdev_max_backlog = 4096\n") || strings.Count(got, "netdev_max_backlog") != 1 {
		t.Errorf("sysctl.d:\n%s", got)
	}
	pf, err := ReadPlanFile(strings.NewReader(read("etc/linerate/tune-plan.json")))
	if err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, it := range pf.Items {
		planned = append(planned, it.String())
	}
	if want := []string{"irq-affinity:41=1", "rps:eth1/rx-0=3", "coalesce:wg-home=rx-usecs=100"}; !slices.Equal(planned, want) {
		t.Errorf("plan file items %v, want %v", planned, want)
	}
	box := read("etc/systemd/system/linerate-tune.service")
	if !strings.Contains(box, "ExecStart=/usr/local/bin/linerate tune reapply --plan /etc/linerate/tune-plan.json --state-dir /var/lib/linerate box\n") ||
		!strings.Contains(box, "WantedBy=multi-user.target") {
		t.Errorf("box unit:\n%s", box)
	}
	tmpl := read("etc/systemd/system/linerate-tune@.service")
	for _, want := range []string{"BindsTo=sys-subsystem-net-devices-%i.device", "After=sys-subsystem-net-devices-%i.device",
		"tune reapply --plan /etc/linerate/tune-plan.json --state-dir /var/lib/linerate %I\n", "WantedBy=sys-subsystem-net-devices-%i.device"} {
		if !strings.Contains(tmpl, want) {
			t.Errorf("template unit lacks %q:\n%s", want, tmpl)
		}
	}
	for _, l := range []string{
		"etc/systemd/system/multi-user.target.wants/linerate-tune.service",
		"etc/systemd/system/sys-subsystem-net-devices-eth1.device.wants/linerate-tune@eth1.service",
		`etc/systemd/system/sys-subsystem-net-devices-wg\x2dhome.device.wants/linerate-tune@wg\x2dhome.service`,
	} {
		if dst, err := os.Readlink(filepath.Join(root, l)); err != nil || !strings.HasPrefix(dst, "/etc/systemd/system/linerate-tune") {
			t.Errorf("link %s: %q %v", l, dst, err)
		}
	}
	if len(res.Boot) != 1 || len(res.Skipped) != 2 {
		t.Errorf("boot advice %v, skipped %v", res.Boot, res.Skipped)
	}

	removed, err := Unpersist(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 9 { // the units, links, plan, sysctl.d file and the two link-up hooks
		t.Errorf("unpersist removed %d files: %v", len(removed), removed)
	}
	var left []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if len(left) != 0 {
		t.Errorf("left after unpersist: %v", left)
	}
}

func TestLock(t *testing.T) {
	store := NewStore(t.TempDir())
	unlock, err := store.Lock(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Lock(100 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "another linerate") {
		t.Errorf("second lock: %v", err)
	}
	// A waiter gets the lock once the holder lets go.
	go func() { time.Sleep(100 * time.Millisecond); unlock() }()
	unlock2, err := store.Lock(5 * time.Second)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	unlock2()
}

func TestPlanItems(t *testing.T) {
	_, sys := fakeBox(t)
	explicit := []Item{{Kind: "irq-affinity", Target: "41", Value: "2"}}
	fixes := []Item{
		{Kind: "irq-affinity", Target: "41", Value: "1"},          // the explicit item wins
		{Kind: "coalesce", Target: "eth0", Value: "rx-usecs=100"}, // no ethtool here: skipped
		{Kind: "sysctl", Target: "net.core.netdev_max_backlog", Value: "2000"},
	}
	p, err := PlanItems(sys, explicit, fixes)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range p.Changes() {
		got = append(got, c.Kind.String()+" "+c.Target+"="+c.To)
	}
	if want := []string{"irq-affinity 41=2", "sysctl net.core.netdev_max_backlog=2000"}; !slices.Equal(got, want) || len(p.Skipped) != 1 {
		t.Errorf("changes %v (want %v), skipped %v", got, want, p.Skipped)
	}
	// An explicit item that cannot be done fails the plan, fixes or not.
	if _, err := PlanItems(sys, []Item{{Kind: "irq-affinity", Target: "99", Value: "1"}}, fixes); err == nil || !usage.Is(err) {
		t.Errorf("bad explicit item: %v", err)
	}
}

func TestRollbackAllAndStatusAll(t *testing.T) {
	root, sys := fakeBox(t)
	before := readFiles(t, root, fakeFiles)
	store := NewStore(t.TempDir())
	apply := func(items []Item) *Record { return applied(t, store, sys, items).Record() }
	apply(fakeItems[:2])
	// A second transaction changes IRQ 41 again: rolling back newest first
	// ends at the original value.
	apply([]Item{{Kind: "irq-affinity", Target: "41", Value: "3"}, {Kind: "sysctl", Target: "net.core.netdev_max_backlog", Value: "8192"}})
	// A record of a namespace that has gone since.
	gone := &Record{Schema: RecordSchema, ID: newID(), Netns: "gone", State: RecApplied,
		Entries: []Entry{{Change: Change{Kind: "mtu", Target: "a", From: "1500", To: "9000", Restore: &Item{Kind: "mtu", Target: "a", Value: "1500"}}, State: Applied}}}
	if err := store.save(gone); err != nil {
		t.Fatal(err)
	}
	open := func(netns string) (System, error) {
		if netns != "" {
			return nil, fmt.Errorf("netns %s: %w", netns, ErrNetnsGone)
		}
		return sys, nil
	}
	sts, err := store.StatusAll(open)
	if err != nil || len(sts) != 3 {
		t.Fatalf("status: %d records, %v", len(sts), err)
	}
	if sts[0].Entries[0].Holds || !sts[1].Entries[0].Holds || sts[2].Err == "" {
		t.Errorf("status: irq 41 of the first record should have drifted (the second moved it): %+v", sts)
	}

	res, err := store.RollbackAll(context.Background(), open, true, false)
	if err != nil || len(res) != 1 || !strings.Contains(res[0].Dropped, "netns gone is gone") {
		t.Fatalf("rollback --last: %+v %v", res, err)
	}
	res, err = store.RollbackAll(context.Background(), open, false, false)
	if err != nil || len(res) != 2 || res[0].Restored != 2 || res[1].Restored != 2 {
		t.Fatalf("rollback: %+v %v", res, err)
	}
	got := readFiles(t, root, fakeFiles)
	for _, f := range fakeFiles {
		if !sameValue(got[f], before[f]) {
			t.Errorf("%s: %q after rollback, was %q", f, got[f], before[f])
		}
	}
	if res, err := store.RollbackAll(context.Background(), open, false, false); err != nil || len(res) != 0 {
		t.Errorf("rollback of an empty journal: %+v %v", res, err)
	}
	// forget drops without restoring.
	apply(fakeItems[:1])
	if res, err := store.RollbackAll(context.Background(), open, false, true); err != nil || len(res) != 1 || res[0].Restored != 0 {
		t.Errorf("forget: %+v %v", res, err)
	}
	if got := readFiles(t, root, []string{"proc/irq/41/smp_affinity_list"})["proc/irq/41/smp_affinity_list"]; got != "1" {
		t.Errorf("forget restored irq 41 to %q", got)
	}
}
