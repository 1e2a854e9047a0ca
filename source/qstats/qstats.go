// Package qstats reads the per-queue statistics drivers report through
// generic netlink's "netdev" family (NETDEV_CMD_QSTATS_GET, Linux 6.9 and
// later): the same counters `ynl --family netdev --dump qstats-get` and
// `ethtool -S` of newer drivers show, taken from the driver's own
// netdev_stat_ops. Drivers that moved their per-queue packet counters
// here (virtio_net, for one, no longer lists rxN_packets in ethtool -S)
// are read here; a driver without stat_ops, or a kernel without the
// family, is ErrUnsupported.
//
// Written over mdlayher/netlink by hand: the family is a handful of
// attributes, and no library this module uses speaks it.
package qstats

import (
	"errors"
	"fmt"
	"net"
	"slices"

	"linerate/source/feature"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nlenc"
	"golang.org/x/sys/unix"
)

// ErrUnsupported is wrapped when the kernel has no netdev family or the
// interface's driver reports no per-queue statistics. It is a
// feature.Error: errors.Is(err, feature.ErrNotSupported) holds.
var ErrUnsupported error = &feature.Error{Feature: "per-queue statistics (netdev qstats)", Lack: "unavailable"}

// From include/uapi/linux/genetlink.h and include/uapi/linux/netdev.h.
const (
	genlIDCtrl          = 0x10
	ctrlCmdGetFamily    = 3
	ctrlAttrFamilyID    = 1
	ctrlAttrFamilyName  = 2
	netdevCmdQstatsGet  = 12
	attrIfindex         = 1
	attrQueueType       = 2
	attrQueueID         = 3
	attrScope           = 4
	attrRxPackets       = 8
	queueTypeRx         = 0
	scopeQueue          = 1
	genlHeaderLen       = 4
	netdevFamilyName    = "netdev"
	netdevFamilyVersion = 1
	// maxQueues bounds the queues read: more than any NIC has.
	maxQueues = 1024
)

// Conn is a generic netlink socket to the netdev family, in the network
// namespace of the thread that dialled it: reads through it see that
// namespace's interfaces whichever thread makes them.
type Conn struct {
	c      *netlink.Conn
	family uint16
}

// Dial opens a Conn in the calling thread's network namespace; a kernel
// without the netdev family is ErrUnsupported.
func Dial() (*Conn, error) {
	c, err := netlink.Dial(unix.NETLINK_GENERIC, nil)
	if err != nil {
		return nil, fmt.Errorf("qstats: %w", err)
	}
	family, err := familyID(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &Conn{c: c, family: family}, nil
}

// Close closes the socket.
func (c *Conn) Close() error { return c.c.Close() }

// ByName is the packets each receive queue of the named interfaces (all
// that report them when ifaces is empty) counted, by name: one dump in the
// calling thread's network namespace. Interfaces whose drivers report no
// qstats are absent; a kernel without the family is ErrUnsupported.
func ByName(ifaces []string) (map[string][]uint64, error) {
	c, err := Dial()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	all, err := c.RxPacketsAll()
	if err != nil || len(all) == 0 {
		return nil, err
	}
	links, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("qstats: %w", err)
	}
	out := map[string][]uint64{}
	for _, l := range links {
		if q, ok := all[l.Index]; ok && (len(ifaces) == 0 || slices.Contains(ifaces, l.Name)) {
			out[l.Name] = q
		}
	}
	return out, nil
}

// RxPackets is the packets each receive queue of the interface ifindex
// counted since the driver started counting, queue 0 first; queues the
// driver did not report are 0. Call it in the interface's network
// namespace; Conn.RxPackets reads where the Conn was dialled.
func RxPackets(ifindex int) ([]uint64, error) {
	c, err := Dial()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.RxPackets(ifindex)
}

// RxPackets is the packets each receive queue of the interface ifindex (of
// the Conn's namespace) counted, as the function RxPackets.
func (c *Conn) RxPackets(ifindex int) ([]uint64, error) {
	all, err := c.dump(ifindex)
	if err != nil {
		return nil, fmt.Errorf("qstats of interface %d: %w", ifindex, err)
	}
	out := all[ifindex]
	if out == nil {
		return nil, fmt.Errorf("interface %d: %w", ifindex, ErrUnsupported)
	}
	return out, nil
}

