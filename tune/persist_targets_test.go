package tune

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"linerate/internal/testenv"
	"linerate/internal/usage"
)

// persistRecs is an applied set with something for every part of every
// target: a sysctl, NIC settings tuned names (coalescing, rings, channels,
// a feature, MTU), one it cannot (rings "max"), queue masks, an IRQ by
// name and one by number, boot advice.
var persistRecs = []*Record{{ID: "1", State: RecApplied, Items: []Item{
	{Kind: "sysctl", Target: "net.core.netdev_max_backlog", Value: "4096"},
	{Kind: "coalesce", Target: "eth1", Value: "rx-usecs=100,adaptive-rx=off"},
	{Kind: "rings", Target: "eth1", Value: "rx=4096,tx=4096"},
	{Kind: "channels", Target: "eth1", Value: "combined=4"},
	{Kind: "feature", Target: "eth1/generic-receive-offload", Value: "on"},
	{Kind: "mtu", Target: "eth1", Value: "9000"},
	{Kind: "rings", Target: "wg-home", Value: "rx=max"},
	{Kind: "rps", Target: "eth1/rx-*", Value: "1-3"},
	{Kind: "xps", Target: "eth1/tx-0", Value: "0"},
	{Kind: "irq-affinity", Target: "eth1", Value: "1-3"},
	{Kind: "irq-affinity", Target: "41", Value: "2"},
	{Kind: "boot", Target: "cmdline.txt", Value: "pci=pcie_bus_perf"},
}}}

