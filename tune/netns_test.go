package tune

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"

	"linerate/diagnose"
	"linerate/internal/testenv"
)

// These tests change a veth pair (and a macvlan on it) inside a network
// namespace the test makes, and check the values with independent means:
// the ip, ethtool and sysctl commands run in the namespace through
// `ip netns exec`, which mounts a sysfs of its own.

// lab is a namespace with veth a/b (4 queues each) and macvlan m0 on a.
type lab struct {
	ns    *testenv.NetNS
	cpus  string // a CPU list for rps/xps: "0-1", or "0" on one CPU
	other string // another one: "1", or "0"
}

func newLab(t *testing.T) *lab {
	t.Helper()
	testenv.RequireRoot(t)
	for _, c := range []string{"ip", "ethtool", "sysctl"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is not installed: it is the independent check", c)
		}
	}
	ns := testenv.NewNetNS(t)
	testenv.Veth(t, ns, "a", ns, "b", 4)
	h := ns.Netlink(t)
	a, err := h.LinkByName("a")
	if err != nil {
		t.Fatal(err)
	}
	mv := &netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Name: "m0", ParentIndex: a.Attrs().Index}, Mode: netlink.MACVLAN_MODE_BRIDGE}
	if err := h.LinkAdd(mv); err != nil {
		t.Skipf("macvlan unavailable: %v", err)
	}
	l := &lab{ns: ns, cpus: "0", other: "0"}
	if runtime.NumCPU() >= 2 {
		l.cpus, l.other = "0-1", "1"
	}
	return l
}

// sh runs a command inside the namespace and returns its output.
func (l *lab) sh(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", l.ns.Name}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// snapshot is everything the tests change, read with the commands.
func (l *lab) snapshot(t *testing.T) map[string]string {
	t.Helper()
	s := map[string]string{}
	for _, f := range []string{"rx-0/rps_cpus", "rx-1/rps_cpus", "rx-2/rps_cpus", "rx-3/rps_cpus",
		"rx-0/rps_flow_cnt", "rx-1/rps_flow_cnt", "tx-0/xps_cpus", "tx-1/xps_cpus"} {
		// A queue that a channels change removed reads "absent".
		s[f] = strings.TrimSpace(l.sh(t, "sh", "-c", "cat /sys/class/net/a/queues/"+f+" 2>/dev/null || echo absent"))
	}
	s["ethtool -l"] = l.sh(t, "ethtool", "-l", "b")
	s["ethtool -k"] = l.sh(t, "ethtool", "-k", "a")
	for _, dev := range []string{"a", "m0"} {
		f := strings.Fields(l.sh(t, "ip", "-o", "link", "show", "dev", dev))
		for i := range f {
			if f[i] == "mtu" && i+1 < len(f) {
				s["mtu "+dev] = f[i+1]
			}
		}
	}
	for _, k := range []string{"net.ipv4.ip_forward", "net.core.somaxconn"} {
		s[k] = strings.TrimSpace(l.sh(t, "sysctl", "-n", k))
	}
	return s
}

func sameSnapshot(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s is\n%s\nwant\n%s", what, k, got[k], v)
		}
	}
}

