// Package testenv gives tests what they need from the machine: a check for
// root, and network namespaces and veth pairs that the test creates and
// removes (t.Cleanup), even when it fails.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// RequireRoot skips the test unless it runs as root and not with -short.
func RequireRoot(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("privileged test skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("privileged test needs root")
	}
}

// NetNS is a named network namespace made for one test.
type NetNS struct {
	Name   string
	Handle netns.NsHandle
}

// NewNetNS creates a network namespace named "lrt-<random>" (bound under
// /var/run/netns) with its loopback up, and removes it when the test ends.
func NewNetNS(t testing.TB) *NetNS {
	t.Helper()
	RequireRoot(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "lrt-" + hex.EncodeToString(b[:])
	var h netns.NsHandle
	err := onLockedThread(func() error {
		orig, err := netns.Get()
		if err != nil {
			return err
		}
		defer orig.Close()
		defer netns.Set(orig)
		h, err = netns.NewNamed(name)
		if err != nil {
			return err
		}
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.LinkSetUp(lo)
	})
	if err != nil {
		t.Fatalf("create netns %s: %v", name, err)
	}
	ns := &NetNS{Name: name, Handle: h}
	t.Cleanup(func() {
		h.Close()
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("delete netns %s: %v", name, err)
		}
	})
	return ns
}

// Do runs fn on an OS thread switched into the namespace.
func (n *NetNS) Do(fn func() error) error {
	return onLockedThread(func() error {
		orig, err := netns.Get()
		if err != nil {
			return err
		}
		defer orig.Close()
		if err := netns.Set(n.Handle); err != nil {
			return fmt.Errorf("enter netns %s: %w", n.Name, err)
		}
		defer netns.Set(orig)
		return fn()
	})
}

// Handle returns a netlink handle that works inside the namespace.
func (n *NetNS) Netlink(t testing.TB) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(n.Handle)
	if err != nil {
		t.Fatalf("netlink handle in %s: %v", n.Name, err)
	}
	t.Cleanup(h.Close)
	return h
}

// Veth creates a veth pair with end a in namespace na and end b in nb, both
// up, with the given number of rx/tx queues on each end (0 means 1). The
// pair disappears with its namespaces.
func Veth(t testing.TB, na *NetNS, a string, nb *NetNS, b string, queues int) {
	t.Helper()
	if queues <= 0 {
		queues = 1
	}
	la := netlink.NewLinkAttrs()
	la.Name = a
	la.NumTxQueues = queues
	la.NumRxQueues = queues
	la.Namespace = netlink.NsFd(na.Handle)
	v := &netlink.Veth{LinkAttrs: la, PeerName: b, PeerNamespace: netlink.NsFd(nb.Handle)}
	v.PeerNumTxQueues = uint32(queues)
	v.PeerNumRxQueues = uint32(queues)
	if err := netlink.LinkAdd(v); err != nil {
		t.Fatalf("create veth %s/%s: %v", a, b, err)
	}
	for _, e := range []struct {
		ns   *NetNS
		name string
	}{{na, a}, {nb, b}} {
		h := e.ns.Netlink(t)
		l, err := h.LinkByName(e.name)
		if err != nil {
			t.Fatalf("find %s in %s: %v", e.name, e.ns.Name, err)
		}
		if err := h.LinkSetUp(l); err != nil {
			t.Fatalf("set %s up: %v", e.name, err)
		}
	}
}

// AddAddr adds an address in CIDR form ("10.99.0.1/24") to an interface.
func (n *NetNS) AddAddr(t testing.TB, iface, cidr string) {
	t.Helper()
	h := n.Netlink(t)
	l, err := h.LinkByName(iface)
	if err != nil {
		t.Fatalf("find %s in %s: %v", iface, n.Name, err)
	}
	addr, err := netlink.ParseAddr(cidr)
	if err != nil {
		t.Fatalf("parse %s: %v", cidr, err)
	}
	if err := h.AddrAdd(l, addr); err != nil {
		t.Fatalf("add %s to %s: %v", cidr, iface, err)
	}
}

// onLockedThread runs fn on a fresh OS thread that is thrown away afterwards,
// so a namespace switch can never leak to other goroutines.
func onLockedThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread exits with the goroutine.
		errc <- fn()
	}()
	return <-errc
}
