package rtnetlink

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"linerate/source/rtnl"
)

// Links dumps every interface of the namespace, ordered by index.
func (c *Conn) Links() ([]rtnl.Link, error) {
	// struct ifinfomsg: family, pad, type, index, flags, change.
	req := make([]byte, unix.SizeofIfInfomsg)
	msgs, err := c.dump(unix.RTM_GETLINK, unix.RTM_NEWLINK, req)
	if err != nil {
		return nil, fmt.Errorf("rtnetlink link dump: %w", err)
	}
	links := make([]rtnl.Link, 0, len(msgs))
	for _, m := range msgs {
		l, err := decodeLink(m)
		if err != nil {
			return nil, fmt.Errorf("rtnetlink link dump: %w", err)
		}
		links = append(links, l)
	}
	sort.Slice(links, func(i, j int) bool { return links[i].Index < links[j].Index })
	return links, nil
}

// decodeLink reads one RTM_NEWLINK payload: struct ifinfomsg and the
// IFLA_* attributes after it.
func decodeLink(b []byte) (rtnl.Link, error) {
	if len(b) < unix.SizeofIfInfomsg {
		return rtnl.Link{}, fmt.Errorf("link message of %d bytes, shorter than struct ifinfomsg", len(b))
	}
	l := rtnl.Link{
		Index:    int(int32(binary.NativeEndian.Uint32(b[4:8]))),
		Loopback: binary.NativeEndian.Uint16(b[2:4]) == unix.ARPHRD_LOOPBACK,
	}
	ad, err := netlink.NewAttributeDecoder(b[unix.SizeofIfInfomsg:])
	if err != nil {
		return l, fmt.Errorf("interface %d: %w", l.Index, err)
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.IFLA_IFNAME:
			l.Name = ad.String()
		case unix.IFLA_MTU:
			l.MTU = int(ad.Uint32())
		case unix.IFLA_MAX_MTU:
			l.MaxMTU = int(ad.Uint32())
		case unix.IFLA_TXQLEN:
			l.TxQueueLen = int(ad.Uint32())
		case unix.IFLA_QDISC:
			l.Qdisc = ad.String()
		case unix.IFLA_LINK:
			l.Peer = int(ad.Uint32())
		case unix.IFLA_STATS64:
			l.Stats = decodeLinkStats(ad.Bytes())
		case unix.IFLA_LINKINFO:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					if nad.Type() == unix.IFLA_INFO_KIND {
						l.Kind = nad.String()
					}
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return l, fmt.Errorf("interface %d (%s): %w", l.Index, l.Name, err)
	}
	return l, nil
}

// decodeLinkStats reads as many u64 counters as the kernel sent.
func decodeLinkStats(b []byte) rtnl.LinkStats {
	var s rtnl.LinkStats
	s.UnmarshalBinary(b)
	return s
}
