package lab

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"linerate/internal/usage"
	"linerate/lab/nodenet"
)

// TableName is the nftables table (family ip) a forwarding node NATs with.
const TableName = nodenet.TableName

// Up builds a lab recorded in the default directory.
func Up(ctx context.Context, s Spec) (*Lab, error) { return DefaultDir().Up(ctx, s) }

// Up builds the lab s describes and records it in d. It refuses a lab that
// is already up and a name whose namespaces exist. Each object is written
// to the state file before it is made; if anything fails or ctx ends, Up
// removes what it made and returns the error (should that removal fail
// too, `lab down` finishes it from the state file).
func (d Dir) Up(ctx context.Context, s Spec) (*Lab, error) {
	l, err := Plan(s)
	if err != nil {
		return nil, err
	}
	l.dir = d
	l.Created = time.Now().UTC().Truncate(time.Millisecond)
	l.Pid = os.Getpid()
	if err := d.notUp(s.Name); err != nil {
		return nil, err
	}
	if err := RequireRoot("lab up"); err != nil {
		return nil, err
	}
	lk, err := d.lock(s.Name)
	if err != nil {
		return nil, err
	}
	if err := d.notUp(s.Name); err != nil { // again, under the lock
		lk.release(false)
		return nil, err
	}
	if err := d.dropEmptyPartial(s.Name); err != nil {
		lk.release(false)
		return nil, err
	}
	for _, n := range l.Nodes {
		exists, err := NetnsExists(n.Netns)
		if err == nil && exists {
			err = usage.Errorf("network namespace %s already exists and is not this lab's: choose another --name", n.Netns)
		}
		if err != nil {
			lk.release(true)
			return nil, err
		}
	}
	if err := l.create(); err != nil {
		lk.release(true)
		return nil, err
	}
	b := &builder{lab: l, ctx: ctx, ns: map[string]netns.NsHandle{}, nl: map[string]*netlink.Handle{}, taps: map[string][]*os.File{}}
	err = b.build()
	b.close()
	if err != nil {
		if derr := d.remove(l); derr != nil {
			lk.release(false)
			return nil, fmt.Errorf("%w; removing the half-built lab failed too: %v (linerate lab down %s retries)", err, derr, s.Name)
		}
		lk.release(true)
		return nil, err
	}
	l.Complete = true
	err = l.save()
	lk.release(false)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// notUp is a usage error if a lab by that name is recorded in d.
func (d Dir) notUp(name string) error {
	old, err := d.Load(name)
	switch {
	case err != nil:
		return nil
	case old.Status() == "incomplete":
		return usage.Errorf("lab %s exists but is incomplete (its lab up stopped half way): linerate lab down %s removes it", name, name)
	case old.Partial != "" && old.recordsNothing():
		return nil // Up takes it over: dropEmptyPartial
	case old.Partial != "":
		return usage.Errorf("lab %s exists but its state is partial (%s): linerate lab down %s removes it", name, old.Partial, name)
	}
	return usage.Errorf("lab %s is already %s (linerate lab down %s removes it)", name, old.Status(), name)
}

// recordsNothing reports whether a lab's journal records nothing made.
func (l *Lab) recordsNothing() bool { return len(l.Objects) == 0 && len(l.Agents) == 0 }

// dropEmptyPartial removes the unreadable state of a lab that recorded
// nothing (lab up killed before it made anything), so the name can be
// built again; the caller holds the lab's lock.
func (d Dir) dropEmptyPartial(name string) error {
	old, err := d.Load(name)
	if err != nil || old.Partial == "" || !old.recordsNothing() {
		return nil
	}
	p := d.statePath(name)
	for _, f := range []string{p + ".tmp", p} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the empty state of lab %s: %w", name, err)
		}
	}
	return nil
}

// builder makes the objects of one lab, journalling each first.
type builder struct {
	lab  *Lab
	ctx  context.Context
	done int // steps done, for Spec.afterStep
	ns   map[string]netns.NsHandle
	nl   map[string]*netlink.Handle
	// taps are the open queues of the taps behind each guest's NICs,
	// until its supervisor takes them.
	taps map[string][]*os.File
}

func (b *builder) close() {
	for _, fs := range b.taps {
		for _, f := range fs {
			f.Close()
		}
	}
	for _, h := range b.nl {
		h.Close()
	}
	for _, h := range b.ns {
		h.Close()
	}
}

