package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"linerate/tune"
)

// tuneRoot is a directory laid out like / for a small box: IRQ 41 on all
// four CPUs, eth1 with one rx queue and RPS off, netdev_max_backlog 1000.
func tuneRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range map[string]string{
		"proc/irq/41/smp_affinity_list":           "0-3\n",
		"sys/devices/system/cpu/online":           "0-3\n",
		"sys/class/net/eth1/queues/rx-0/rps_cpus": "0\n",
		"proc/sys/net/core/netdev_max_backlog":    "1000\n",
		"proc/sys/net/core/rmem_max":              "8388608\n",
		"boot/cmdline.txt":                        "root=/dev/mmcblk0p2 rootwait\n",
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestTunePlanText(t *testing.T) {
	sys := tune.NewDir(tuneRoot(t))
	p, err := tune.PlanFixes(sys, []tune.Item{
		{Kind: "irq-affinity", Target: "41", Value: "1", Note: "irq-single-cpu"},
		{Kind: "rps", Target: "eth1/rx-0", Value: "1-3"},
		{Kind: "sysctl", Target: "net.core.netdev_max_backlog", Value: "4096"},
		{Kind: "sysctl", Target: "net.core.rmem_max", Value: "8388608"},
		{Kind: "coalesce", Target: "eth1", Value: "rx-usecs=100"},
		{Kind: "boot", Target: "cmdline.txt", Value: "pci=pcie_bus_perf"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := TunePlan(&b, p); err != nil {
		t.Fatal(err)
	}
	want := `plan for this host: 3 changes
  KIND          TARGET                       NOW      NEW
  irq-affinity  41                           0-3   →  1    (irq-single-cpu)
  rps           eth1/rx-0                    none  →  1-3
  sysctl        net.core.netdev_max_backlog  1000  →  4096
already set (1):
  sysctl net.core.rmem_max = 8388608
skipped (1):
  coalesce:eth1=rx-usecs=100: ethtool on dir ` + sysRoot(sys) + `: not supported by this driver
by hand — linerate never applies these:
  boot cmdline.txt: add pci=pcie_bus_perf before rootwait in /boot/cmdline.txt (it is a single line), then reboot
`
	if got := b.String(); got != want {
		t.Errorf("plan text:\n%s\nwant:\n%s", got, want)
	}
	b.Reset()
	if err := JSON(&b, TunePlanDoc(p)); err != nil || !strings.Contains(b.String(), `"restore": {`) {
		t.Errorf("plan JSON: %v\n%s", err, b.String())
	}
}

// sysRoot is the directory a Dir system stands on, as its name says it.
func sysRoot(sys tune.System) string { return strings.TrimPrefix(sys.Name(), "dir ") }

func TestTuneStatusText(t *testing.T) {
	r := &tune.Record{ID: "20260101T000000.000000000-1", Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.Local), State: tune.RecApplied}
	sts := []tune.RecordStatus{{Record: r, Entries: []tune.EntryStatus{
		{Entry: tune.Entry{Change: tune.Change{Kind: "irq-affinity", Target: "41", From: "0-3", To: "1"}, State: tune.Applied}, Live: "1", Holds: true},
		{Entry: tune.Entry{Change: tune.Change{Kind: "rps", Target: "eth1/rx-0", From: "none", To: "1-3"}, State: tune.Changing}, Live: "none"},
	}}}
	var b bytes.Buffer
	if err := TuneStatus(&b, sts); err != nil {
		t.Fatal(err)
	}
	want := `20260101T000000.000000000-1  2026-01-01 00:00:00  this host  applied
  irq-affinity  41         0-3   →  1    holds
  rps           eth1/rx-0  none  →  1-3  DRIFTED, now none (journal: changing)
1 change no longer holds (irqbalance, a driver reload or a person may have changed them)
`
	if got := b.String(); got != want {
		t.Errorf("status:\n%s\nwant:\n%s", got, want)
	}
	b.Reset()
	TuneStatus(&b, nil)
	if b.String() != "nothing applied: the journal is empty\n" {
		t.Errorf("empty status: %q", b.String())
	}
}

func TestTuneShort(t *testing.T) {
	long := strings.Repeat("0,1,", 64)
	long = long[:len(long)-1]
	if got := tuneShort(long); len(got) > 70 || !strings.HasSuffix(got, "… (128 values)") {
		t.Errorf("short: %q", got)
	}
	if tuneShort("rx=4096") != "rx=4096" {
		t.Error("short changed a short value")
	}
}
