package box

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"linerate/internal/usage"
	"linerate/source"
	"linerate/source/ethtool"
	"linerate/source/procfs"
	"linerate/source/sysfs"
)

func TestActionsName(t *testing.T) {
	cases := []struct {
		actions, iface string
		want           bool
	}{
		{"eth1", "eth1", true}, // RouterPi: r8169's one vector is named after the interface
		{"enp4s0-rx-0", "enp4s0", true},
		{"eth0-TxRx-1", "eth0", true},
		{"eth10-rx-0", "eth1", false},
		{"eth1", "eth10", false},
		{"virtio2-input.0", "eth0", false},
		{"ahci[0000:00:11.0], eth0", "eth0", true},
		{"eth0:lsc", "eth0", true},
	}
	for _, c := range cases {
		if _, got := procfs.ActionLabel(c.actions, c.iface); got != c.want {
			t.Errorf("procfs.ActionLabel(%q, %q) = %v", c.actions, c.iface, got)
		}
	}
}

func TestKind(t *testing.T) {
	cases := []struct {
		nd   sysfs.NetDevice
		d    *ethtool.DriverInfo
		want NICKind
	}{
		{sysfs.NetDevice{Type: 772, Virtual: true}, nil, "loopback"},
		{sysfs.NetDevice{Type: 1, PCIAddr: "0000:01:00.0", Driver: "igb"}, &ethtool.DriverInfo{Driver: "igb"}, "physical"},
		{sysfs.NetDevice{Type: 1, Driver: "bcmgenet"}, nil, "physical"},
		{sysfs.NetDevice{Type: 1, Virtual: true}, &ethtool.DriverInfo{Driver: "veth"}, "veth"},
		{sysfs.NetDevice{Type: 1, Virtual: true}, &ethtool.DriverInfo{Driver: "802.1Q VLAN Support"}, "vlan"},
		{sysfs.NetDevice{Type: 1, Virtual: true}, &ethtool.DriverInfo{Driver: "something"}, "virtual"},
		{sysfs.NetDevice{Type: 1, Virtual: true}, nil, "virtual"},
	}
	for _, c := range cases {
		if got := kind(c.nd, c.d); got != c.want {
			t.Errorf("kind(%+v, %+v) = %q, want %q", c.nd, c.d, got, c.want)
		}
	}
}

func TestDecodeThrottle(t *testing.T) {
	// 0x50005: under-voltage now and since boot, throttled now and since
	// boot (the value the Raspberry Pi documentation explains).
	th := DecodeThrottle(0x50005, "x")
	if !th.UnderVoltage || !th.Throttled || th.FreqCapped || th.SoftTempLimit ||
		!th.UnderVoltageOccurred || !th.ThrottledOccurred || th.FreqCappedOccurred || th.SoftTempLimitOccurred {
		t.Errorf("DecodeThrottle(0x50005) = %+v", th)
	}
	if z := DecodeThrottle(0, ""); *z != (Throttle{}) {
		t.Errorf("DecodeThrottle(0) = %+v", z)
	}
}

const thisMachine = "../testdata/captures/this-machine"

