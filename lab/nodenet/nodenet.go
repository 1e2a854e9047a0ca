// Package nodenet holds the pieces of a lab node's network that are the
// same wherever the node lives: the rate cap on an interface, the NAT
// table of a forwarding node, and netlink's form of an address. A node
// that is a network namespace gets them from the host (package lab); a
// node that is a virtual machine gets them from linerate inside the guest
// (package lab/vm). Both build them here, so the two kinds of node are
// configured alike.
package nodenet

import (
	"errors"
	"net"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TableName is the nftables table (family ip) a forwarding node NATs with.
const TableName = "linerate"

// TBF is the token bucket that caps one interface's egress at rate bits/s.
// The bucket holds 4 ms at that rate, and at least 128 KiB so that a
// 64 KiB GSO packet passes whole; the queue holds 10 ms more. tbf and htb
// are in nearly every kernel, netem is not. (tc-tbf(8): burst must be at
// least rate/HZ; the kernel's tbf times with hrtimers, so 4 ms covers
// HZ=250.)
func TBF(ifindex int, rate uint64) *netlink.Tbf {
	bytes := rate / 8
	burst := max(bytes/250, 128<<10)
	limit := burst + bytes/100
	return &netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: ifindex,
			Handle:    netlink.MakeHandle(1, 0),
			Parent:    netlink.HANDLE_ROOT,
		},
		Rate:   bytes,
		Buffer: netlink.Xmittime(bytes, uint32(burst)),
		Limit:  uint32(min(limit, 1<<32-1)),
	}
}

// Masquerade adds, through the nftables connection opts make (the
// namespace of an fd, or the caller's own), the equivalent of
//
//	table ip linerate {
//		chain postrouting {
//			type nat hook postrouting priority srcnat;
//			oifname "IFACE" counter masquerade
//		}
//	}
//
// NAT makes the namespace track connections (conntrack) as a home router
// does.
func Masquerade(iface string, opts ...nftables.ConnOption) error {
	c, err := nftables.New(opts...)
	if err != nil {
		return err
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: TableName})
	ch := c.AddChain(&nftables.Chain{
		Name:     "postrouting",
		Table:    t,
		Type:     nftables.ChainTypeNAT,
		Hooknum:  nftables.ChainHookPostrouting,
		Priority: nftables.ChainPriorityNATSource,
	})
	c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname(iface)},
		&expr.Counter{},
		&expr.Masq{},
	}})
	return c.Flush()
}

// TableExists reports whether linerate's nftables table is there.
func TableExists(opts ...nftables.ConnOption) (bool, error) {
	c, err := nftables.New(opts...)
	if err != nil {
		return false, err
	}
	ts, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return false, err
	}
	for _, t := range ts {
		if t.Name == TableName {
			return true, nil
		}
	}
	return false, nil
}

// DeleteTable removes linerate's nftables table; one that is not there is
// not an error.
func DeleteTable(opts ...nftables.ConnOption) error {
	ok, err := TableExists(opts...)
	if err != nil || !ok {
		return err
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return err
	}
	c.DelTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: TableName})
	if err := c.Flush(); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

// ifname is an interface name as nftables compares it: IFNAMSIZ bytes,
// NUL-padded.
func ifname(s string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, s)
	return b
}

// IPNet converts an address with its prefix length to netlink's form.
func IPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