// step counts one finished step and stops the build if ctx has ended.
func (b *builder) step() error {
	b.done++
	if f := b.lab.Spec.afterStep; f != nil {
		f(b.done)
	}
	if err := b.ctx.Err(); err != nil {
		return fmt.Errorf("lab up %s: %w", b.lab.Spec.Name, err)
	}
	return nil
}

// journal records an object about to be made and returns its index.
func (b *builder) journal(o Object) (int, error) {
	b.lab.Objects = append(b.lab.Objects, o)
	return len(b.lab.Objects) - 1, b.lab.save()
}

// finish marks journal entry i as made.
func (b *builder) finish(i int) error {
	b.lab.Objects[i].Done = true
	if err := b.lab.save(); err != nil {
		return err
	}
	return b.step()
}

func (b *builder) build() error {
	if err := shareNetnsDir(); err != nil {
		return err
	}
	for _, n := range b.lab.Nodes {
		if err := b.node(n); err != nil {
			return err
		}
	}
	for _, k := range b.lab.Links {
		if err := b.link(k); err != nil {
			return err
		}
	}
	for _, n := range b.lab.Nodes {
		if err := b.routing(n); err != nil {
			return err
		}
	}
	if err := b.etcNetnsDir(); err != nil {
		return err
	}
	for _, n := range b.lab.Nodes {
		if err := b.etcHosts(n); err != nil {
			return err
		}
	}
	if err := b.ready(); err != nil {
		return err
	}
	if b.lab.Spec.Serve != nil {
		if err := b.lab.dir.writeSecret(b.lab.Spec.Name); err != nil {
			return err
		}
	}
	if err := b.guests(); err != nil {
		return err
	}
	if b.lab.Spec.Serve != nil {
		return b.agents()
	}
	return nil
}

