package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"linerate/internal/nsthread"
	"linerate/internal/testenv"
	"linerate/internal/usage"
)

// uniqueName is a lab name no other test run uses.
func uniqueName() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}

// newLab builds a lab with a unique name in a state directory of the
// test's own, and removes it when the test ends, even when it fails.
func newLab(t *testing.T, s Spec) (*Lab, Dir) {
	t.Helper()
	testenv.RequireRoot(t)
	d := Dir(t.TempDir())
	if s.Name == "" {
		s.Name = uniqueName()
	}
	cleanupLab(t, d, s.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := d.Up(ctx, s)
	if err != nil {
		t.Fatalf("Up %s %s: %v", s.Topology, s.Name, err)
	}
	return l, d
}

// cleanupLab removes the lab at the end of the test if it is still there,
// and fails the test if anything of it is left.
func cleanupLab(t *testing.T, d Dir, name string) {
	t.Cleanup(func() {
		if _, err := d.Load(name); err == nil {
			if err := d.Down(name); err != nil {
				t.Errorf("cleanup: Down(%s): %v", name, err)
			}
		}
		if left := leftovers(t, name); len(left) > 0 {
			t.Errorf("lab %s left namespaces %v", name, left)
		}
	})
}

// leftovers lists the named namespaces of lab name and their /etc/netns
// directories.
func leftovers(t *testing.T, name string) []string {
	t.Helper()
	ents, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), NetnsPrefix+name+"-") {
			left = append(left, e.Name())
		}
	}
	ents, err = os.ReadDir(etcNetns)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), NetnsPrefix+name+"-") {
			left = append(left, filepath.Join(etcNetns, e.Name()))
		}
	}
	return left
}

// handles opens every node's namespace, so a test can look inside after
// Down unbound them (an open handle keeps a namespace alive).
func handles(t *testing.T, l *Lab) map[string]netns.NsHandle {
	t.Helper()
	hs := map[string]netns.NsHandle{}
	for _, n := range l.Nodes {
		h, err := netns.GetFromName(n.Netns)
		if err != nil {
			t.Fatalf("open %s: %v", n.Netns, err)
		}
		hs[n.Name] = h
		t.Cleanup(func() { h.Close() })
	}
	return hs
}

func netlinkAt(t *testing.T, h netns.NsHandle) *netlink.Handle {
	t.Helper()
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nl.Close)
	return nl
}

func readSysctl(t *testing.T, h netns.NsHandle, key string) string {
	t.Helper()
	var v []byte
	err := inNetns(h, func() error {
		var err error
		v, err = os.ReadFile(filepath.Join(procSys, key))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(v))
}

// TestTopologies builds each topology, checks every node's interfaces,
// addresses, MTU, queues, qdisc, routes, forwarding and NAT table, then
// takes it down and checks that nothing is left: no namespace, no state
// or lock file, and (looking through handles kept open) no veth and no
// nftables table.
func TestTopologies(t *testing.T) {
	testenv.RequireRoot(t)
	for _, s := range []Spec{
		{Topology: Pair, MTU: 9000, Queues: 4},
		{Topology: Router, Rate: 1e9},
		{Topology: Star, Ports: 3, Queues: 2},
	} {
		t.Run(s.Topology, func(t *testing.T) {
			l, d := newLab(t, s)
			if !l.Complete || l.Status() != "up" {
				t.Errorf("status %s", l.Status())
			}
			hs := handles(t, l)
			for _, n := range l.Nodes {
				nl := netlinkAt(t, hs[n.Name])
				for _, f := range n.Ifaces {
					link, err := nl.LinkByName(f.Name)
					if err != nil {
						t.Fatalf("%s: %s: %v", n.Netns, f.Name, err)
					}
					a := link.Attrs()
					if link.Type() != "veth" || a.OperState != netlink.OperUp {
						t.Errorf("%s %s: type %s state %s", n.Netns, f.Name, link.Type(), a.OperState)
					}
					wantMTU := s.MTU
					if wantMTU == 0 {
						wantMTU = 1500
					}
					if a.MTU != wantMTU || a.NumTxQueues != l.Spec.Queues || a.NumRxQueues != l.Spec.Queues {
						t.Errorf("%s %s: mtu %d queues %d/%d, want %d and %d", n.Netns, f.Name, a.MTU, a.NumTxQueues, a.NumRxQueues, wantMTU, l.Spec.Queues)
					}
					addrs, err := nl.AddrList(link, netlink.FAMILY_V4)
					if err != nil || len(addrs) != 1 || addrs[0].IPNet.String() != f.Addr.String() {
						t.Errorf("%s %s: addresses %v, %v; want %s", n.Netns, f.Name, addrs, err, f.Addr)
					}
					qs, err := nl.QdiscList(link)
					if err != nil {
						t.Fatal(err)
					}
					var tbfRate uint64
					for _, q := range qs {
						if q, ok := q.(*netlink.Tbf); ok {
							tbfRate = q.Rate * 8
						}
					}
					if tbfRate != s.Rate {
						t.Errorf("%s %s: tbf rate %d bit/s, want %d", n.Netns, f.Name, tbfRate, s.Rate)
					}
				}
				routes, err := nl.RouteList(nil, netlink.FAMILY_V4)
				if err != nil {
					t.Fatal(err)
				}
				var gw string
				for _, r := range routes {
					if r.Dst == nil || r.Dst.IP.IsUnspecified() {
						gw = r.Gw.String()
					}
				}
				if n.Gateway.IsValid() != (gw != "") || (gw != "" && gw != n.Gateway.String()) {
					t.Errorf("%s: default route via %q, want %v", n.Netns, gw, n.Gateway)
				}
				want := "0"
				if n.Forward {
					want = "1"
				}
				if got := readSysctl(t, hs[n.Name], "net/ipv4/ip_forward"); got != want {
					t.Errorf("%s: ip_forward %s, want %s", n.Netns, got, want)
				}
				has, err := tableExists(hs[n.Name])
				if err != nil || has != (n.Masquerade != "") {
					t.Errorf("%s: nftables table %v, %v", n.Netns, has, err)
				}
			}

			if err := d.Down(l.Spec.Name); err != nil {
				t.Fatalf("Down: %v", err)
			}
			if left := leftovers(t, l.Spec.Name); len(left) > 0 {
				t.Errorf("namespaces left: %v", left)
			}
			for _, p := range []string{d.statePath(l.Spec.Name), d.lockPath(l.Spec.Name)} {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s left: %v", p, err)
				}
			}
			for name, h := range hs {
				links, err := netlinkAt(t, h).LinkList()
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range links {
					if k.Type() == "veth" {
						t.Errorf("%s: veth %s left after Down", name, k.Attrs().Name)
					}
				}
				if has, err := tableExists(h); has || err != nil {
					t.Errorf("%s: nftables table left after Down (%v)", name, err)
				}
			}
			if err := d.Down(l.Spec.Name); err == nil || !usage.Is(err) {
				t.Errorf("second Down: %v, want a usage error", err)
			}
		})
	}
}

