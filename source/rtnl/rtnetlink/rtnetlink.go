// Package rtnetlink is the client that reads what the kernel's routing
// netlink (rtnetlink) says about the interfaces and traffic-control queues
// of one network namespace, as the types of linerate/source/rtnl: every
// counter of struct rtnl_link_stats64, the statistics of each qdisc
// (packets, drops, overlimits, requeues, backlog) and the rates of shaping
// qdiscs and classes (tbf, htb, cake). Those types live apart from this
// client so that what only models or judges them links no netlink library.
//
// It speaks rtnetlink itself over mdlayher/netlink rather than through
// vishvananda/netlink because that library leaves out what the drop ledger
// needs: rx_nohandler and rx_otherhost_dropped of the link statistics, the
// 64-bit packet counter of a qdisc (TCA_STATS_PKT64), and cake's rate. The
// message layouts come from include/uapi/linux/rtnetlink.h, if_link.h,
// gen_stats.h and pkt_sched.h; decoders are pure functions of the message
// bytes and are tested without a kernel.
package rtnetlink

import (
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Conn is an rtnetlink socket in one network namespace. It is safe to use
// from any goroutine, one request at a time.
type Conn struct {
	c *netlink.Conn
}

// Dial opens an rtnetlink socket in the network namespace whose file
// descriptor is netnsFD (an open /var/run/netns/NAME or
// /proc/PID/task/TID/ns/net), or in the calling thread's namespace when
// netnsFD is 0 or less. The socket stays in that namespace: later calls work
// from any thread.
func Dial(netnsFD int) (*Conn, error) {
	cfg := &netlink.Config{}
	if netnsFD > 0 {
		cfg.NetNS = netnsFD
	}
	c, err := netlink.Dial(unix.NETLINK_ROUTE, cfg)
	if err != nil {
		return nil, fmt.Errorf("rtnetlink: %w", err)
	}
	return &Conn{c: c}, nil
}

// Close closes the socket.
func (c *Conn) Close() error {
	if c == nil || c.c == nil {
		return nil
	}
	err := c.c.Close()
	c.c = nil
	return err
}

// ErrClosed is returned by a Conn used after Close.
var ErrClosed = errors.New("rtnetlink: connection closed")

// dump sends a dump request of type typ with the fixed header hdr and
// returns the replies' payloads of type want.
func (c *Conn) dump(typ, want netlink.HeaderType, hdr []byte) ([][]byte, error) {
	if c == nil || c.c == nil {
		return nil, ErrClosed
	}
	msgs, err := c.c.Execute(netlink.Message{
		Header: netlink.Header{Type: typ, Flags: netlink.Request | netlink.Dump},
		Data:   hdr,
	})
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		if m.Header.Type == want {
			out = append(out, m.Data)
		}
	}
	return out, nil
}
