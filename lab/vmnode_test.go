package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"linerate/internal/usage"
	"linerate/lab/vm"
)

// TestPlanVMRejects: what --vm cannot build is bad input naming the
// field, before anything is made.
func TestPlanVMRejects(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Name: "x", Topology: Pair, VM: &VM{}}, "VM names no node"},
		{Spec{Name: "x", Topology: Pair, VM: &VM{Nodes: []string{"router"}}}, `no node "router"`},
		{Spec{Name: "x", Topology: Pair, VM: &VM{Nodes: []string{"a", "b"}}}, "at most one node of a link"},
		{Spec{Name: "x", Topology: Router, VM: &VM{Nodes: []string{"lan", "router"}}}, "router and lan are linked"},
		{Spec{Name: "x", Topology: Pair, Queues: 2, VM: &VM{Nodes: []string{"b"}, NIC: vm.E1000E}}, "Queues 2 queues: QEMU's e1000e has one queue pair"},
		{Spec{Name: "x", Topology: Pair, VM: &VM{Nodes: []string{"b"}, NIC: "igb"}}, `NIC model "igb"`},
		{Spec{Name: "x", Topology: Pair, VM: &VM{Nodes: []string{"b"}, Image: "alpine"}}, `Image "alpine"`},
		{Spec{Name: "x", Topology: Pair, VM: &VM{Nodes: []string{"b"}, CPUs: 99}}, "CPUs 99"},
		{Spec{Name: "x", Topology: Pair, VM: &VM{Nodes: []string{"b"}, MemoryMB: 64}}, "MemoryMB 64"},
	} {
		_, err := Plan(tc.spec)
		if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a usage error with %q", tc.spec.VM, err, tc.want)
		}
	}
}

// TestPlanVMDefaults: a guest's defaults, the caller's spec untouched, and
// which nodes are guests.
func TestPlanVMDefaults(t *testing.T) {
	s := Spec{Name: "x", Topology: Router, VM: &VM{Nodes: []string{"router"}}}
	l, err := Plan(s)
	if err != nil {
		t.Fatal(err)
	}
	v := l.Spec.VM
	if v.NIC != vm.E1000E || v.Image != ImageInitramfs || v.CPUs != DefaultVMCPUs || v.MemoryMB != DefaultVMMemoryMB || v.BootTimeout != 2*time.Minute {
		t.Errorf("defaults: %+v", v)
	}
	if s.VM.NIC != "" {
		t.Errorf("Plan changed the caller's spec: %+v", s.VM)
	}
	if !l.IsVM("router") || l.IsVM("lan") || l.IsVM("wan") {
		t.Errorf("guests: router %v lan %v wan %v", l.IsVM("router"), l.IsVM("lan"), l.IsVM("wan"))
	}
	d, err := Plan(Spec{Name: "y", Topology: Pair, VM: &VM{Nodes: []string{"b"}, Image: ImageDebian}})
	if err != nil || d.Spec.VM.BootTimeout != 5*time.Minute {
		t.Errorf("a Debian guest's boot timeout: %v %v", d.Spec.VM.BootTimeout, err)
	}
}

// TestGuestConfig: what a guest is told of itself matches the lab's plan:
// its NICs named after their peers with their addresses, one MAC per
// link, its routes, forwarding and NAT, its hosts file.
func TestGuestConfig(t *testing.T) {
	l, err := Plan(Spec{Name: "x", Topology: Router, Rate: 100_000_000, MTU: 9000, VM: &VM{Nodes: []string{"router"}}})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := l.Node("router")
	b := &builder{lab: l}
	c := b.guestConfig(r, "")
	if len(c.Ifaces) != 2 || c.Ifaces[0].Name != "lan" || c.Ifaces[1].Name != "wan" {
		t.Fatalf("ifaces %+v", c.Ifaces)
	}
	for i, f := range c.Ifaces {
		if f.Addr != r.Ifaces[i].Addr || f.MTU != 9000 || f.Rate != 100_000_000 {
			t.Errorf("%s: %+v, want %s at MTU 9000 capped at 100M", f.Name, f, r.Ifaces[i].Addr)
		}
	}
	if c.Ifaces[0].MAC == c.Ifaces[1].MAC {
		t.Errorf("two NICs share MAC %s", c.Ifaces[0].MAC)
	}
	if !c.Forward || c.Masquerade != "wan" || c.Gateway.IsValid() {
		t.Errorf("routing: forward %v masquerade %q gateway %v", c.Forward, c.Masquerade, c.Gateway)
	}
	if !strings.Contains(c.Hosts, "lan") || !strings.Contains(c.Hosts, "wan") {
		t.Errorf("hosts:\n%s", c.Hosts)
	}
	if mac("x", 1) == mac("y", 1) {
		t.Errorf("labs x and y give link 1 the same MAC %s", mac("x", 1))
	}
}

// TestGuestLogs: a failed guest's message ends with the last lines of
// its supervisor's log and console, and says when the console is empty.
func TestGuestLogs(t *testing.T) {
	dir := t.TempDir()
	var sup strings.Builder
	for i := 1; i <= 10; i++ {
		sup.WriteString("line " + string(rune('0'+i%10)) + "\n")
	}
	os.WriteFile(filepath.Join(dir, "supervisor.log"), []byte(sup.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "console.log"), nil, 0o644)
	got := guestLogs(dir)
	if strings.Contains(got, "line 2") || !strings.Contains(got, "line 3") || !strings.Contains(got, "line 0") {
		t.Errorf("not the last 8 lines of the supervisor's log:\n%s", got)
	}
	if !strings.Contains(got, "console.log is empty: the guest printed nothing") {
		t.Errorf("an empty console is not said:\n%s", got)
	}
	os.WriteFile(filepath.Join(dir, "console.log"), []byte("[    0.000000] Linux version 6.1.0\n"), 0o644)
	if got := guestLogs(dir); !strings.Contains(got, "Linux version") || strings.Contains(got, "is empty") {
		t.Errorf("console's lines:\n%s", got)
	}
}