func TestUpTwiceRefused(t *testing.T) {
	l, d := newLab(t, Spec{Topology: Pair})
	_, err := d.Up(context.Background(), Spec{Name: l.Spec.Name, Topology: Pair})
	if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "already up") {
		t.Fatalf("second Up: %v", err)
	}
	if _, err := d.Load(l.Spec.Name); err != nil {
		t.Errorf("the first lab's state is gone: %v", err)
	}
}

// TestUpCancelled stops Up half way with its context: Up removes what it
// made and leaves no state.
func TestUpCancelled(t *testing.T) {
	testenv.RequireRoot(t)
	d := Dir(t.TempDir())
	name := uniqueName()
	cleanupLab(t, d, name)
	ctx, cancel := context.WithCancel(context.Background())
	s := Spec{Name: name, Topology: Router, afterStep: func(done int) {
		if done == 7 {
			cancel()
		}
	}}
	_, err := d.Up(ctx, s)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Up = %v, want context.Canceled", err)
	}
	if left := leftovers(t, name); len(left) > 0 {
		t.Errorf("namespaces left: %v", left)
	}
	if _, err := d.Load(name); err == nil {
		t.Errorf("state file left after a cancelled Up")
	}
}

// TestForeignNamespace: a namespace lab up did not create is never
// touched, whether it is there before Up (Up refuses the name) or takes
// the name of one of the lab's namespaces later (Down leaves it).
func TestForeignNamespace(t *testing.T) {
	testenv.RequireRoot(t)
	name := uniqueName()
	foreignNS := NetnsName(name, "wan")
	d := Dir(t.TempDir())
	cleanupLab(t, d, name) // runs after the foreign namespace is deleted
	before := makeForeign(t, foreignNS)

	_, err := d.Up(context.Background(), Spec{Name: name, Topology: Router})
	if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), foreignNS) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Up over a foreign namespace = %v; want one usage line naming %s", err, foreignNS)
	}
	if left := leftovers(t, name); len(left) != 1 || left[0] != foreignNS {
		t.Errorf("namespaces after the refused Up: %v", left)
	}
	if err := d.Down(name); err == nil || !usage.Is(err) {
		t.Errorf("Down of a lab never built = %v, want a usage error", err)
	}
	checkForeign(t, foreignNS, before)

	// A lab whose namespace was replaced by someone else's.
	l, d := newLab(t, Spec{Topology: Pair})
	b, _ := l.Node("b")
	if err := unbindNetns(b.Netns); err != nil {
		t.Fatal(err)
	}
	before = makeForeign(t, b.Netns)
	if err := d.Down(l.Spec.Name); err != nil {
		t.Fatalf("Down: %v", err)
	}
	checkForeign(t, b.Netns, before)
	if left := leftovers(t, l.Spec.Name); len(left) != 1 {
		t.Errorf("after Down: %v, want only the foreign %s", left, b.Netns)
	}
}

