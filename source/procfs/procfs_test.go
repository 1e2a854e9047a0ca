package procfs

import (
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testdata/vm is a copy of this build machine's /proc files (a 2-CPU
// virtio VM, kernel 6.18), plus a made-up process "irqbalance" (pid 812).
var vm = NewFS("testdata/vm")

func TestPaths(t *testing.T) {
	if got := vm.Path("irq", "41", "smp_affinity"); got != "testdata/vm/irq/41/smp_affinity" {
		t.Errorf("Path = %q", got)
	}
	if got := vm.NetPath("dev"); got != "testdata/vm/net/dev" {
		t.Errorf("NetPath = %q", got)
	}
	ns := vm.WithNetDir("/proc/thread-self/net")
	if got := ns.NetPath("snmp"); got != "/proc/thread-self/net/snmp" {
		t.Errorf("NetPath with net dir = %q", got)
	}
	if ns.Root() != "testdata/vm" || vm.NetPath("dev") != "testdata/vm/net/dev" {
		t.Error("WithNetDir changed the original FS or the root")
	}
}

func TestFixtureCounters(t *testing.T) {
	st, err := vm.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[0].ID != 0 || st[1].ID != 1 || st[1].User != 3450 || st[1].Idle != 61981 {
		t.Errorf("Stat = %+v", st)
	}

	in, err := vm.Interrupts()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in.CPUs, []int{0, 1}) {
		t.Errorf("CPUs = %v", in.CPUs)
	}
	r, ok := in.Row("38")
	if !ok || r.Chip != "PCI-MSIX-0000:00:03.0" || r.HWIRQ != "1-edge" || r.Actions != "virtio2-input.0" || len(r.Counts) != 2 {
		t.Errorf("row 38 = %+v, %v", r, ok)
	}
	if r, ok := in.Row("ERR"); !ok || r.Number != -1 || len(r.Counts) != 1 {
		t.Errorf("row ERR = %+v, %v", r, ok)
	}
	if r, ok := in.Row("LOC"); !ok || r.Actions != "Local timer interrupts" || len(r.Counts) != 2 {
		t.Errorf("row LOC = %+v, %v", r, ok)
	}
	if _, ok := in.Row("9999"); ok {
		t.Error("Row found a label that is not there")
	}

	si, err := vm.SoftIRQs()
	if err != nil {
		t.Fatal(err)
	}
	if len(si) != 10 || len(si["NET_RX"]) != 2 {
		t.Errorf("SoftIRQs = %v", si)
	}

	sn, err := vm.Softnet()
	if err != nil {
		t.Fatal(err)
	}
	if len(sn) != 2 || sn[1].CPU != 1 || sn[0].Processed == 0 {
		t.Errorf("Softnet = %+v", sn)
	}

	nd, err := vm.NetDev()
	if err != nil {
		t.Fatal(err)
	}
	if len(nd) != 4 || nd["lo"].RxPackets == 0 || nd["lo"].RxBytes != nd["lo"].TxBytes {
		t.Errorf("NetDev = %+v", nd)
	}

	snmp, err := vm.SNMP()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snmp["Udp"]["RcvbufErrors"]; !ok || snmp["Ip"]["DefaultTTL"] != 64 {
		t.Errorf("SNMP = %v", snmp)
	}
	if _, ok := snmp["Tcp"]["MaxConn"]; ok {
		t.Error("Tcp MaxConn (-1) was kept")
	}
	// net/netstat has the same shape as net/snmp.
	ext, err := parseFile(vm.t, "net/netstat", ParseSNMP)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ext["TcpExt"]["TCPBacklogDrop"]; !ok {
		t.Errorf("netstat TcpExt = %v", ext["TcpExt"])
	}
}

func TestFixtureErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := NewFS(dir)
	if err := os.MkdirAll(filepath.Join(dir, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("interrupts", "  CPU0 CPU1\n 41: 1\n")
	write("net/dev", "eth0: 1 2\n")
	if _, err := bad.Interrupts(); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "interrupts")+":2: ") {
		t.Errorf("Interrupts error = %v", err)
	}
	if _, err := bad.NetDev(); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "net/dev")) {
		t.Errorf("NetDev error = %v", err)
	}
	if _, err := bad.Stat(); !errors.Is(err, iofs.ErrNotExist) || !strings.Contains(err.Error(), filepath.Join(dir, "stat")) {
		t.Errorf("Stat of a missing file: %v", err)
	}
}

func TestFixtureSysctl(t *testing.T) {
	tests := map[string]string{
		"net.ipv4.tcp_rmem":  "4096 131072 33554432", // tabs folded
		"net/core/rmem_max":  "4194304",
		"net.core.rmem_max":  "4194304",
		"kernel.osrelease":   "6.18.44-fc-v769",
		".net.core.rmem_max": "4194304",
	}
	for name, want := range tests {
		got, err := vm.Sysctl(name)
		if err != nil || got != want {
			t.Errorf("Sysctl(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := vm.Sysctl("net.core.no_such_thing"); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("missing sysctl: %v", err)
	}
	for _, bad := range []string{"", "net..core", "net/../../etc/passwd", "..", "net.core/../x"} {
		if _, err := vm.Sysctl(bad); err == nil || errors.Is(err, iofs.ErrNotExist) {
			t.Errorf("Sysctl(%q) = %v, want a bad-name error", bad, err)
		}
	}
	p, err := vm.SysctlPath("net/ipv4/conf/eth0.100/rp_filter")
	if err != nil || p != "testdata/vm/sys/net/ipv4/conf/eth0.100/rp_filter" {
		t.Errorf("SysctlPath with a dotted interface = %q, %v", p, err)
	}
}

func TestFixtureIRQAffinity(t *testing.T) {
	a, err := vm.IRQAffinity(38)
	if err != nil {
		t.Fatal(err)
	}
	want := IRQAffinity{Mask: "3", List: []int{0, 1}, Effective: []int{1}}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("irq 38 = %+v, want %+v", a, want)
	}
	a, err = vm.IRQAffinity(41)
	if err != nil {
		t.Fatal(err)
	}
	if a.Effective != nil || a.Mask != "3" || !reflect.DeepEqual(a.List, []int{0, 1}) {
		t.Errorf("irq 41 (no effective_affinity_list) = %+v", a)
	}
	if _, err := vm.IRQAffinity(7); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("irq 7 (absent): %v", err)
	}

	// Only one of the two files: the other is derived.
	dir := t.TempDir()
	fs := NewFS(dir)
	for _, f := range []struct{ path, text string }{
		{"irq/5/smp_affinity", "00000000,0000000c\n"},
		{"irq/6/smp_affinity_list", "32\n"},
		{"irq/7/smp_affinity", "zz\n"},
		{"irq/8/smp_affinity_list", "1\n"},
		{"irq/8/effective_affinity_list", "\n"},
	} {
		p := filepath.Join(dir, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if a, err := fs.IRQAffinity(5); err != nil || !reflect.DeepEqual(a.List, []int{2, 3}) || a.Mask != "00000000,0000000c" {
		t.Errorf("mask only: %+v, %v", a, err)
	}
	if a, err := fs.IRQAffinity(6); err != nil || !reflect.DeepEqual(a.List, []int{32}) || a.Mask != "1,00000000" {
		t.Errorf("list only: %+v, %v", a, err)
	}
	if _, err := fs.IRQAffinity(7); err == nil || !strings.Contains(err.Error(), "irq/7/smp_affinity") {
		t.Errorf("bad mask: %v", err)
	}
	if a, err := fs.IRQAffinity(8); err != nil || a.Effective == nil || len(a.Effective) != 0 {
		t.Errorf("empty effective list should be empty, not absent: %+v, %v", a, err)
	}
}

func TestFixtureRunningAndIdentity(t *testing.T) {
	for name, want := range map[string]bool{"irqbalance": true, "process_api": true, "irqbalanc": false, "sshd": false} {
		got, err := vm.Running(name)
		if err != nil || got != want {
			t.Errorf("Running(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	// comm keeps 15 bytes of a longer name.
	if got, err := vm.Running("process_api_with_a_long_name"); err != nil || got {
		t.Errorf("Running(long name) = %v, %v", got, err)
	}
	if h, err := vm.Hostname(); err != nil || h != "vm" {
		t.Errorf("Hostname = %q, %v", h, err)
	}
	if k, err := vm.Kernel(); err != nil || k != "6.18.44-fc-v769" {
		t.Errorf("Kernel = %q, %v", k, err)
	}
	if _, err := NewFS("testdata/none").Running("x"); err == nil {
		t.Error("Running on a missing root: no error")
	}
}

// The live tests read this machine's /proc; they need no privilege.
func liveProc(t *testing.T) FS {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this machine")
	}
	return NewFS("/proc")
}

func TestLive(t *testing.T) {
	p := liveProc(t)
	st, err := p.Stat()
	if err != nil {
		t.Fatal(err)
	}
	in, err := p.Interrupts()
	if err != nil {
		t.Fatal(err)
	}
	if len(in.CPUs) != len(st) {
		t.Errorf("/proc/interrupts has %d CPU columns, /proc/stat %d cpuN lines", len(in.CPUs), len(st))
	}
	for _, r := range in.Rows {
		if r.Number >= 0 && (r.Chip == "" || len(r.Counts) != len(in.CPUs)) {
			t.Errorf("numbered row without a chip or counts: %+v", r)
		}
		if r.Number >= 0 {
			if _, err := p.IRQAffinity(r.Number); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				t.Errorf("IRQAffinity(%d): %v", r.Number, err)
			}
		}
	}
	si, err := p.SoftIRQs()
	if err != nil {
		t.Fatal(err)
	}
	if len(si["NET_RX"]) == 0 {
		t.Errorf("no NET_RX in /proc/softirqs: %v", si)
	}
	sn, err := p.Softnet()
	if err != nil {
		t.Fatal(err)
	}
	if len(sn) != len(st) {
		t.Errorf("softnet_stat has %d rows for %d online CPUs", len(sn), len(st))
	}
	for i := range sn {
		if i < len(st) && sn[i].CPU != st[i].ID {
			t.Errorf("softnet row %d is CPU %d, /proc/stat says %d", i, sn[i].CPU, st[i].ID)
		}
	}
	nd, err := p.NetDev()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := nd["lo"]; !ok {
		t.Errorf("no lo in /proc/net/dev: %v", nd)
	}
	snmp, err := p.SNMP()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snmp["Udp"]["InDatagrams"]; !ok {
		t.Errorf("no Udp InDatagrams: %v", snmp["Udp"])
	}
	if v, err := p.Sysctl("net.core.somaxconn"); err != nil || v == "" {
		t.Errorf("Sysctl(net.core.somaxconn) = %q, %v", v, err)
	}
	if v, err := p.Sysctl("net.ipv4.tcp_rmem"); err != nil || len(strings.Split(v, " ")) != 3 {
		t.Errorf("Sysctl(net.ipv4.tcp_rmem) = %q, %v", v, err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if h, err := p.Hostname(); err != nil || h != host {
		t.Errorf("Hostname = %q, %v; os.Hostname %q", h, err, host)
	}
	if k, err := p.Kernel(); err != nil || k == "" {
		t.Errorf("Kernel = %q, %v", k, err)
	}
	// This test binary is a running process; its comm is its base name cut to 15 bytes.
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := p.Running(strings.TrimSpace(string(comm))); err != nil || !ok {
		t.Errorf("Running(%q) = %v, %v", comm, ok, err)
	}
	// The namespace-relative net directory reads the same files.
	if _, err := p.WithNetDir("/proc/thread-self/net").NetDev(); err != nil {
		t.Errorf("NetDev via /proc/thread-self/net: %v", err)
	}
}
