package sysfs

import (
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"linerate/source/cpuset"
)

// testdata/cm4 models the box of seed 000: a Raspberry Pi CM4 with an
// Intel 82580 (I340-T4, an x4 card) behind the BCM2711 root port in an x1
// slot, the on-board bcmgenet eth0 with its link down, lo, one thermal zone,
// four CPUs sharing one cpufreq policy (cpu2 offline) and the firmware's
// throttle flags. Its links are relative, as a capture's are.
var cm4 = NewFS("testdata/cm4")

func TestFixtureNetDevices(t *testing.T) {
	names, err := cm4.NetDevices()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"eth0", "eth1", "lo"}; !slices.Equal(names, want) {
		t.Errorf("NetDevices = %v, want %v (bonding_masters is a file)", names, want)
	}
}

func TestFixtureNetDevice(t *testing.T) {
	eth1, err := cm4.NetDevice("eth1")
	if err != nil {
		t.Fatal(err)
	}
	up, speed := true, 1000
	want := NetDevice{
		Name: "eth1", Ifindex: 3, Type: 1, Address: "00:1b:21:aa:bb:01", MTU: 1500, TxQueueLen: 1000,
		OperState: "up", Carrier: &up, SpeedMbps: &speed, Duplex: "full",
		Driver: "igb", PCIAddr: "0000:01:00.0", MSIIRQs: []int{55, 56, 57},
		RXQueues: []RXQueue{{0, "8", 0}, {1, "0", 4096}, {10, "0", 0}},
		TXQueues: []TXQueue{{0, "0"}, {1, "0"}, {10, ""}},
	}
	if !reflect.DeepEqual(eth1, want) {
		t.Errorf("eth1:\n got %+v\nwant %+v", eth1, want)
	}

	eth0, err := cm4.NetDevice("eth0")
	if err != nil {
		t.Fatal(err)
	}
	if eth0.Carrier != nil || eth0.SpeedMbps != nil || eth0.Duplex != "" || eth0.OperState != "down" {
		t.Errorf("eth0 (link down) = %+v", eth0)
	}
	if eth0.Driver != "bcmgenet" || eth0.PCIAddr != "" || eth0.Virtual || eth0.MSIIRQs != nil {
		t.Errorf("eth0 (platform device) = %+v", eth0)
	}
	if len(eth0.TXQueues) != 5 || len(eth0.RXQueues) != 1 {
		t.Errorf("eth0 queues: %d rx, %d tx", len(eth0.RXQueues), len(eth0.TXQueues))
	}

	lo, err := cm4.NetDevice("lo")
	if err != nil {
		t.Fatal(err)
	}
	if !lo.Virtual || lo.Type != 772 || lo.Driver != "" || lo.PCIAddr != "" || lo.MTU != 65536 {
		t.Errorf("lo = %+v", lo)
	}

	for _, name := range []string{"eth9", "", "..", "eth1/../lo", "bonding_masters"} {
		if _, err := cm4.NetDevice(name); !errors.Is(err, iofs.ErrNotExist) {
			t.Errorf("NetDevice(%q): %v, want an error wrapping ErrNotExist", name, err)
		} else if !strings.Contains(err.Error(), "testdata/cm4/class/net") {
			t.Errorf("NetDevice(%q) error does not name the file: %v", name, err)
		}
	}
}

func TestFixturePCI(t *testing.T) {
	p, err := cm4.PCIPath("0000:01:00.0")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"0000:01:00.0", "0000:00:00.0"}; !slices.Equal(p, want) {
		t.Errorf("PCIPath = %v, want %v", p, want)
	}
	nic, err := cm4.PCIDevice("0000:01:00.0")
	if err != nil {
		t.Fatal(err)
	}
	want := PCIDevice{Addr: "0000:01:00.0", Vendor: "0x8086", Device: "0x150e", Class: "0x020000", Driver: "igb",
		Upstream: "0000:00:00.0", CurrentLinkSpeed: "5.0 GT/s PCIe", CurrentLinkWidth: "1", MaxLinkSpeed: "5.0 GT/s PCIe", MaxLinkWidth: "4"}
	if nic != want {
		t.Errorf("PCIDevice:\n got %+v\nwant %+v", nic, want)
	}
	rp, err := cm4.PCIDevice("0000:00:00.0")
	if err != nil {
		t.Fatal(err)
	}
	if rp.Upstream != "" || rp.Driver != "pcieport" || rp.Class != "0x060400" {
		t.Errorf("root port = %+v", rp)
	}
	if _, err := cm4.PCIDevice("0000:02:00.0"); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("absent device: %v", err)
	}
	if _, err := cm4.PCIConfig("0000:01:00.0"); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("config not in the fixture: %v", err)
	}
	if _, err := cm4.PCIPath("../../x"); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("PCIPath of a path: %v", err)
	}
}