// RxPacketsAll is RxPackets of every interface of the Conn's namespace
// whose driver reports per-queue statistics, by interface index: one
// dump.
func (c *Conn) RxPacketsAll() (map[int][]uint64, error) {
	all, err := c.dump(0)
	if err != nil {
		return nil, fmt.Errorf("qstats: %w", err)
	}
	return all, nil
}

// dump asks for the receive queues of ifindex (0: of every interface).
func (c *Conn) dump(ifindex int) (map[int][]uint64, error) {
	ae := netlink.NewAttributeEncoder()
	if ifindex > 0 {
		ae.Uint32(attrIfindex, uint32(ifindex))
	}
	ae.Uint32(attrScope, scopeQueue)
	attrs, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	msgs, err := c.c.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(c.family), Flags: netlink.Request | netlink.Dump},
		Data:   append(genlHeader(netdevCmdQstatsGet, netdevFamilyVersion), attrs...),
	})
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENODEV) {
		return nil, ErrUnsupported
	}
	if err != nil {
		return nil, err
	}
	datas := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		datas = append(datas, m.Data)
	}
	return parseRx(datas)
}

// parseRx reads the receive queues' packets out of the dump's messages
// (each a generic netlink header and one queue's attributes), by
// interface index.
func parseRx(datas [][]byte) (map[int][]uint64, error) {
	var out map[int][]uint64
	for _, d := range datas {
		if len(d) < genlHeaderLen {
			return nil, fmt.Errorf("a message of %d bytes", len(d))
		}
		ad, err := netlink.NewAttributeDecoder(d[genlHeaderLen:])
		if err != nil {
			return nil, err
		}
		var (
			ifindex, typ, id = -1, -1, -1
			packets          *uint64
		)
		for ad.Next() {
			switch ad.Type() {
			case attrIfindex:
				ifindex = int(ad.Uint32())
			case attrQueueType:
				typ = int(ad.Uint32())
			case attrQueueID:
				id = int(ad.Uint32())
			case attrRxPackets:
				v, ok := varUint(ad.Bytes())
				if !ok {
					return nil, fmt.Errorf("rx-packets of %d bytes", len(ad.Bytes()))
				}
				packets = &v
			}
		}
		if err := ad.Err(); err != nil {
			return nil, err
		}
		if typ != queueTypeRx || ifindex < 0 || id < 0 || id >= maxQueues || packets == nil {
			continue
		}
		if out == nil {
			out = map[int][]uint64{}
		}
		q := out[ifindex]
		if id >= len(q) {
			q = append(q, make([]uint64, id+1-len(q))...)
		}
		q[id] = *packets
		out[ifindex] = q
	}
	return out, nil
}

// varUint reads an attribute the kernel wrote with nla_put_uint: 4 bytes
// when the value fits, else 8, in host order.
func varUint(b []byte) (uint64, bool) {
	switch len(b) {
	case 4:
		return uint64(nlenc.Uint32(b)), true
	case 8:
		return nlenc.Uint64(b), true
	}
	return 0, false
}

// genlHeader is a generic netlink header: the command and version, and two
// reserved bytes.
func genlHeader(cmd, version uint8) []byte { return []byte{cmd, version, 0, 0} }

// familyID asks the generic netlink controller for the netdev family's
// message type.
func familyID(c *netlink.Conn) (uint16, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(ctrlAttrFamilyName, netdevFamilyName)
	attrs, err := ae.Encode()
	if err != nil {
		return 0, err
	}
	msgs, err := c.Execute(netlink.Message{
		Header: netlink.Header{Type: genlIDCtrl, Flags: netlink.Request},
		Data:   append(genlHeader(ctrlCmdGetFamily, 1), attrs...),
	})
	if errors.Is(err, unix.ENOENT) {
		return 0, fmt.Errorf("the kernel has no netdev family: %w", ErrUnsupported)
	}
	if err != nil {
		return 0, fmt.Errorf("qstats: find the netdev family: %w", err)
	}
	for _, m := range msgs {
		if len(m.Data) < genlHeaderLen {
			continue
		}
		ad, err := netlink.NewAttributeDecoder(m.Data[genlHeaderLen:])
		if err != nil {
			return 0, err
		}
		for ad.Next() {
			if ad.Type() == ctrlAttrFamilyID {
				return ad.Uint16(), nil
			}
		}
	}
	return 0, fmt.Errorf("qstats: the controller named no netdev family id: %w", ErrUnsupported)
}