// ready waits until every interface is operationally up. The kernel turns
// a veth's carrier on through its link watcher, which may delay the event
// by up to a second (net/core/link_watch.c); until then the interface has
// no working qdisc and drops what is sent, so a lab is not handed over
// before.
func (b *builder) ready() error {
	deadline := time.Now().Add(5 * time.Second)
	for _, n := range b.lab.Nodes {
		if b.lab.IsVM(n.Name) {
			continue // its guest waits for its NICs itself
		}
		for _, f := range n.Ifaces {
			for {
				link, err := b.nl[n.Name].LinkByName(f.Name)
				if err != nil {
					return fmt.Errorf("find %s in %s: %w", f.Name, n.Netns, err)
				}
				if lowerUp(link) {
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("%s in %s is still %s after 5s", f.Name, n.Netns, link.Attrs().OperState)
				}
				select {
				case <-b.ctx.Done():
					return fmt.Errorf("lab up %s: %w", b.lab.Spec.Name, b.ctx.Err())
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
	}
	return nil
}

// node makes a node's namespace: journal, create unnamed, journal its
// identity, name it, journal done; then brings its loopback up.
func (b *builder) node(n Node) error {
	i, err := b.journal(Object{Kind: KindNetns, Netns: n.Netns})
	if err != nil {
		return err
	}
	h, dev, ino, err := newNetns()
	if err != nil {
		return err
	}
	b.ns[n.Name] = h
	b.lab.Objects[i].Dev, b.lab.Objects[i].Ino = dev, ino
	if err := b.lab.save(); err != nil {
		return err
	}
	if err := b.step(); err != nil {
		return err
	}
	if err := bindNetns(h, n.Netns); err != nil {
		return err
	}
	if err := b.finish(i); err != nil {
		return err
	}
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", n.Netns, err)
	}
	b.nl[n.Name] = nl
	lo, err := nl.LinkByName("lo")
	if err == nil {
		err = nl.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("loopback of %s: %w", n.Netns, err)
	}
	return b.step()
}

// link makes one veth pair with each end created directly in its node's
// namespace (nothing passes through the caller's), then addresses it,
// brings it up and caps it.
func (b *builder) link(k Link) error {
	s := b.lab.Spec
	switch {
	case b.lab.IsVM(k.A.Node):
		return b.vmLink(k, k.A, k.B)
	case b.lab.IsVM(k.B.Node):
		return b.vmLink(k, k.B, k.A)
	}
	na, nb := NetnsName(s.Name, k.A.Node), NetnsName(s.Name, k.B.Node)
	i, err := b.journal(Object{Kind: KindVeth, Netns: na, Name: k.A.Iface})
	if err != nil {
		return err
	}
	la := netlink.NewLinkAttrs()
	la.Name = k.A.Iface
	la.MTU = s.MTU
	la.NumTxQueues, la.NumRxQueues = s.Queues, s.Queues
	la.Namespace = netlink.NsFd(b.ns[k.A.Node])
	v := &netlink.Veth{
		LinkAttrs:       la,
		PeerName:        k.B.Iface,
		PeerNamespace:   netlink.NsFd(b.ns[k.B.Node]),
		PeerMTU:         uint32(s.MTU),
		PeerNumTxQueues: uint32(s.Queues),
		PeerNumRxQueues: uint32(s.Queues),
	}
	if err := b.nl[k.A.Node].LinkAdd(v); err != nil {
		return fmt.Errorf("create veth %s (%s) — %s (%s): %w", k.A.Iface, na, k.B.Iface, nb, err)
	}
	if err := b.finish(i); err != nil {
		return err
	}
	for _, e := range []End{k.A, k.B} {
		if err := b.end(e); err != nil {
			return err
		}
	}
	return nil
}

// end addresses one end of a link, brings it up and caps its egress.
func (b *builder) end(e End) error {
	nl := b.nl[e.Node]
	where := e.Iface + " in " + NetnsName(b.lab.Spec.Name, e.Node)
	link, err := nl.LinkByName(e.Iface)
	if err != nil {
		return fmt.Errorf("find %s: %w", where, err)
	}
	if err := nl.AddrAdd(link, &netlink.Addr{IPNet: nodenet.IPNet(e.Addr)}); err != nil {
		return fmt.Errorf("address %s on %s: %w", e.Addr, where, err)
	}
	if err := b.step(); err != nil {
		return err
	}
	if rate := b.lab.Spec.Rate; rate != 0 {
		if err := nl.QdiscAdd(nodenet.TBF(link.Attrs().Index, rate)); err != nil {
			return fmt.Errorf("cap %s at %sbit/s with tbf: %w", where, FormatRate(rate), err)
		}
		if err := b.step(); err != nil {
			return err
		}
	}
	if err := nl.LinkSetUp(link); err != nil {
		return fmt.Errorf("bring %s up: %w", where, err)
	}
	return b.step()
}

// routing gives a node its default route, forwarding and NAT.
func (b *builder) routing(n Node) error {
	if b.lab.IsVM(n.Name) {
		return nil // the guest routes as its configuration says
	}
	nl := b.nl[n.Name]
	if n.Gateway.IsValid() {
		r := &netlink.Route{Gw: net.IP(n.Gateway.AsSlice())}
		if err := nl.RouteAdd(r); err != nil {
			return fmt.Errorf("default route via %s in %s: %w", n.Gateway, n.Netns, err)
		}
		if err := b.step(); err != nil {
			return err
		}
	}
	if n.Forward {
		if err := setSysctl(b.ns[n.Name], "net/ipv4/ip_forward", "1"); err != nil {
			return fmt.Errorf("ip_forward in %s: %w", n.Netns, err)
		}
		if err := b.step(); err != nil {
			return err
		}
	}
	if n.Masquerade != "" {
		i, err := b.journal(Object{Kind: KindTable, Netns: n.Netns, Name: TableName})
		if err != nil {
			return err
		}
		if err := nodenet.Masquerade(n.Masquerade, nftables.WithNetNSFd(int(b.ns[n.Name]))); err != nil {
			return fmt.Errorf("nftables NAT in %s: %w", n.Netns, err)
		}
		return b.finish(i)
	}
	return nil
}

// tableExists reports whether namespace h holds linerate's nftables table.
func tableExists(h netns.NsHandle) (bool, error) {
	return nodenet.TableExists(nftables.WithNetNSFd(int(h)))
}

// deleteTable removes linerate's nftables table from namespace h.
func deleteTable(h netns.NsHandle) error {
	return nodenet.DeleteTable(nftables.WithNetNSFd(int(h)))
}