func TestFixtureCPUs(t *testing.T) {
	cpus, err := cm4.CPUs()
	if err != nil {
		t.Fatal(err)
	}
	f := &CPUFreq{CurKHz: 1500000, MinKHz: 600000, MaxKHz: 1500000, Governor: "ondemand"}
	want := []CPU{{0, true, f}, {1, true, f}, {2, false, f}, {3, true, f}}
	if !reflect.DeepEqual(cpus, want) {
		t.Errorf("CPUs = %+v", cpus)
	}
}

func TestFixtureThermalAndThrottle(t *testing.T) {
	z, err := cm4.ThermalZones()
	if err != nil {
		t.Fatal(err)
	}
	if want := []ThermalZone{{"thermal_zone0", "cpu-thermal", 45277}}; !reflect.DeepEqual(z, want) {
		t.Errorf("ThermalZones = %+v", z)
	}
	v, p, err := cm4.RPiThrottled()
	if err != nil || v != 0x50005 || p != "testdata/cm4/devices/platform/soc/soc:firmware/get_throttled" {
		t.Errorf("RPiThrottled = %#x, %q, %v", v, p, err)
	}
	_, _, err = NewFS("testdata/none").RPiThrottled()
	if !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("RPiThrottled off a Pi: %v", err)
	}
	if z, err := NewFS("testdata/none").ThermalZones(); err != nil || len(z) != 0 {
		t.Errorf("ThermalZones without class/thermal = %v, %v", z, err)
	}
}

