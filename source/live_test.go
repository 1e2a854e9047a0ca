package source

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"linerate/internal/testenv"
	"linerate/internal/usage"
)

// TestLiveNetns builds a veth pair between two fresh namespaces, gives one
// end 3 queues and MTU 1400, and checks that a source on that namespace
// sees exactly that, through sysfs, /proc/net, rtnetlink, ethtool and
// sysctls, while the host's source does not see the interface at all.
func TestLiveNetns(t *testing.T) {
	a := testenv.NewNetNS(t)
	b := testenv.NewNetNS(t)
	testenv.Veth(t, a, "lrveth0", b, "lrveth1", 3)
	h := a.Netlink(t)
	l, err := h.LinkByName("lrveth0")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetMTU(l, 1400); err != nil {
		t.Fatal(err)
	}
	host, err := NewLive()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	hostFwd, err := Sysctl(host, "net.ipv4.ip_forward")
	if err != nil {
		t.Fatal(err)
	}
	nsFwd := "1"
	if hostFwd == "1" {
		nsFwd = "0"
	}
	if err := a.Do(func() error { return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte(nsFwd), 0o644) }); err != nil {
		t.Fatal(err)
	}

	sysfsBefore := sysfsMounts(t)
	src, err := NewLiveNetns(a.Name)
	if err != nil {
		t.Fatal(err)
	}
	live := src.(*Live)
	tid := live.ns.Tid()
	t.Cleanup(func() { src.Close() })
	if src.Name() != "live netns "+a.Name || src.Meta().Netns != a.Name {
		t.Errorf("Name %q, Meta %+v", src.Name(), src.Meta())
	}
	// The namespace has its own ip_forward, not its own netdev_budget
	// (only the initial namespace shows it) or kernel.*; the host has
	// no host-wide sysctls of another's.
	for name, want := range map[string]bool{"net.ipv4.ip_forward": false, "net.core.netdev_budget": true, "kernel.pid_max": true} {
		if got := SysctlHostWide(src, name); got != want {
			t.Errorf("SysctlHostWide(netns, %s) = %v, want %v", name, got, want)
		}
		if SysctlHostWide(host, name) {
			t.Errorf("SysctlHostWide(host, %s) = true", name)
		}
	}

	names, err := src.Sys().NetDevices()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"lo", "lrveth0"}) {
		t.Errorf("class/net in the namespace = %v, want [lo lrveth0]", names)
	}
	nd, err := src.Sys().NetDevice("lrveth0")
	if err != nil {
		t.Fatal(err)
	}
	if nd.MTU != 1400 || len(nd.RXQueues) != 3 || len(nd.TXQueues) != 3 {
		t.Errorf("lrveth0 in sysfs: mtu %d, %d rx and %d tx queues; want 1400, 3, 3", nd.MTU, len(nd.RXQueues), len(nd.TXQueues))
	}
	dev, err := src.Proc().NetDev()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := dev["lrveth0"]; !ok || len(dev) != 2 {
		t.Errorf("/proc/net/dev in the namespace = %v", dev)
	}
	links, err := live.Links()
	if err != nil {
		t.Fatal(err)
	}
	if lk := links["lrveth0"]; lk.MTU != 1400 || lk.MaxMTU == 0 || lk.Index != nd.Ifindex {
		t.Errorf("rtnetlink lrveth0 = %+v (sysfs ifindex %d)", lk, nd.Ifindex)
	}
	ch, err := src.Ethtool().Channels("lrveth0")
	if err != nil {
		t.Fatal(err)
	}
	if ch.RXQueues() != 3 {
		t.Errorf("ethtool channels of lrveth0 = %+v, want 3 rx queues", ch)
	}
	if d, err := src.Ethtool().DriverInfo("lrveth0"); err != nil || d.Driver != "veth" {
		t.Errorf("driver = %+v, %v", d, err)
	}
	if v, err := Sysctl(src, "net.ipv4.ip_forward"); err != nil || v != nsFwd {
		t.Errorf("ip_forward in the namespace = %q, %v; want %q (host has %q)", v, err, nsFwd, hostFwd)
	}

	// The host sees none of it.
	hostNames, err := host.Sys().NetDevices()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(hostNames, "lrveth0") {
		t.Errorf("host class/net has lrveth0: %v", hostNames)
	}
	if _, err := host.Ethtool().DriverInfo("lrveth0"); err == nil {
		t.Error("host ethtool finds lrveth0")
	}
	if hostDev, err := host.Proc().NetDev(); err != nil {
		t.Error(err)
	} else if _, ok := hostDev["lrveth0"]; ok {
		t.Error("host /proc/net/dev has lrveth0")
	}
	if hl, err := host.(*Live).Links(); err != nil {
		t.Error(err)
	} else if _, ok := hl["lrveth0"]; ok {
		t.Error("host rtnetlink lists lrveth0")
	}

	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	// The namespace's thread, and its sysfs with it, are gone.
	if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid)); !os.IsNotExist(err) {
		t.Errorf("thread %d of the namespace is left after Close: %v", tid, err)
	}
	if _, err := src.Sys().NetDevices(); err == nil {
		t.Error("the namespace's sysfs is still readable after Close")
	}
	if n := sysfsMounts(t); n != sysfsBefore {
		t.Errorf("%d sysfs mounts in the process's mount namespace, %d before", n, sysfsBefore)
	}
}

// sysfsMounts counts the sysfs mounts this process sees.
func sysfsMounts(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), " - sysfs ")
}

func TestLiveNetnsUnknown(t *testing.T) {
	for _, name := range []string{"lrt-does-not-exist", "../etc", ""} {
		_, err := NewLiveNetns(name)
		if err == nil || !usage.Is(err) {
			t.Errorf("NewLiveNetns(%q) = %v, want bad input", name, err)
		}
	}
}
