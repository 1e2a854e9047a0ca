package drivertest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDebianRebootAndReset: a Debian guest (systemd, its own disk) keeps
// what tune persist wrote across lab reboot, and when its NIC's driver is
// unbound and bound again (a reset that re-creates the interface), the
// per-interface unit applies that NIC's items again: tune status exits 0
// both times.
func TestDebianRebootAndReset(t *testing.T) {
	l := upLab(t, "dtd", "pair", "--vm", "b", "--nic", "e1000e", "--vm-image", "debian", "--serve")
	l.must("b", "systemctl", "is-system-running", "--wait")
	irqOf := func() int {
		n, ok := l.inspect("b").irqRefs("a")["a/rx-0"]
		if !ok {
			t.Fatalf("a/rx-0 names no IRQ:\n%s", l.must("b", "cat", "/proc/interrupts"))
		}
		return n
	}
	look := func() string {
		return l.must("b", "sh", "-c", fmt.Sprintf("ethtool -g a | tail -n +7 | head -2; ethtool -c a | grep '^rx-usecs:'; cat /proc/irq/%d/smp_affinity_list /sys/class/net/a/queues/rx-0/rps_cpus", irqOf()))
	}
	l.must("b", "linerate", "tune", "apply", "--set", "rings:a=rx=512", "--set", "coalesce:a=rx-usecs=100",
		"--set", "irq-affinity:a/rx-0=1", "--set", "rps:a/rx-0=1")
	want := look()
	if !strings.Contains(want, "512") || !strings.Contains(want, "rx-usecs: 100") {
		t.Fatalf("after apply:\n%s", want)
	}
	l.must("b", "linerate", "tune", "persist")

	start := time.Now()
	out := l.run("lab", "--state-dir", l.dir, "reboot", l.name, "b")
	if out.code != 0 {
		t.Fatalf("lab reboot: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	t.Logf("%s(lab reboot took %s)", out.stdout, time.Since(start).Round(100*time.Millisecond))
	if r := l.exec("b", "linerate", "tune", "status"); r.code != 0 {
		t.Errorf("tune status after reboot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := look(); got != want {
		t.Errorf("after reboot:\n%s\nwant:\n%s", got, want)
	}
	// The agent is back too: a bench from the other node reaches it.
	if r := l.exec("a", "linerate", "bench", "udp", "--to", "b", "-t", "1", "--rate", "1kpps"); r.code != 0 {
		t.Errorf("bench to b's agent after reboot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A reset of the NIC: its driver unbound and bound again. The device
	// comes back with the driver's defaults; udev names it a again, the
	// lab's agent brings it up as a network manager would, and
	// linerate-tune@a.service applies a's items again.
	l.must("b", "sh", "-c", "d=$(basename $(readlink /sys/class/net/a/device)); echo $d > /sys/bus/pci/drivers/e1000e/unbind; sleep 1; echo $d > /sys/bus/pci/drivers/e1000e/bind")
	deadline := time.Now().Add(90 * time.Second)
	var status result
	for {
		status = l.exec("b", "linerate", "tune", "status")
		if status.code == 0 {
			break
		}
		r := status
		if time.Now().After(deadline) {
			log := l.exec("b", "journalctl", "-u", "linerate-tune@a", "--no-pager")
			t.Fatalf("tune status after the NIC's reset: exit %d\n%s%s\nunit's log:\n%s", r.code, r.stdout, r.stderr, log.stdout)
		}
		time.Sleep(2 * time.Second)
	}
	if got := look(); got != want {
		log := l.exec("b", "journalctl", "-u", "linerate-tune@a", "--no-pager")
		t.Errorf("after the NIC's reset:\n%s\nwant:\n%s\nstatus said:\n%s\nunit's log:\n%s", got, want, status.stdout, log.stdout)
	}
}