func TestParseThrottled(t *testing.T) {
	for in, want := range map[string]uint32{"50005\n": 0x50005, "0x50005": 0x50005, "throttled=0x50000": 0x50000, "0": 0, "80008": 0x80008} {
		if got, err := ParseThrottled(in); err != nil || got != want {
			t.Errorf("ParseThrottled(%q) = %#x, %v; want %#x", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "xyz", "0x123456789"} {
		if _, err := ParseThrottled(bad); err == nil {
			t.Errorf("ParseThrottled(%q): no error", bad)
		}
	}
}

// mkTree builds a tree from "path" → content; content "->target" makes a link.
func mkTree(t *testing.T, files map[string]string) FS {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(c, "->"); ok {
			err = os.Symlink(target, full)
		} else {
			err = os.WriteFile(full, []byte(c), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return NewFS(root)
}

func TestResolveStaysInTheTree(t *testing.T) {
	fs := mkTree(t, map[string]string{
		// An absolute link written as on the live machine is re-rooted.
		"class/net/eth2": "->/sys/devices/pci0000:00/0000:00:1c.0/0000:03:00.0/net/eth2",
		"devices/pci0000:00/0000:00:1c.0/0000:03:00.0/net/eth2/mtu": "9000\n",
		// So is one that leaves out /sys.
		"class/net/eth3":                   "->/devices/virtual/net/eth3",
		"devices/virtual/net/eth3/mtu":     "1500\n",
		"class/net/up":                     "->../../../../../../../../devices/virtual/net/eth3",
		"class/net/loop1":                  "->loop2",
		"class/net/loop2":                  "->loop1",
		"class/net/bad/speed":              "fast\n",
		"class/net/neg/speed":              "-1\n",
		"class/net/neg/carrier":            "0\n",
		"class/net/big/speed":              "4294967295\n",
		"bus/pci/devices/0000:03:00.0":     "->../../../devices/pci0000:00/0000:00:1c.0/0000:03:00.0",
		"devices/system/cpu/cpu0/topology": "",
		"devices/system/cpu/cpu1/online":   "1\n",
		"devices/system/cpu/cpufreq/x":     "",
		"devices/system/cpu/cpu01/online":  "0\n", // not a CPU directory name
	})
	if got, err := fs.resolve("class/net/eth2/mtu"); err != nil || got != "devices/pci0000:00/0000:00:1c.0/0000:03:00.0/net/eth2/mtu" {
		t.Errorf("resolve absolute /sys link = %q, %v", got, err)
	}
	d, err := fs.NetDevice("eth2")
	if err != nil || d.MTU != 9000 || d.PCIAddr != "0000:03:00.0" || d.Virtual {
		t.Errorf("eth2 = %+v, %v", d, err)
	}
	d, err = fs.NetDevice("eth3")
	if err != nil || d.MTU != 1500 || !d.Virtual {
		t.Errorf("eth3 = %+v, %v", d, err)
	}
	// ".." stops at the root instead of walking out of the tree.
	if got, err := fs.resolve("class/net/up"); err != nil || got != "devices/virtual/net/eth3" {
		t.Errorf("resolve through many .. = %q, %v", got, err)
	}
	if _, err := fs.resolve("class/net/loop1/mtu"); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("link loop: %v", err)
	}
	if _, err := fs.NetDevice("bad"); err == nil || !strings.Contains(err.Error(), "class/net/bad/speed") {
		t.Errorf("unparsable speed: %v", err)
	}
	if d, err := fs.NetDevice("neg"); err != nil || d.SpeedMbps != nil || d.Carrier == nil || *d.Carrier {
		t.Errorf("speed -1, carrier 0: %+v, %v", d, err)
	}
	if d, err := fs.NetDevice("big"); err != nil || d.SpeedMbps != nil {
		t.Errorf("speed 4294967295: %+v, %v", d, err)
	}
	if p, err := fs.PCIPath("0000:03:00.0"); err != nil || !slices.Equal(p, []string{"0000:03:00.0", "0000:00:1c.0"}) {
		t.Errorf("PCIPath = %v, %v", p, err)
	}
	cpus, err := fs.CPUs()
	if err != nil || !reflect.DeepEqual(cpus, []CPU{{0, true, nil}, {1, true, nil}}) {
		t.Errorf("CPUs without cpufreq or an online list = %+v, %v", cpus, err)
	}
}

func TestPCIChain(t *testing.T) {
	tests := map[string][]string{
		"devices/pci0000:00/0000:00:00.0/0000:01:00.0":                                                      {"0000:01:00.0", "0000:00:00.0"},
		"devices/pci0000:00/0000:00:03.0/virtio2":                                                           {"0000:00:03.0"},
		"devices/pci0000:00/0000:00:1c.0/0000:01:00.0/0000:02:01.0/0000:03:00.0/net/x":                      {"0000:03:00.0", "0000:02:01.0", "0000:01:00.0", "0000:00:1c.0"},
		"devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:1d.0/10000:e1:00.0":                           {"10000:e1:00.0", "10000:e0:1d.0", "0000:00:0e.0"},
		"devices/platform/scb/fd500000.pcie/pci0000:00/0000:00:00.0/0000:01:00.0/usb2/2-1/2-1:1.0/net/eth1": {"0000:01:00.0", "0000:00:00.0"},
		"devices/virtual/net/lo": nil,
	}
	for p, want := range tests {
		if got := pciChain(p); !slices.Equal(got, want) {
			t.Errorf("pciChain(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestLive reads this machine's /sys; it needs no privilege.
func TestLive(t *testing.T) {
	if _, err := os.Stat("/sys/class/net/lo"); err != nil {
		t.Skip("no /sys/class/net on this machine")
	}
	sys := NewFS("/sys")
	names, err := sys.NetDevices()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, "lo") {
		t.Fatalf("NetDevices = %v, no lo", names)
	}
	for _, name := range names {
		d, err := sys.NetDevice(name)
		if err != nil {
			t.Errorf("NetDevice(%s): %v", name, err)
			continue
		}
		t.Logf("%s: %+v", name, d)
		real, err := filepath.EvalSymlinks("/sys/class/net/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if virt := strings.Contains(real, "/devices/virtual/"); d.Virtual != virt {
			t.Errorf("%s: Virtual = %v, resolved path %s", name, d.Virtual, real)
		}
		if len(d.RXQueues) == 0 || len(d.TXQueues) == 0 {
			t.Errorf("%s: %d rx and %d tx queues", name, len(d.RXQueues), len(d.TXQueues))
		}
		if name == "lo" && (d.Type != 772 || !d.Virtual || d.Ifindex != 1) {
			t.Errorf("lo = %+v", d)
		}
		if d.PCIAddr == "" {
			continue
		}
		path, err := sys.PCIPath(d.PCIAddr)
		if err != nil {
			t.Errorf("PCIPath(%s): %v", d.PCIAddr, err)
			continue
		}
		if path[0] != d.PCIAddr || !strings.Contains(real, "/"+d.PCIAddr+"/") {
			t.Errorf("%s: PCIAddr %s, PCIPath %v, resolved %s", name, d.PCIAddr, path, real)
		}
		pd, err := sys.PCIDevice(d.PCIAddr)
		if err != nil || pd.Vendor == "" || pd.Class == "" {
			t.Errorf("PCIDevice(%s) = %+v, %v", d.PCIAddr, pd, err)
		}
		cfg, err := sys.PCIConfig(d.PCIAddr)
		if err != nil || len(cfg) < 64 {
			t.Errorf("PCIConfig(%s): %d bytes, %v", d.PCIAddr, len(cfg), err)
		}
		// A NIC with MSI interrupts lists them; each must exist in /proc/irq.
		for _, irq := range d.MSIIRQs {
			if _, err := os.Stat(filepath.Join("/proc/irq", strconv.Itoa(irq))); err != nil {
				t.Errorf("%s: msi irq %d: %v", name, irq, err)
			}
		}
	}

	cpus, err := sys.CPUs()
	if err != nil {
		t.Fatal(err)
	}
	online := 0
	for _, c := range cpus {
		if c.Online {
			online++
		}
	}
	if want := countOnline(t); online != want {
		t.Errorf("CPUs: %d online, /sys/devices/system/cpu/online says %d", online, want)
	}
	t.Logf("CPUs: %+v", cpus)
	if _, err := sys.ThermalZones(); err != nil {
		t.Errorf("ThermalZones: %v", err)
	}
	if _, _, err := sys.RPiThrottled(); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("RPiThrottled: %v", err)
	}
}

func countOnline(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Skip("no /sys/devices/system/cpu/online")
	}
	cpus, err := cpuset.ParseList(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return len(cpus)
}