func hostSysctl(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// items is the plan the netns tests apply: every kind that works on veth.
func (l *lab) items() []Item {
	return []Item{
		{Kind: "rps", Target: "a/rx-*", Value: l.cpus},
		{Kind: "rps-flow", Target: "a/rx-1", Value: "4096"},
		{Kind: "xps", Target: "a/tx-0", Value: l.other},
		{Kind: "channels", Target: "b", Value: "rx=2,tx=3"},
		{Kind: "feature", Target: "a/generic-receive-offload", Value: "on"},
		{Kind: "feature", Target: "a/tx-checksumming", Value: "off"},
		{Kind: "mtu", Target: "a", Value: "9000"},
		{Kind: "sysctl", Target: "net.ipv4.ip_forward", Value: "1"},
		{Kind: "sysctl", Target: "net.core.somaxconn", Value: "1234"},
	}
}

func openNetns(t *testing.T, name string) *Live {
	t.Helper()
	sys, err := NewLiveNetns(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sys.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return sys
}

func TestNetnsApplyRollback(t *testing.T) {
	l := newLab(t)
	hostSomaxconn := hostSysctl(t, "net.core.somaxconn")
	before := l.snapshot(t)
	sys := openNetns(t, l.ns.Name)
	p, err := NewPlan(sys, l.items())
	if err != nil {
		t.Fatal(err)
	}
	resets := map[diagnose.FixKind]bool{}
	for _, c := range p.Changes() {
		resets[c.Kind] = resets[c.Kind] || c.ResetsLink
	}
	if !resets["channels"] || resets["mtu"] || resets["rps"] {
		t.Errorf("resets-link marks: %v (want channels only: veth is virtual)", resets)
	}
	store := NewStore(t.TempDir())
	tx, err := store.Begin(sys, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(context.Background()); err != nil {
		t.Fatal(err)
	}

	after := l.snapshot(t)
	mask := fmt.Sprintf("%x", cpuMask(l.cpus))
	for _, q := range []string{"rx-0", "rx-1"} {
		if got := strings.TrimLeft(after[q+"/rps_cpus"], "0,"); got != mask {
			t.Errorf("%s/rps_cpus = %q, want mask %s", q, after[q+"/rps_cpus"], mask)
		}
	}
	if after["rx-1/rps_flow_cnt"] != "4096" {
		t.Errorf("rps_flow_cnt = %s", after["rx-1/rps_flow_cnt"])
	}
	if !strings.Contains(after["ethtool -l"], "RX:\t\t2") {
		t.Errorf("channels after apply:\n%s", after["ethtool -l"])
	}
	if !strings.Contains(after["ethtool -k"], "generic-receive-offload: on") ||
		!strings.Contains(after["ethtool -k"], "tx-checksumming: off") {
		t.Errorf("features after apply:\n%s", after["ethtool -k"])
	}
	if after["mtu a"] != "9000" || after["net.ipv4.ip_forward"] != "1" || after["net.core.somaxconn"] != "1234" {
		t.Errorf("after apply: mtu %s, ip_forward %s, somaxconn %s", after["mtu a"], after["net.ipv4.ip_forward"], after["net.core.somaxconn"])
	}
	if got := hostSysctl(t, "net.core.somaxconn"); got != hostSomaxconn {
		t.Errorf("the host's somaxconn changed: %s, was %s", got, hostSomaxconn)
	}

	// Status: every change holds; then one drifts.
	recs, err := store.List()
	if err != nil || len(recs) != 1 {
		t.Fatalf("journal: %d records, %v", len(recs), err)
	}
	for _, st := range Check(sys, recs[0]) {
		if !st.Holds {
			t.Errorf("status: %s %s live %q, want %q (%s)", st.Kind, st.Target, st.Live, st.To, st.Err)
		}
	}
	l.sh(t, "sysctl", "-w", "net.core.somaxconn=999")
	drift := 0
	for _, st := range Check(sys, recs[0]) {
		if !st.Holds {
			drift++
			if st.Target != "net.core.somaxconn" || st.Live != "999" {
				t.Errorf("drift reported on %s %s (live %q)", st.Kind, st.Target, st.Live)
			}
		}
	}
	if drift != 1 {
		t.Errorf("%d entries drifted, want 1", drift)
	}

	// Rollback from the journal with a fresh system, as another process would.
	sys2 := openNetns(t, l.ns.Name)
	if _, err := store.Rollback(context.Background(), sys2, recs[0]); err != nil {
		t.Fatal(err)
	}
	sameSnapshot(t, "after rollback", before, l.snapshot(t))
	if recs, _ := store.List(); len(recs) != 0 {
		t.Errorf("journal keeps %d records after a full rollback", len(recs))
	}
}

// cpuMask turns "0-1" or "0" into a bit mask.
func cpuMask(list string) uint64 {
	lo, hi, ok := strings.Cut(list, "-")
	a, _ := strconv.Atoi(lo)
	b := a
	if ok {
		b, _ = strconv.Atoi(hi)
	}
	var m uint64
	for c := a; c <= b; c++ {
		m |= 1 << c
	}
	return m
}

func TestNetnsFailHalfwayLeavesNothingChanged(t *testing.T) {
	l := newLab(t)
	before := l.snapshot(t)
	sys := openNetns(t, l.ns.Name)
	// m0's driver reports a maximum MTU of 65535 but refuses anything above
	// its lower device's MTU (1500): the plan passes every check and fails
	// at its third change.
	items := []Item{
		{Kind: "rps", Target: "a/rx-0", Value: l.cpus},
		{Kind: "channels", Target: "b", Value: "rx=1"},
		{Kind: "mtu", Target: "m0", Value: "9000"},
		{Kind: "sysctl", Target: "net.ipv4.ip_forward", Value: "1"},
	}
	p, err := NewPlan(sys, items)
	if err != nil {
		t.Fatalf("the plan should pass its checks: %v", err)
	}
	store := NewStore(t.TempDir())
	tx, err := store.Begin(sys, p)
	if err != nil {
		t.Fatal(err)
	}
	err = tx.Apply(context.Background())
	var ae *ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("apply: %v, want an ApplyError", err)
	}
	if ae.Change.Kind != "mtu" || ae.Restored != 3 || len(ae.Unrestored) != 0 {
		t.Errorf("apply error %q: failed at %s, restored %d, unrestored %v", err, ae.Change.Kind, ae.Restored, ae.Unrestored)
	}
	sameSnapshot(t, "after a failed apply", before, l.snapshot(t))
	if recs, _ := store.List(); len(recs) != 0 {
		t.Errorf("journal keeps %d records after everything was restored", len(recs))
	}
}

func TestNetnsChecksBeforeChanging(t *testing.T) {
	l := newLab(t)
	sys := openNetns(t, l.ns.Name)
	for _, tc := range []struct {
		it   Item
		want string
	}{
		{Item{Kind: "rps", Target: "nope/rx-0", Value: "0"}, "no interface nope in netns"},
		{Item{Kind: "rps", Target: "a/rx-9", Value: "0"}, "a has no queue rx-9"},
		{Item{Kind: "rps", Target: "a/rx-0", Value: "4096"}, "not online"},
		{Item{Kind: "channels", Target: "a", Value: "rx=64"}, "at most 4"},
		{Item{Kind: "channels", Target: "a", Value: "combined=2"}, "has no combined channels"},
		{Item{Kind: "coalesce", Target: "a", Value: "rx-usecs=100"}, "not supported by driver veth"},
		{Item{Kind: "rings", Target: "a", Value: "rx=max"}, "not supported by driver veth"},
		{Item{Kind: "feature", Target: "a/large-receive-offload", Value: "on"}, "fixed off"},
		{Item{Kind: "feature", Target: "a/warp-drive", Value: "on"}, "no feature"},
		{Item{Kind: "mtu", Target: "a", Value: "70000"}, "from 68 to 65535"},
		{Item{Kind: "sysctl", Target: "kernel.sched_autogroup_enabled", Value: "0"}, "would change the host"},
		{Item{Kind: "sysctl", Target: "net.core.no_such", Value: "0"}, "no sysctl net.core.no_such in netns"},
		{Item{Kind: "irq-affinity", Target: "1", Value: "0"}, "host's"},
		{Item{Kind: "governor", Target: "all", Value: "performance"}, "host's"},
		{Item{Kind: "irqbalance", Target: "box", Value: "stop"}, "host's"},
	} {
		_, err := Build(sys, tc.it)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.it, err, tc.want)
		}
	}
}