// makeForeign creates a named namespace the way another tool would, with
// a veth pair in it, and removes it when the test ends.
func makeForeign(t *testing.T, name string) string {
	t.Helper()
	err := nsthread.Run(func() error {
		h, err := netns.NewNamed(name)
		if err != nil {
			return err
		}
		t.Cleanup(func() {
			if err := netns.DeleteNamed(name); err != nil {
				t.Errorf("delete foreign %s: %v", name, err)
			}
		})
		defer h.Close()
		return netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "foreign0"}, PeerName: "foreign1"})
	})
	if err != nil {
		t.Fatalf("foreign namespace %s: %v", name, err)
	}
	h, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	return h.UniqueId()
}

// checkForeign checks the foreign namespace is still there, the same one,
// with its interface.
func checkForeign(t *testing.T, name, id string) {
	t.Helper()
	h, err := netns.GetFromName(name)
	if err != nil {
		t.Fatalf("foreign namespace %s is gone: %v", name, err)
	}
	defer h.Close()
	if h.UniqueId() != id {
		t.Errorf("foreign namespace %s was replaced: %s, was %s", name, h.UniqueId(), id)
	}
	if _, err := netlinkAt(t, h).LinkByName("foreign0"); err != nil {
		t.Errorf("foreign namespace %s lost its interface: %v", name, err)
	}
}

// TestCrashThenDown runs Up in a child process that SIGKILLs itself after
// k steps, for k across the whole build, then checks that Down removes
// everything it left. The child is this test binary (see TestMain).
func TestCrashThenDown(t *testing.T) {
	testenv.RequireRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// 24 makes /etc/netns (if need be), 25 to 27 write the nodes' hosts
	// files there.
	for _, k := range []int{1, 2, 3, 5, 9, 12, 17, 21, 22, 24, 25, 26, 27} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			d := Dir(t.TempDir())
			name := uniqueName()
			cleanupLab(t, d, name)
			out, err := runHelper(exe, helperCrash, name, string(d), fmt.Sprint(k))
			if err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("helper: %v\n%s", err, out)
			}
			l, err := d.Load(name)
			if err != nil {
				t.Fatalf("no state after the crash: %v", err)
			}
			if l.Complete || l.Status() != "incomplete" {
				t.Errorf("status after crash %q (complete %v)", l.Status(), l.Complete)
			}
			if err := d.Down(name); err != nil {
				t.Fatalf("Down after crash at step %d: %v", k, err)
			}
			if left := leftovers(t, name); len(left) > 0 {
				t.Errorf("left after crash at step %d and Down: %v", k, left)
			}
			if ents, _ := os.ReadDir(string(d)); len(ents) > 0 {
				t.Errorf("state directory after Down holds %v", ents)
			}
		})
	}
}

// TestBuildSteps checks that the crash points of TestCrashThenDown all
// fall inside a router build.
func TestBuildSteps(t *testing.T) {
	steps := 0
	newLab(t, Spec{Topology: Router, afterStep: func(done int) { steps = done }})
	if steps < 27 {
		t.Errorf("a router build has %d steps; TestCrashThenDown kills up to step 27", steps)
	}
}

// TestDownJournalEdges covers the two crash points between journal writes
// that a step hook cannot reach: Up killed after creating the empty file
// that names a namespace but before binding it (Down removes the empty
// file), and Up killed before the namespace existed while someone else
// then took the name (Down leaves that namespace alone).
func TestDownJournalEdges(t *testing.T) {
	testenv.RequireRoot(t)
	d := Dir(t.TempDir())
	name := uniqueName()
	cleanupLab(t, d, name)
	l, err := Plan(Spec{Name: name, Topology: Pair})
	if err != nil {
		t.Fatal(err)
	}
	na, nb := NetnsName(name, "a"), NetnsName(name, "b")
	if err := shareNetnsDir(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(netnsPath(na), os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(netnsPath(na)) })
	before := makeForeign(t, nb)
	l.dir = d
	l.Objects = []Object{
		{Kind: KindNetns, Netns: na, Dev: 4, Ino: 4026530000},
		{Kind: KindNetns, Netns: nb},
	}
	if err := l.create(); err != nil {
		t.Fatal(err)
	}
	if err := d.Down(name); err != nil {
		t.Fatalf("Down: %v", err)
	}
	if _, err := os.Stat(netnsPath(na)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("placeholder %s left: %v", na, err)
	}
	checkForeign(t, nb, before)
}

// BenchmarkUpDown times building and removing a router lab.
func BenchmarkUpDown(b *testing.B) {
	testenv.RequireRoot(b)
	d := Dir(b.TempDir())
	for b.Loop() {
		name := uniqueName()
		if _, err := d.Up(context.Background(), Spec{Name: name, Topology: Router, Rate: 1e9}); err != nil {
			b.Fatal(err)
		}
		if err := d.Down(name); err != nil {
			b.Fatal(err)
		}
	}
}