func readRoot(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The units pass systemd's own checker: systemd-analyze verify reports
// unknown keys, bad values and an ExecStart that is not executable (the
// binary is this test's, which exists), and prints nothing when all is
// well. The template is checked as the instance the device link starts.
func TestPersistSystemdVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is not installed (make deps): it is the check of the units")
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	res, err := Persist(persistRecs, PersistOptions{Root: root, Binary: bin, StateDir: t.TempDir(), Target: TargetSystemd})
	if err != nil {
		t.Fatal(err)
	}
	if res.Target != TargetSystemd {
		t.Errorf("target %s", res.Target)
	}
	units := t.TempDir()
	for name, src := range map[string]string{
		boxUnit:                      unitDir + "/" + boxUnit,
		"linerate-tune@eth1.service": unitDir + "/" + ifaceUnit,
	} {
		p := filepath.Join(units, name)
		if err := os.WriteFile(p, []byte(readRoot(t, root, src)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(sa, "verify", "--man=no", p).CombinedOutput()
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", name, err, out)
		}
	}
}

// openwrtRoot is an OpenWrt root whose network config turns packet
// steering on, as OpenWrt 23.05's LuCI does.
func openwrtRoot(t *testing.T) string {
	root := t.TempDir()
	testenv.WriteFiles(t, root, map[string]string{
		"etc/openwrt_release": "DISTRIB_ID='OpenWrt'\nDISTRIB_RELEASE='23.05.3'\n",
		"etc/config/network": `
config interface 'loopback'
	option device 'lo'
	option proto 'static'

config globals 'globals'
	option ula_prefix 'fd12:3456:789a::/48'
	option packet_steering '1'
`,
	})
	return root
}

// rcCommon stands in for OpenWrt's /etc/rc.common and procd's shell
// helpers (/lib/functions/procd.sh): it sources the init script, checks
// it asks for procd, and runs the instance's command as procd would.
const rcCommon = `
procd_open_instance() { :; }
procd_set_param() { if [ "$1" = command ]; then shift; CMD="$*"; fi; }
procd_close_instance() { $CMD; }
. "$1"
[ "$USE_PROCD" = 1 ] || { echo "not a procd script" >&2; exit 3; }
[ -n "$START" ] || { echo "no START" >&2; exit 3; }
case "$2" in start) start_service ;; *) echo "action $2" >&2; exit 3 ;; esac
`

// The OpenWrt files: on a root with /etc/openwrt_release the default
// target; the packet-steering conflict named with the command that ends
// it; the init script and both hotplug scripts run under busybox ash (as
// OpenWrt's shell is) inside a network namespace, with OpenWrt's
// environment, and call linerate (a stub recording its arguments) exactly
// when they should.
func TestPersistOpenWrt(t *testing.T) {
	ash, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal("busybox is not installed (make deps): the scripts run under its ash")
	}
	ns := testenv.NewNetNS(t)
	root := openwrtRoot(t)
	tmp := t.TempDir()
	calls := filepath.Join(tmp, "calls")
	stub := filepath.Join(tmp, "linerate")
	if err := os.WriteFile(stub, []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := Persist(persistRecs, PersistOptions{Root: root, Binary: stub, StateDir: "/var/lib/linerate"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Target != TargetOpenWrt {
		t.Fatalf("target %s on a root with /etc/openwrt_release, want openwrt", res.Target)
	}
	if len(res.Conflicts) != 1 || !strings.Contains(res.Conflicts[0], "packet_steering=1") ||
		!strings.HasSuffix(res.Conflicts[0], "uci set network.globals.packet_steering=0 && uci commit network") {
		t.Errorf("conflicts: %q", res.Conflicts)
	}
	for _, rel := range []string{openwrtInit, openwrtNetHook, openwrtIfHook} {
		if fi, err := os.Stat(filepath.Join(root, rel)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s: %v, mode %v", rel, err, fi)
		}
	}
	if l, err := os.Readlink(filepath.Join(root, openwrtRcLink)); err != nil || l != "../init.d/linerate-tune" {
		t.Errorf("rc.d link: %q %v", l, err)
	}
	testenv.WriteFiles(t, tmp, map[string]string{"rc.common": rcCommon})
	reapply := "tune reapply --plan /etc/linerate/tune-plan.json --state-dir /var/lib/linerate"
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string // "" for no call
	}{
		{"boot", nil, []string{filepath.Join(tmp, "rc.common"), filepath.Join(root, openwrtInit), "start"}, reapply},
		{"net add", []string{"ACTION=add", "INTERFACE=eth1", "DEVICENAME=eth1", "SUBSYSTEM=net"}, []string{"-c", ". " + filepath.Join(root, openwrtNetHook)}, reapply + " eth1"},
		{"net remove", []string{"ACTION=remove", "INTERFACE=eth1", "DEVICENAME=eth1"}, []string{"-c", ". " + filepath.Join(root, openwrtNetHook)}, ""},
		{"iface ifup", []string{"ACTION=ifup", "INTERFACE=lan", "DEVICE=eth1"}, []string{"-c", ". " + filepath.Join(root, openwrtIfHook)}, reapply + " eth1"},
		{"iface ifdown", []string{"ACTION=ifdown", "INTERFACE=lan", "DEVICE=eth1"}, []string{"-c", ". " + filepath.Join(root, openwrtIfHook)}, ""},
	} {
		os.Remove(calls)
		cmd := exec.Command("ip", append([]string{"netns", "exec", ns.Name, ash, "ash"}, tc.args...)...)
		cmd.Env = append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, tc.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", tc.name, err, out)
			continue
		}
		got := ""
		if b, err := os.ReadFile(calls); err == nil {
			got = strings.TrimSpace(string(b))
		}
		if got != tc.want {
			t.Errorf("%s: linerate called with %q, want %q", tc.name, got, tc.want)
		}
	}

	// Packet steering off (or absent): no conflict.
	testenv.WriteFiles(t, root, map[string]string{"etc/config/network": "config globals 'globals'\n\toption packet_steering '0'\n"})
	if res, err := Persist(persistRecs, PersistOptions{Root: root, Binary: stub, StateDir: "/var/lib/linerate"}); err != nil || len(res.Conflicts) != 0 {
		t.Errorf("packet steering off: %v %q", err, res.Conflicts)
	}
	items, err := Persisted(root, TargetOpenWrt)
	if err != nil || len(items) != 11 {
		t.Errorf("read back %d items (%v), want 11: %v", len(items), err, items)
	}
	if _, err := Unpersist(root); err != nil {
		t.Fatal(err)
	}
	for _, rel := range openwrtFiles {
		if _, err := os.Lstat(filepath.Join(root, rel)); err == nil {
			t.Errorf("%s left after unpersist", rel)
		}
	}
}

// tunedLoad loads a profile directory with tuned's own loader
// (tuned.profiles.loader, merger, locator as tuned-adm uses them), and
// checks the net units' options and parameters against the net plugin's
// own lists. It prints "unit type devices option=value..." per unit.
const tunedLoad = `
import sys
import tuned.profiles.loader as L, tuned.profiles.locator, tuned.profiles.merger, tuned.profiles.factory, tuned.profiles.variables
from tuned.utils.global_config import GlobalConfig
from tuned.plugins.plugin_net import NetTuningPlugin as N
loc = tuned.profiles.locator.Locator([sys.argv[1]])
p = L.Loader(loc, tuned.profiles.factory.Factory(), tuned.profiles.merger.Merger(), GlobalConfig(), tuned.profiles.variables.Variables()).load([sys.argv[2]])
known = {"coalesce": N._get_config_options_coalesce(), "ring": N._get_config_options_ring(), "channels": N._get_config_options_channels()}
for name, u in p.units.items():
    if u.type == "net":
        for k, v in u.options.items():
            if k not in N._get_config_options():
                sys.exit("net plugin has no option %s" % k)
            if k in known:
                f = v.split()
                bad = set(f[0::2]) - set(known[k])
                if bad or len(f) % 2:
                    sys.exit("%s: parameters %s unknown to the net plugin" % (k, bad))
    print(name, u.type, u.devices, " ".join("%s=%s" % kv for kv in sorted(u.options.items())))
`

// The tuned profile: loaded by Debian's tuned (2.20) with its own profile
// loader, every [net] option and parameter one its net plugin knows, the
// rest in the [script]'s plan; tune reads it back to the same items.
func TestPersistTuned(t *testing.T) {
	py := "/usr/bin/python3" // Debian's, where the tuned package's modules are
	if err := exec.Command(py, "-c", "import tuned.profiles.loader").Run(); err != nil {
		t.Fatalf("Debian's tuned is not installed (make deps): %v", err)
	}
	root := t.TempDir()
	res, err := Persist(persistRecs, PersistOptions{Root: root, Binary: "/usr/bin/linerate", StateDir: "/var/lib/linerate", Target: TargetTuned})
	if err != nil {
		t.Fatal(err)
	}
	conf := readRoot(t, root, tunedConf)
	t.Logf("tuned.conf:\n%s", conf)
	out, err := exec.Command(py, "-c", tunedLoad, filepath.Join(root, "etc/tuned"), "linerate").CombinedOutput()
	if err != nil {
		t.Fatalf("tuned's loader refused the profile: %v\n%s", err, out)
	}
	got := strings.TrimSpace(string(out))
	for _, want := range []string{
		"sysctl sysctl * net.core.netdev_max_backlog=4096",
		"net_eth1 net eth1 channels=combined 4 coalesce=rx-usecs 100 adaptive-rx off features=generic-receive-offload on mtu=9000 ring=rx 4096 tx 4096",
		"script script * script=['" + filepath.Join(root, tunedScript) + "']",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tuned loaded:\n%s\nwant a line %q", got, want)
		}
	}
	if strings.Contains(conf, "wg-home") {
		t.Errorf("rings rx=max is not tuned's to say (it takes numbers): it belongs in the script's plan")
	}
	script := readRoot(t, root, tunedScript)
	if !strings.Contains(script, "/usr/bin/linerate tune reapply --plan /etc/tuned/linerate/linerate-plan.json --state-dir /var/lib/linerate") {
		t.Errorf("script:\n%s", script)
	}
	items, err := Persisted(root, TargetTuned)
	if err != nil {
		t.Fatal(err)
	}
	var back []string
	for _, it := range items {
		back = append(back, it.String())
	}
	for _, want := range []string{
		"sysctl:net.core.netdev_max_backlog=4096", "coalesce:eth1=rx-usecs=100,adaptive-rx=off", "rings:eth1=rx=4096,tx=4096",
		"channels:eth1=combined=4", "feature:eth1=generic-receive-offload=on", "mtu:eth1=9000",
		"rings:wg-home=rx=max", "rps:eth1/rx-*=1-3", "xps:eth1/tx-0=0", "irq-affinity:eth1=1-3", "irq-affinity:41=2",
	} {
		if !slices.Contains(back, want) {
			t.Errorf("read back %q, lacks %q", back, want)
		}
	}
	if len(res.Next) == 0 || !strings.Contains(res.Next[0], "tuned-adm profile linerate") {
		t.Errorf("next: %q", res.Next)
	}
	if _, err := Unpersist(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, tunedDir)); err == nil {
		t.Errorf("%s left after unpersist", tunedDir)
	}
}

