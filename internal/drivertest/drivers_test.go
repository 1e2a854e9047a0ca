package drivertest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"linerate/lab"
)

// TestE1000E: QEMU's Intel 82574 under the e1000e driver, the NIC the
// seeds' boxes (igb, i211) are closest to. The guest's NIC is named after
// its peer (a), its vectors after the NIC (a-rx-0, a-tx-0, a), and
// linerate resolves a/rx-0 to the first of them.
func TestE1000E(t *testing.T) {
	l := upLab(t, "dte", "pair", "--vm", "b", "--nic", "e1000e", "--serve")

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
	l.captured("b", "a", "e1000e")

	plan := l.must("b", "linerate", "tune", "plan", "--set", "irq-affinity:a/rx-0=1")
	if !strings.Contains(plan, "a/rx-0") {
		t.Errorf("plan for a/rx-0:\n%s", plan)
	}

	// Coalescing applied, held, rolled back. e1000e keeps coalescing as
	// an interrupt rate, so 7000 µs comes back as 7142: what the driver
	// keeps is the new value, said as such.
	out := l.must("b", "linerate", "tune", "apply", "--set", "coalesce:a=rx-usecs=7000")
	if !strings.Contains(out, "keeps rx-usecs=7142 where rx-usecs=7000 was asked") {
		t.Errorf("apply does not say what the driver kept:\n%s", out)
	}
	if out := l.must("b", "ethtool", "-c", "a"); !strings.Contains(out, "rx-usecs: 7142\n") {
		t.Errorf("after apply, ethtool -c a:\n%s", out)
	}
	l.must("b", "linerate", "tune", "status")
	l.must("b", "linerate", "tune", "rollback")
	if got := l.inspect("b").nic(t, "a").Coalesce.Params["rx-usecs"]; got != n.Coalesce.Params["rx-usecs"] {
		t.Errorf("rx-usecs %d after rollback, was %d", got, n.Coalesce.Params["rx-usecs"])
	}

	// A ring change resets e1000e's link: the IRQ affinity planned with
	// it is applied after the reset, to the interrupt found by name then,
	// and apply says when the carrier came back.
	irq := refs["a/rx-0"]
	affinity := func() string {
		return strings.TrimSpace(l.must("b", "cat", fmt.Sprintf("/proc/irq/%d/smp_affinity_list", irq)))
	}
	before := affinity()
	out = l.must("b", "linerate", "tune", "apply", "--set", "irq-affinity:a/rx-0=1", "--set", "rings:a=rx=500")
	if !strings.Contains(out, "carrier back after") || !strings.Contains(out, "keeps rx=504 where rx=500 was asked") {
		t.Errorf("apply of rings:\n%s", out)
	}
	if i, j := strings.Index(out, "  rings"), strings.Index(out, "  irq-affinity"); i < 0 || j < i {
		t.Errorf("the ring change (a link reset) is not planned first:\n%s", out)
	}
	if got := affinity(); got != "1" {
		t.Errorf("IRQ %d affinity %s after apply, want 1", irq, got)
	}
	l.must("b", "linerate", "tune", "status")
	l.must("b", "linerate", "tune", "rollback")
	if got := affinity(); got != before {
		t.Errorf("IRQ %d affinity %s after rollback, was %s", irq, got, before)
	}
	if got := l.inspect("b").nic(t, "a").Rings.RX; got != n.Rings.RX {
		t.Errorf("rx ring %d after rollback, was %d", got, n.Rings.RX)
	}

	// MTU: up to the driver's maximum, which the error names past it.
	if n.MaxMTU < 9000 {
		t.Fatalf("e1000e's max MTU %d", n.MaxMTU)
	}
	r := l.exec("b", "linerate", "tune", "plan", "--set", fmt.Sprintf("mtu:a=%d", n.MaxMTU+1))
	if r.code != 2 || !strings.Contains(r.stderr, fmt.Sprint(n.MaxMTU)) {
		t.Errorf("MTU past the maximum: exit %d, %s", r.code, r.stderr)
	}
	// XPS on a NIC of one tx queue: the kernel keeps none, and says so
	// by ENOENT on a file that is there.
	if r := l.exec("b", "linerate", "tune", "plan", "--set", "xps:a/tx-0=1"); r.code != 2 || !strings.Contains(r.stderr, "single tx queue") {
		t.Errorf("xps on e1000e: exit %d, %s", r.code, r.stderr)
	}

	// kill -9 between changes on a real driver: rollback puts back
	// exactly what was there.
	look := func() string {
		return l.must("b", "sh", "-c", fmt.Sprintf("ethtool -g a | tail -n +7; ethtool -c a | grep -E '^(rx|tx)-usecs:'; cat /proc/irq/%d/smp_affinity_list /sys/class/net/a/mtu /sys/class/net/a/queues/rx-0/rps_cpus", irq))
	}
	was := look()
	r = l.exec("b", "env", "LINERATE_TUNE_KILL_AFTER=3", "linerate", "tune", "apply",
		"--set", "rings:a=rx=512", "--set", "mtu:a=9000", "--set", "coalesce:a=rx-usecs=100",
		"--set", "irq-affinity:a/rx-0=1", "--set", "rps:a/rx-0=1")
	if r.code != 128+9 {
		t.Fatalf("apply killed after 3 changes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if look() == was {
		t.Fatalf("nothing changed before the kill:\n%s", was)
	}
	l.must("b", "linerate", "tune", "rollback")
	if now := look(); now != was {
		t.Errorf("after kill -9 and rollback:\n%s\nwas:\n%s", now, was)
	}
}

// TestVirtio: virtio-net with four queue pairs and RSS in the device
// (QEMU's mq=on, rss=on). Its vectors are named after the virtio device,
// not the NIC (virtio1-input.2), and a/rx-2 finds input.2.
func TestVirtio(t *testing.T) {
	l := upLab(t, "dtv", "pair", "--vm", "b", "--nic", "virtio", "--queues", "4", "--vm-cpus", "4")
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
	l.captured("b", "a", "virtio_net")
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
	affinity := func(ref string) string {
		return strings.TrimSpace(l.must("b", "cat", fmt.Sprintf("/proc/irq/%d/smp_affinity_list", refs[ref])))
	}
	before := affinity("a/input.2")
	l.must("b", "linerate", "tune", "apply", "--set", "irq-affinity:a/rx-2=1")
	if got := affinity("a/input.2"); got != "1" {
		t.Errorf("a/input.2 affinity %s, want 1", got)
	}
	l.must("b", "linerate", "tune", "rollback")
	if got := affinity("a/input.2"); got != before {
		t.Errorf("a/input.2 affinity %s after rollback, was %s", got, before)
	}

	// XPS: transmits of queue 1 from CPU 1 only.
	l.must("b", "linerate", "tune", "apply", "--set", "xps:a/tx-1=1")
	if got := strings.TrimSpace(l.must("b", "cat", "/sys/class/net/a/queues/tx-1/xps_cpus")); got != "2" {
		t.Errorf("tx-1's xps_cpus %s, want 2 (CPU 1)", got)
	}
	l.must("b", "linerate", "tune", "rollback")

	// Channels 4 → 2 → 4, each a link reset waited for.
	out := l.must("b", "linerate", "tune", "apply", "--set", "channels:a=combined=2")
	if !strings.Contains(out, "carrier back after") {
		t.Errorf("channels apply:\n%s", out)
	}
	if c := l.inspect("b").nic(t, "a").Channels; c.Combined != 2 {
		t.Errorf("combined %d after apply, want 2", c.Combined)
	}
	l.must("b", "linerate", "tune", "status")
	l.must("b", "linerate", "tune", "rollback")
	if c := l.inspect("b").nic(t, "a").Channels; c.Combined != 4 {
		t.Errorf("combined %d after rollback, want 4", c.Combined)
	}

	// The RSS table spread over two queues (ethtool -X a equal 2).
	l.must("b", "linerate", "tune", "apply", "--set", "rss-equal:a=2")
	for i, q := range l.inspect("b").nic(t, "a").RSS.Indirection {
		if q != i%2 {
			t.Fatalf("indirection[%d] = %d after rss-equal 2", i, q)
		}
	}
	l.must("b", "linerate", "tune", "rollback")
	if got := l.inspect("b").nic(t, "a").RSS.Indirection; !equalInts(got, n.RSS.Indirection) {
		t.Errorf("indirection after rollback %v, was %v", got, n.RSS.Indirection)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestVMXNET3: VMware's paravirtual NIC; its vectors are a-rxtx-N and
// a-event-N.
func TestVMXNET3(t *testing.T) {
	l := upLab(t, "dtx", "pair", "--vm", "b", "--nic", "vmxnet3")
	b := l.inspect("b")
	if d := b.nic(t, "a").Driver.Driver; d != "vmxnet3" {
		t.Errorf("driver %q, want vmxnet3", d)
	}
	l.captured("b", "a", "vmxnet3")
	refs := b.irqRefs("a")
	if _, ok := refs["a/rxtx-0"]; !ok {
		t.Errorf("no IRQ named a/rxtx-0: %v", refs)
	}
	plan := l.must("b", "linerate", "tune", "plan", "--set", "irq-affinity:a/rx-0=1")
	if !strings.Contains(plan, "a/rxtx-0") {
		t.Errorf("a/rx-0 did not resolve to a/rxtx-0:\n%s", plan)
	}
	// Rings: vmxnet3 quiesces and reactivates the device, and keeps rx
	// rings in multiples of its own.
	rx := b.nic(t, "a").Rings.RX
	out := l.must("b", "linerate", "tune", "apply", "--set", "rings:a=rx=500")
	t.Logf("rings on vmxnet3:\n%s", out)
	l.must("b", "linerate", "tune", "status")
	l.must("b", "linerate", "tune", "rollback")
	if got := l.inspect("b").nic(t, "a").Rings.RX; got != rx {
		t.Errorf("rx ring %d after rollback, was %d", got, rx)
	}
	// Coalescing: QEMU's vmxnet3 is a device of version 1, which the
	// driver gives no coalescing (it needs version 3): the plan says so.
	if r := l.exec("b", "linerate", "tune", "plan", "--set", "coalesce:a=rx-usecs=100"); r.code != 2 || !strings.Contains(r.stderr, "vmxnet3") {
		t.Errorf("coalesce on vmxnet3: exit %d %s", r.code, r.stderr)
	}
}

// TestExec: lab exec into a guest passes stdin, keeps stdout and stderr
// apart, returns the command's exit status, and a command missing in the
// guest says so.
func TestExec(t *testing.T) {
	l := upLab(t, "dtc", "pair", "--vm", "a", "--rate", "100M", "--mtu", "4000")
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
	// --rate caps both ways: a tbf on the guest's NIC and on its tap;
	// --mtu is on both too.
	for _, node := range []string{"a", "b"} {
		iface := map[string]string{"a": "b", "b": "a"}[node]
		out := l.must(node, "/usr/sbin/tc", "qdisc", "show", "dev", iface)
		if !strings.Contains(out, "tbf") || !strings.Contains(out, "rate 100Mbit") {
			t.Errorf("%s's %s: %s", node, iface, out)
		}
		if mtu := strings.TrimSpace(l.must(node, "cat", "/sys/class/net/"+iface+"/mtu")); mtu != "4000" {
			t.Errorf("%s's %s has MTU %s, want 4000", node, iface, mtu)
		}
	}

	// QEMU killed under the lab: lab list says the guest is gone, and a
	// command for it is refused at once, saying why and where to look.
	exec.Command("pkill", "-9", "-f", "qemu.*"+l.dir).Run()
	time.Sleep(500 * time.Millisecond)
	if r := l.run("lab", "--state-dir", l.dir, "list"); !strings.Contains(r.stdout, "0/1 running") {
		t.Errorf("lab list after QEMU was killed:\n%s", r.stdout)
	}
	start := time.Now()
	r = l.exec("a", "true")
	if r.code != 1 || !strings.Contains(r.stderr, "is not running") || !strings.Contains(r.stderr, "console.log") {
		t.Errorf("exec into a dead guest: exit %d, %s", r.code, r.stderr)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("exec into a dead guest took %s to fail", d)
	}
}

// TestLabUpKilled: lab up killed with -9 while its guest boots leaves a
// journal that lab down removes whole: the supervisor, QEMU, the taps,
// the namespaces, the guest's files.
func TestLabUpKilled(t *testing.T) {
	l := newLab(t, "dtk")
	cmd := exec.Command(l.bin, "lab", "--state-dir", l.dir, "up", "pair", "--name", l.name, "--vm", "b")
	cmd.Env = append(os.Environ(), lab.EnvCacheDir+"="+cacheDir(t))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the guest's supervisor is recorded and its QEMU runs:
	// the guest is booting.
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := lab.Dir(l.dir).Load(l.name)
		if err == nil && len(st.Guests) > 0 && exec.Command("pgrep", "-f", "qemu.*"+l.dir).Run() == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no guest recorded within a minute (%v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if r := l.run("lab", "--state-dir", l.dir, "list"); !strings.Contains(r.stdout, "incomplete") || !strings.Contains(r.stdout, "1/1 running") {
		t.Errorf("lab list after kill -9 of lab up:\n%s", r.stdout)
	}
	if out, _ := exec.Command("pgrep", "-f", "qemu.*"+l.dir).Output(); len(out) == 0 {
		t.Errorf("no QEMU running after lab up was killed: nothing to clean up, so nothing tested")
	}
	r := l.run("lab", "--state-dir", l.dir, "down", l.name)
	if r.code != 0 {
		t.Fatalf("lab down after kill -9: exit %d %s", r.code, r.stderr)
	}
	if out, _ := exec.Command("pgrep", "-af", "qemu.*"+l.dir).Output(); len(out) > 0 {
		t.Errorf("QEMU left after lab down: %s", out)
	}
}

// TestBootStall: a guest that says nothing for half its boot timeout is
// reset once, and lab up says so. The stall is QEMU stopped (SIGSTOP)
// from its guest kernel's first line until the supervisor has sent the
// reset; once it runs again the reset boots the guest afresh, which
// answers within the other half. Without the reset QEMU stays stopped
// for the whole timeout and lab up fails.
func TestBootStall(t *testing.T) {
	l := newLab(t, "dts")
	const timeout = 40 * time.Second
	cmd := exec.Command(l.bin, "lab", "--state-dir", l.dir, "up", "pair", "--name", l.name, "--vm", "b", "--vm-cpus", "1",
		"--vm-boot-timeout", timeout.String())
	cmd.Env = append(os.Environ(), lab.EnvCacheDir+"="+cacheDir(t))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	guest := filepath.Join(l.dir, l.name+".vm", "b")
	// QEMU is stopped once its guest's kernel has printed: a kernel
	// that stops mid-boot. (Stopped before its first instruction, the
	// reset lands as QEMU starts, where it can leave SeaBIOS spinning:
	// docs/lab.md, "A boot that hangs".)
	var qemu int
	deadline := time.Now().Add(time.Minute)
	for qemu == 0 {
		pid, _ := exec.Command("pgrep", "-f", "qemu.*"+l.dir).Output()
		if fi, err := os.Stat(filepath.Join(guest, "console.log")); len(pid) > 0 && err == nil && fi.Size() > 0 {
			fmt.Sscan(string(pid), &qemu)
		} else if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no QEMU whose guest printed within a minute:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopped := time.Now()
	if err := syscall.Kill(qemu, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// It runs again once its supervisor has sent the reset (the monitor
	// reads it then), or after the whole timeout if it never does.
	for time.Since(stopped) < timeout {
		log, _ := os.ReadFile(filepath.Join(guest, "supervisor.log"))
		if strings.Contains(string(log), "resetting the guest") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	syscall.Kill(qemu, syscall.SIGCONT)
	resumed := time.Now()
	if err := <-done; err != nil {
		t.Fatalf("lab up with a stalled boot: %v\n%s", err, out.String())
	}
	t.Logf("QEMU stopped for %s; lab up done %s after it ran again:\n%s", resumed.Sub(stopped).Round(100*time.Millisecond),
		time.Since(resumed).Round(100*time.Millisecond), out.String())
	if !strings.Contains(out.String(), "reset once while booting: no answer from the agent "+(timeout/2).String()+" after the boot began") {
		t.Errorf("lab up does not say the guest was reset:\n%s", out.String())
	}
	if r := l.exec("b", "hostname"); strings.TrimSpace(r.stdout) != "b" {
		t.Errorf("hostname %q in node b after the reset", r.stdout)
	}
	log, _ := os.ReadFile(filepath.Join(guest, "supervisor.log"))
	if n := strings.Count(string(log), "resetting the guest (once)"); n != 1 {
		t.Errorf("%d resets in the supervisor's log, want 1:\n%s", n, log)
	}
}

// TestDemoVM: `linerate demo --vm`, the seeds' story with the router a
// guest whose NICs are e1000e: the experiments through it, the diagnosis
// and tune auto run in it, every change rolled back, the lab gone, and
// the page saying the router was a QEMU guest and under what.
func TestDemoVM(t *testing.T) {
	l := newLab(t, "dtdemo")
	page := filepath.Join(t.TempDir(), "demo.html")
	r := l.run("demo", "--vm", "--quick", "--name", l.name, "--no-save", "--json", "-o", page)
	if r.code != 0 {
		t.Fatalf("demo --vm: exit %d\n%s", r.code, r.stderr)
	}
	var rep struct {
		Guest     string `json:"guest"`
		Diagnosis *struct {
			Findings []struct {
				Rule string `json:"rule"`
			} `json:"findings"`
		} `json:"diagnosis"`
		Tuning *struct {
			Auto *struct {
				Baseline []json.RawMessage `json:"baseline"`
			} `json:"auto"`
			JournalRemoved bool `json:"journal_removed"`
		} `json:"tune"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("demo --json: %v\n%s", err, r.stdout)
	}
	if !strings.Contains(rep.Guest, "QEMU guest under") || !strings.Contains(rep.Guest, "e1000e") {
		t.Errorf("report's guest: %q", rep.Guest)
	}
	if rep.Diagnosis == nil || rep.Tuning == nil || rep.Tuning.Auto == nil || len(rep.Tuning.Auto.Baseline) == 0 {
		t.Fatalf("diagnosis %+v, tuning %+v", rep.Diagnosis, rep.Tuning)
	}
	if !rep.Tuning.JournalRemoved {
		t.Errorf("the guest's journal was not emptied and removed")
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "QEMU guest under") {
		t.Errorf("the page does not say the router was a guest")
	}
	if !strings.Contains(r.stderr, "lab "+l.name+" is gone") {
		t.Errorf("demo did not say its lab is gone:\n%s", r.stderr)
	}
}
