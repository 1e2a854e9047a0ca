package drivertest

import (
	"strings"
	"testing"
)

// TestE1000E: QEMU's Intel 82574 under the e1000e driver, the NIC the
// seeds' boxes (igb, i211) are closest to. The guest's NIC is named after
// its peer (a), its vectors after the NIC (a-rx-0, a-tx-0, a), and
// linerate resolves a/rx-0 to the first of them.
func TestE1000E(t *testing.T) {
	l := upLab(t, "dte", "pair", "--name", "dte", "--vm", "b", "--nic", "e1000e", "--serve")

	b := l.inspect("b")
	n := b.nic(t, "a")
	if n.Driver.Driver != "e1000e" {
		t.Errorf("driver %q, want e1000e", n.Driver.Driver)
	}
	refs := b.irqRefs("a")
	for _, want := range []string{"a/rx-0", "a/tx-0"} {
		if _, ok := refs[want]; !ok {
			t.Errorf("no IRQ named %s: %v", want, refs)
		}
	}
	if n.Rings == nil || n.Rings.RX == 0 || n.Coalesce == nil {
		t.Errorf("rings %+v, coalesce %+v: the driver has both", n.Rings, n.Coalesce)
	}

	plan := l.must("b", "linerate", "tune", "plan", "--set", "irq-affinity:a/rx-0=1")
	if !strings.Contains(plan, "a/rx-0") {
		t.Errorf("plan for a/rx-0:\n%s", plan)
	}

	// Coalescing applied, held, rolled back.
	l.must("b", "linerate", "tune", "apply", "--set", "coalesce:a=rx-usecs=100")
	if out := l.must("b", "ethtool", "-c", "a"); !strings.Contains(out, "rx-usecs: 100\n") {
		t.Errorf("after apply, ethtool -c a:\n%s", out)
	}
	l.must("b", "linerate", "tune", "status")
	l.must("b", "linerate", "tune", "rollback")
	if got := l.inspect("b").nic(t, "a").Coalesce.Params["rx-usecs"]; got != n.Coalesce.Params["rx-usecs"] {
		t.Errorf("rx-usecs %d after rollback, was %d", got, n.Coalesce.Params["rx-usecs"])
	}
}

// TestVirtio: virtio-net with four queue pairs and RSS in the device
// (QEMU's mq=on, rss=on). Its vectors are named after the virtio device,
// not the NIC (virtio1-input.2), and a/rx-2 finds input.2.
func TestVirtio(t *testing.T) {
	l := upLab(t, "dtv", "pair", "--name", "dtv", "--vm", "b", "--nic", "virtio", "--queues", "4", "--vm-cpus", "4")
	b := l.inspect("b")
	n := b.nic(t, "a")
	if n.Driver.Driver != "virtio_net" {
		t.Errorf("driver %q, want virtio_net", n.Driver.Driver)
	}
	if n.Channels == nil || n.Channels.MaxCombined != 4 || n.Channels.Combined != 4 {
		t.Errorf("channels %+v, want 4 of 4", n.Channels)
	}
	if n.RSS == nil || len(n.RSS.Indirection) == 0 {
		t.Errorf("RSS %+v: the device has RSS on", n.RSS)
	}
	refs := b.irqRefs("a")
	for q := 0; q < 4; q++ {
		for _, dir := range []string{"input", "output"} {
			ref := "a/" + dir + "." + string(rune('0'+q))
			if _, ok := refs[ref]; !ok {
				t.Errorf("no IRQ named %s: %v", ref, refs)
			}
		}
	}
	plan := l.must("b", "linerate", "tune", "plan", "--set", "irq-affinity:a/rx-2=1")
	if !strings.Contains(plan, "a/input.2") {
		t.Errorf("a/rx-2 did not resolve to a/input.2:\n%s", plan)
	}
}

// TestVMXNET3: VMware's paravirtual NIC; its vectors are a-rxtx-N and
// a-event-N.
func TestVMXNET3(t *testing.T) {
	l := upLab(t, "dtx", "pair", "--name", "dtx", "--vm", "b", "--nic", "vmxnet3")
	b := l.inspect("b")
	if d := b.nic(t, "a").Driver.Driver; d != "vmxnet3" {
		t.Errorf("driver %q, want vmxnet3", d)
	}
	refs := b.irqRefs("a")
	if _, ok := refs["a/rxtx-0"]; !ok {
		t.Errorf("no IRQ named a/rxtx-0: %v", refs)
	}
	plan := l.must("b", "linerate", "tune", "plan", "--set", "irq-affinity:a/rx-0=1")
	if !strings.Contains(plan, "a/rxtx-0") {
		t.Errorf("a/rx-0 did not resolve to a/rxtx-0:\n%s", plan)
	}
}

// TestExec: lab exec into a guest passes stdin, keeps stdout and stderr
// apart, returns the command's exit status, and a command missing in the
// guest says so.
func TestExec(t *testing.T) {
	l := upLab(t, "dtc", "pair", "--name", "dtc", "--vm", "a")
	r := l.exec("a", "sh", "-c", "echo out; echo err >&2; exit 7")
	if r.stdout != "out\n" || r.stderr != "err\n" || r.code != 7 {
		t.Errorf("got %q %q exit %d, want out, err, 7", r.stdout, r.stderr, r.code)
	}
	if r := l.exec("a", "hostname"); strings.TrimSpace(r.stdout) != "a" {
		t.Errorf("hostname %q in node a", r.stdout)
	}
	if r := l.exec("a", "no-such-command"); r.code != 127 || !strings.Contains(r.stderr, "no-such-command") {
		t.Errorf("missing command: exit %d %q", r.code, r.stderr)
	}
	// The guest reaches its peer, a namespace, by name.
	l.must("a", "ping", "-c", "1", "-W", "5", "b")
}