// TestPersistSystemdLinkUp: on a systemd box the interface's items come
// back when its link comes up again, not only when it appears: the
// networkd-dispatcher and NetworkManager hooks run linerate tune reapply
// for a tuned interface (and for nothing else), and unpersist removes them.
func TestPersistSystemdLinkUp(t *testing.T) {
	tmp := t.TempDir()
	calls := filepath.Join(tmp, "calls")
	stub := filepath.Join(tmp, "linerate")
	if err := os.WriteFile(stub, []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if _, err := Persist(persistRecs, PersistOptions{Root: root, Binary: stub, StateDir: "/var/lib/linerate", Target: TargetSystemd}); err != nil {
		t.Fatal(err)
	}
	run := func(hook string, env []string, args ...string) {
		t.Helper()
		cmd := exec.Command("sh", append([]string{filepath.Join(root, hook)}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", hook, args, err, out)
		}
	}
	run(networkdHook, []string{"IFACE=eth1", "STATE=carrier"})
	run(networkdHook, []string{"IFACE=lo", "STATE=carrier"})
	run(nmHook, nil, "eth1", "up")
	run(nmHook, nil, "eth1", "down")
	run(nmHook, nil, "wlan0", "up")
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	want := "tune reapply --plan /" + planPath + " --state-dir /var/lib/linerate eth1\n"
	if got := string(b); got != want+want {
		t.Errorf("the hooks ran:\n%swant twice:\n%s", got, want)
	}
	removed, err := Unpersist(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range linkUpHooks {
		if !slices.Contains(removed, "/"+h) {
			t.Errorf("unpersist left %s (removed %q)", h, removed)
		}
	}
}

// Persist keeps a record by the namespace it was made in, not by its
// name: run on the host, it leaves out a record with no name whose
// identity is another namespace's (an apply under `ip netns exec`), and
// keeps one made here; run from a namespace, it writes nothing.
func TestPersistByNamespaceIdentity(t *testing.T) {
	testenv.RequireRoot(t)
	host := NewLive()
	defer host.Close()
	if ok, err := initialNetns(host); err != nil || !ok {
		t.Skipf("this test runs in a network namespace other than the initial one (%v)", err)
	}
	ns := testenv.NewNetNS(t)
	there := openNetns(t, ns.Name)
	if ok, err := initialNetns(there); err != nil || ok {
		t.Errorf("netns %s taken for the initial namespace (%v)", ns.Name, err)
	}
	hostID, thereID := netnsID(host), netnsID(there)
	if hostID == "" || thereID == "" || hostID == thereID {
		t.Fatalf("identities %q and %q", hostID, thereID)
	}
	recs := []*Record{
		{ID: "here", State: RecApplied, NetnsID: hostID, Items: []Item{{Kind: "mtu", Target: "eth1", Value: "9000"}}},
		{ID: "there", State: RecApplied, NetnsID: thereID, Items: []Item{{Kind: "txqueuelen", Target: "b", Value: "1500"}}},
	}
	root := t.TempDir()
	res, err := Persist(recs, PersistOptions{Root: root, Binary: "/usr/bin/linerate", StateDir: "/var/lib/linerate", Target: TargetOpenWrt, Here: host})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].Target != "eth1" {
		t.Errorf("persisted %v, want the host's mtu item alone", res.Items)
	}
	if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], "there: made in network namespace "+thereID) {
		t.Errorf("skipped %q", res.Skipped)
	}
	if plan := readRoot(t, root, planPath); strings.Contains(plan, `"b"`) {
		t.Errorf("the plan file holds the namespace's item:\n%s", plan)
	}

	root = t.TempDir()
	_, err = Persist(recs, PersistOptions{Root: root, Binary: "/usr/bin/linerate", StateDir: "/var/lib/linerate", Target: TargetOpenWrt, Here: there})
	if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "not changed from inside netns "+ns.Name) {
		t.Errorf("persist from a namespace: %v", err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("the refused persist wrote %d entries", len(ents))
	}
}
