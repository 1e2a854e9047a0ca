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

// RxPackets is the packets each receive queue of the interface ifindex
// counted since the driver started counting, queue 0 first; queues the
// driver did not report are 0. Call it in the interface's network
// namespace.
func RxPackets(ifindex int) ([]uint64, error) {
	c, err := netlink.Dial(unix.NETLINK_GENERIC, nil)
	if err != nil {
		return nil, fmt.Errorf("qstats: %w", err)
	}
	defer c.Close()
	family, err := familyID(c)
	if err != nil {
		return nil, err
	}
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrIfindex, uint32(ifindex))
	ae.Uint32(attrScope, scopeQueue)
	attrs, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	msgs, err := c.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(family), Flags: netlink.Request | netlink.Dump},
		Data:   append(genlHeader(netdevCmdQstatsGet, netdevFamilyVersion), attrs...),
	})
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENODEV) {
		return nil, fmt.Errorf("interface %d: %w", ifindex, ErrUnsupported)
	}
	if err != nil {
		return nil, fmt.Errorf("qstats of interface %d: %w", ifindex, err)
	}
	var datas [][]byte
	for _, m := range msgs {
		datas = append(datas, m.Data)
	}
	out, err := parseRx(datas)
	if err != nil {
		return nil, fmt.Errorf("qstats of interface %d: %w", ifindex, err)
	}
	if out == nil {
		return nil, fmt.Errorf("interface %d: %w", ifindex, ErrUnsupported)
	}
	return out, nil
}

// parseRx reads the receive queues' packets out of the dump's messages
// (each a generic netlink header and one queue's attributes).
func parseRx(datas [][]byte) ([]uint64, error) {
	var out []uint64
	for _, d := range datas {
		if len(d) < genlHeaderLen {
			return nil, fmt.Errorf("a message of %d bytes", len(d))
		}
		ad, err := netlink.NewAttributeDecoder(d[genlHeaderLen:])
		if err != nil {
			return nil, err
		}
		var (
			typ, id = -1, -1
			packets *uint64
		)
		for ad.Next() {
			switch ad.Type() {
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
		if typ != queueTypeRx || id < 0 || id >= maxQueues || packets == nil {
			continue
		}
		if id >= len(out) {
			out = append(out, make([]uint64, id+1-len(out))...)
		}
		out[id] = *packets
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