func openCapture(t *testing.T, path string) source.Source {
	t.Helper()
	src, err := source.OpenCapture(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// TestCollectThisMachine checks values of the recorded capture of the
// development machine (a VM with a virtio_net eth0 on PCI 0000:00:03.0).
func TestCollectThisMachine(t *testing.T) {
	b, err := Collect(context.Background(), openCapture(t, thisMachine))
	if err != nil {
		t.Fatal(err)
	}
	eth0, ok := b.NIC("eth0")
	if !ok {
		t.Fatalf("no eth0 in %+v", b.NICs)
	}
	if eth0.Kind != "physical" || eth0.MTU != 1400 || eth0.MaxMTU != 65535 || eth0.MinMTU != 68 {
		t.Errorf("eth0: kind %q mtu %d range %d-%d", eth0.Kind, eth0.MTU, eth0.MinMTU, eth0.MaxMTU)
	}
	if eth0.Driver == nil || eth0.Driver.Driver != "virtio_net" || eth0.PCIAddr != "0000:00:03.0" {
		t.Errorf("eth0 driver %+v at %q", eth0.Driver, eth0.PCIAddr)
	}
	if eth0.IRQSource != "msi_irqs" || !slices.Equal(eth0.IRQs, []int{37, 38, 39}) {
		t.Errorf("eth0 IRQs %v from %q", eth0.IRQs, eth0.IRQSource)
	}
	if q, ok := b.IRQ(38); !ok || q.Name != "virtio2-input.0" || q.NIC != "eth0" || len(q.PerCPU) != 2 || !slices.Equal(q.AffinityList, []int{0, 1}) {
		t.Errorf("irq 38 = %+v", q)
	}
	if eth0.Channels == nil || eth0.Channels.Combined != 1 {
		t.Errorf("channels %+v", eth0.Channels)
	}
	if _, ok := eth0.Unsupported["queue_counters"]; !ok {
		t.Error("virtio_net here has no per-queue packet counters, but nothing says so")
	}
	if lo, _ := b.NIC("lo"); lo == nil || lo.Kind != "loopback" || lo.Unsupported["driver"] != "not supported by this driver" {
		t.Errorf("lo = %+v", lo)
	}
	if d, ok := b.PCIeDev("0000:00:03.0"); !ok || d.Vendor != "0x1af4" || d.Unsupported["mps"] == "" {
		t.Errorf("pcie 0000:00:03.0 = %+v", d)
	}
	if len(b.CPUs) != 2 || b.IRQBalance == nil || *b.IRQBalance {
		t.Errorf("cpus %+v irqbalance %v", b.CPUs, b.IRQBalance)
	}
	if v, ok := b.Sysctl("net.core.netdev_budget"); !ok || v != "300" {
		t.Errorf("netdev_budget = %q, %v", v, ok)
	}
	if b.Unsupported["throttle"] == "" || b.Throttle != nil {
		t.Error("a VM has no Raspberry Pi throttle flags, but nothing says so")
	}
	if b.Counters == nil || !b.Counters.Time.Equal(b.Meta.Time) || b.Counters.Ethtool["eth0"] == nil {
		t.Errorf("counters %+v", b.Counters)
	}

	only, err := Collect(context.Background(), openCapture(t, thisMachine), "lo", "eth0", "lo")
	if err != nil {
		t.Fatal(err)
	}
	if len(only.NICs) != 2 || only.NICs[0].Name != "lo" || len(only.IRQs) != 3 {
		t.Errorf("Collect(lo, eth0) gave %d NICs starting %q and %d IRQs", len(only.NICs), only.NICs[0].Name, len(only.IRQs))
	}
	_, err = Collect(context.Background(), openCapture(t, thisMachine), "eth9")
	if err == nil || !usage.Is(err) || !strings.HasPrefix(err.Error(), "no interface eth9 (have: eth0, ifb0, ifb1, lo)") {
		t.Errorf("unknown interface: %v", err)
	}
}

// TestCollectIRQFallback removes msi_irqs from a copy of the capture: the
// IRQs are then found by the name of the virtio device the driver names
// them after (virtio2-input.0), by the PCI address in /proc/interrupts'
// chip names when no action names the device, and, when an action is
// named after the interface (RouterPi's eth1), by name.
func TestCollectIRQFallback(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cap")
	if out, err := exec.Command("cp", "-a", thisMachine, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if err := os.RemoveAll(filepath.Join(dir, "sys/devices/pci0000:00/0000:00:03.0/msi_irqs")); err != nil {
		t.Fatal(err)
	}
	b, err := Collect(context.Background(), openCapture(t, dir), "eth0")
	if err != nil {
		t.Fatal(err)
	}
	if n := b.NICs[0]; n.IRQSource != "proc/interrupts" || n.IRQDevice != "virtio2" || !slices.Equal(n.IRQs, []int{37, 38, 39}) {
		t.Errorf("by the device's name: %v from %q (device %q)", n.IRQs, n.IRQSource, n.IRQDevice)
	}

	irqf := filepath.Join(dir, "proc", "interrupts")
	text, err := os.ReadFile(irqf)
	if err != nil {
		t.Fatal(err)
	}
	other := strings.ReplaceAll(string(text), "virtio2-", "other-")
	if err := os.WriteFile(irqf, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err = Collect(context.Background(), openCapture(t, dir), "eth0")
	if err != nil {
		t.Fatal(err)
	}
	if n := b.NICs[0]; n.IRQSource != "proc/interrupts chip" || !slices.Equal(n.IRQs, []int{37, 38, 39}) {
		t.Errorf("by chip: %v from %q", n.IRQs, n.IRQSource)
	}

	renamed := strings.Replace(other, "other-input.0", "eth0", 1)
	if err := os.WriteFile(irqf, []byte(renamed), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err = Collect(context.Background(), openCapture(t, dir), "eth0")
	if err != nil {
		t.Fatal(err)
	}
	if n := b.NICs[0]; n.IRQSource != "proc/interrupts" || !slices.Equal(n.IRQs, []int{38}) {
		t.Errorf("by name: %v from %q", n.IRQs, n.IRQSource)
	}
	if q, _ := b.IRQ(38); q == nil || q.Name != "eth0" {
		t.Errorf("irq 38 = %+v", q)
	}
}