// The kill test runs Apply in a child process (this test binary again)
// that SIGKILLs itself right after its k-th change, before the journal
// marks it applied; a fresh process then rolls back from the journal.

const childEnv = "LINERATE_TUNE_TEST_CHILD"

// TestMain lets the test binary act as that child.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(killChild())
	}
	os.Exit(m.Run())
}

// killChild applies the items in $LINERATE_TUNE_TEST_ITEMS (KIND:TARGET=VALUE
// separated by newlines) on the system named by $..._NETNS (or the
// directory $..._ROOT), journalling in $..._STATE, and kills itself after
// $..._KILL changes.
func killChild() int {
	var sys System
	if ns := os.Getenv(childEnv + "_NETNS"); ns != "" {
		l, err := NewLiveNetns(ns)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		sys = l
	} else {
		sys = NewDir(os.Getenv(childEnv + "_ROOT"))
	}
	var items []Item
	for _, s := range strings.Split(os.Getenv(childEnv+"_ITEMS"), "\n") {
		it, err := ParseItem(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		items = append(items, it)
	}
	k, _ := strconv.Atoi(os.Getenv(childEnv + "_KILL"))
	p, err := NewPlan(sys, items)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	tx, err := NewStore(os.Getenv(childEnv+"_STATE")).Begin(sys, p)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	tx.AfterChange = func(n int) {
		if n == k {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	if err := tx.Apply(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}

// runKilled runs the child and checks that SIGKILL ended it.
func runKilled(t *testing.T, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=1"}, env...)...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child: %v, want it killed\n%s", err, out)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL\n%s", err, out)
	}
}

func itemLines(items []Item) string {
	var s []string
	for _, it := range items {
		s = append(s, it.String())
	}
	return strings.Join(s, "\n")
}

func TestNetnsKilledMidApplyRollsBack(t *testing.T) {
	l := newLab(t)
	before := l.snapshot(t)
	items := l.items()
	for _, k := range []int{1, 6} {
		t.Run(fmt.Sprintf("after %d changes", k), func(t *testing.T) {
			state := t.TempDir()
			runKilled(t, childEnv+"_NETNS="+l.ns.Name, childEnv+"_STATE="+state,
				childEnv+"_ITEMS="+itemLines(items), childEnv+"_KILL="+strconv.Itoa(k))
			store := NewStore(state)
			recs, err := store.List()
			if err != nil || len(recs) != 1 {
				t.Fatalf("journal after kill: %d records, %v", len(recs), err)
			}
			r := recs[0]
			if r.State != RecApplying {
				t.Errorf("record state %s, want %s", r.State, RecApplying)
			}
			// The k-th change was made but not yet marked: the journal must
			// say it may have happened.
			if got := r.Entries[k-1].State; got != Changing {
				t.Errorf("entry %d state %s, want %s", k, got, Changing)
			}
			if k < len(r.Entries) && r.Entries[k].State != Pending {
				t.Errorf("entry %d state %s, want %s", k+1, r.Entries[k].State, Pending)
			}
			if k == 6 && l.snapshot(t)["mtu a"] == before["mtu a"] && r.Entries[k-1].Kind == "mtu" {
				t.Errorf("the killed child did not change the MTU")
			}
			sys := openNetns(t, l.ns.Name)
			n, err := store.Rollback(context.Background(), sys, r)
			if err != nil {
				t.Fatal(err)
			}
			if n != k {
				t.Errorf("restored %d entries, want %d", n, k)
			}
			sameSnapshot(t, "after kill and rollback", before, l.snapshot(t))
			if recs, _ := store.List(); len(recs) != 0 {
				t.Errorf("journal keeps %d records", len(recs))
			}
		})
	}
}

// A namespace system that was closed must refuse, never fall back to the
// host.
func TestNetnsClosedRefuses(t *testing.T) {
	l := newLab(t)
	sys, err := NewLiveNetns(l.ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := sys.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.ReadFile("proc/sys/net/core/somaxconn"); !errors.Is(err, errClosed) {
		t.Errorf("read after close: %v", err)
	}
	if err := sys.WriteFile("proc/sys/net/core/somaxconn", []byte("1")); !errors.Is(err, errClosed) {
		t.Errorf("write after close: %v", err)
	}
	if _, err := sys.Ethtool(); !errors.Is(err, errClosed) {
		t.Errorf("ethtool after close: %v", err)
	}
	lk, _ := sys.Links()
	if err := lk.SetMTU("a", 1400); !errors.Is(err, errClosed) {
		t.Errorf("set mtu after close: %v", err)
	}
}
