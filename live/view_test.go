package live

import (
	"testing"
	"time"

	"linerate/box"
	"linerate/source/procfs"
	"linerate/source/sysfs"
)

// A View over the CM4 capture names the interrupts from its
// /proc/interrupts and gives each NIC its own: eth1 through its PCI
// device's msi_irqs, eth0 (no msi_irqs) through the action's name.
func TestViewNamesInterrupts(t *testing.T) {
	root := "../testdata/captures/cm4-i340"
	looks := 0
	now := time.Unix(1000, 0)
	v := &View{Proc: procfs.NewFS(root + "/proc"), Sys: sysfs.NewFS(root + "/sys"),
		Up:  func() ([]string, error) { looks++; return []string{"eth0", "eth1"}, nil },
		now: func() time.Time { return now }}
	r := box.Rates{Seconds: 1,
		CPU:        []box.CPUUse{{ID: 0}, {ID: 1}, {ID: 2}, {ID: 3}},
		Interrupts: map[string][]float64{"38": {100, 0, 0, 0}, "46": {0, 2000, 0, 0}, "47": {0, 0, 0, 0}},
		NetDev:     map[string]box.NetDevRate{"eth0": {}, "eth1": {RxPps: 2000}, "eth2": {}},
	}
	s := v.Snapshot(r)
	want := map[string]IRQInfo{"38": {Name: "eth0", Iface: "eth0"}, "46": {Name: "eth1", Iface: "eth1"}}
	if len(s.IRQs) != len(want) {
		t.Fatalf("IRQs %+v, want 38 and 46 (47 is eth2's, not shown, and did not fire)", s.IRQs)
	}
	for _, q := range s.IRQs {
		if w := want[q.IRQ]; q.Name != w.Name || q.Iface != w.Iface {
			t.Errorf("IRQ %s: %q of %q, want %q of %q", q.IRQ, q.Name, q.Iface, w.Name, w.Iface)
		}
	}
	if len(s.Ifaces) != 2 || s.Ifaces[1].Name != "eth1" || s.Ifaces[1].RxPps != 2000 {
		t.Errorf("ifaces %+v, want eth0 and eth1, those up", s.Ifaces)
	}
	// Within 10 s the view does not look again; after, it does.
	now = now.Add(9 * time.Second)
	v.Snapshot(r)
	if looks != 1 {
		t.Errorf("looked %d times at the interfaces up within 10s", looks)
	}
	now = now.Add(time.Second)
	v.Snapshot(r)
	if looks != 2 {
		t.Errorf("looked %d times after 10s, want 2", looks)
	}
	// An interrupt never seen makes it look at once.
	r.Interrupts["999"] = []float64{1, 0, 0, 0}
	v.Snapshot(r)
	if looks != 3 {
		t.Errorf("a new interrupt: looked %d times, want 3", looks)
	}
	// 999 is not in the capture's /proc/interrupts: once looked for, it
	// stays unnamed without another look.
	v.Snapshot(r)
	if looks != 3 {
		t.Errorf("an interrupt the file does not name: looked %d times, want 3", looks)
	}
}

func TestActionOf(t *testing.T) {
	ifaces := []string{"eth0", "eth1", "enp4s0"}
	for actions, want := range map[string]string{
		"eth0": "eth0", "eth1-rx-0": "eth1", "enp4s0-TxRx-3": "enp4s0", "ahci, eth0": "eth0",
		"eth10": "", "virtio2-input.0": "", "": "",
	} {
		if got := actionOf(actions, ifaces); got != want {
			t.Errorf("actionOf(%q) = %q, want %q", actions, got, want)
		}
	}
}
