// Package ledger says where the packets a test lost died: from the drop
// counters of every host that took part (both ends and any device in the
// middle), counted over the test's window, it builds entries {host, side,
// place, packets, evidence} that add up to sent − received, with
// "unaccounted" for what no counter can place.
//
// Build is a pure function: the counters are read elsewhere (box.DropReader
// and box.DropDelta) and handed in. docs/ledger.md describes the places,
// where each counter comes from, and how a drop seen by two counters is
// counted once.
package ledger

import (
	"fmt"
	"slices"
	"sort"

	"linerate/box"
)

// Place is where on the path a packet died.
type Place string

// The places, roughly in the order a packet meets them.
const (
	// SenderSocket: the sending host's socket layer dropped datagrams the
	// application had handed over (Udp SndbufErrors beyond the sender's
	// qdisc drops and refused sends).
	SenderSocket Place = "sender-socket"
	// SenderQdisc: a qdisc of the sending host's egress interface.
	SenderQdisc Place = "sender-qdisc"
	// NICTx: an interface's transmit path (tx_dropped, tx_errors).
	NICTx Place = "nic-tx"
	// NICRxRing: the receiving NIC had no room (rx_missed, rx_fifo,
	// rx_over errors; a full veth ring).
	NICRxRing Place = "nic-rx-ring"
	// Backlog: a CPU's input backlog was full (softnet_stat dropped).
	Backlog Place = "backlog"
	// Netfilter: a firewall rule or chain policy dropped or rejected it.
	Netfilter Place = "netfilter"
	// Conntrack: the connection tracker dropped it (table full, insert
	// failed).
	Conntrack Place = "conntrack"
	// Qdisc: a qdisc of a host other than the sender (a router's shaper).
	Qdisc Place = "qdisc"
	// NoSocket: nothing listened on the destination port (Udp NoPorts).
	NoSocket Place = "no-socket"
	// SocketBuffer: the receiving socket's buffer was full (Udp
	// RcvbufErrors, MemErrors).
	SocketBuffer Place = "socket-buffer"
	// XDP: an XDP program dropped it.
	XDP Place = "xdp"
	// LinkDown: sent while an interface of the path was down (a link
	// event of either end): whatever counter saw them die, the cause is
	// the link.
	LinkDown Place = "link-down"
	// Other: a counter or drop reason that none of the places above owns
	// (no route, bad header, checksum, neighbour queue...).
	Other Place = "other"
	// Unaccounted: lost, and no counter says where.
	Unaccounted Place = "unaccounted"
)

// Places lists every place in ledger order.
var Places = []Place{LinkDown, SenderSocket, SenderQdisc, NICTx, NICRxRing, Backlog, Netfilter, Conntrack, Qdisc, NoSocket, SocketBuffer, XDP, Other, Unaccounted}

// Side is the part a host played in the test.
type Side string

// The sides.
const (
	Sender   Side = "sender"
	Receiver Side = "receiver"
	// Path is a device in the middle (a router, a NAT).
	Path Side = "path"
	// Local is a host that both sent and received (a test over loopback).
	Local Side = "local"
)

// Host is one host's (network namespace's) counters over the test's
// window.
type Host struct {
	// Name is how the host is shown: "client", "server", "router".
	Name string
	Side Side
	// Ifaces are the host's interfaces on the test's path: the sender's
	// egress, the receiver's ingress, a router's both. Link and qdisc
	// counters are read only there; empty means every interface.
	Ifaces []string
	// Delta is box.DropDelta of the snapshots taken just before the
	// test's measured window and after its receivers stopped.
	Delta box.Drops
}

// Test is what the test itself counted.
type Test struct {
	// Sent and Received are the test's datagrams in the measured window.
	Sent, Received uint64
	// Refused is the datagrams the sender's kernel refused (a send call
	// failed) and the test did not count as sent: they also show in Udp
	// SndbufErrors and must not be placed.
	Refused uint64
	// LinkDown is the test's datagrams sent while an interface of the path
	// was down, LinkEvidence the events that say so: that many of the
	// loss are placed at LinkDown, before any counter.
	LinkDown     uint64
	LinkEvidence []string
}

// Entry is one place where packets died.
type Entry struct {
	Host     string   `json:"host"`
	Side     Side     `json:"side"`
	Place    Place    `json:"place"`
	Packets  uint64   `json:"packets"`
	Evidence []string `json:"evidence,omitempty"`
}

// Ledger is where a test's lost packets died.
type Ledger struct {
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	// Lost is Sent − Received (0 when more arrived than were sent:
	// duplicates).
	Lost    uint64  `json:"lost"`
	Entries []Entry `json:"entries"`
	// Excess is how many more drops the counters placed than the test
	// lost: traffic other than the test's dropped at the same places, or
	// counters read over a wider window. 0 when the ledger balances.
	Excess uint64   `json:"excess,omitempty"`
	Notes  []string `json:"notes,omitempty"`
}

// Placed is the packets of every entry but unaccounted.
func (l Ledger) Placed() uint64 {
	var n uint64
	for _, e := range l.Entries {
		if e.Place != Unaccounted {
			n += e.Packets
		}
	}
	return n
}

// Unaccounted is the packets no counter placed.
func (l Ledger) Unaccounted() uint64 {
	for _, e := range l.Entries {
		if e.Place == Unaccounted {
			return e.Packets
		}
	}
	return 0
}

// Tolerance is how far the entries may be from sent − received, as a
// share of what was sent, for the ledger to balance.
const Tolerance = 0.005

// Balanced reports whether the placed entries plus unaccounted come to
// the loss within Tolerance of what was sent (they do by construction
// unless the counters placed more than was lost).
func (l Ledger) Balanced() bool {
	return float64(l.Excess) <= Tolerance*float64(max(l.Sent, 1))
}

// Build places a test's lost packets using each host's counters. Hosts
// are one per network namespace; give a namespace that sends and receives
// once, as Local.
func Build(t Test, hosts []Host) Ledger {
	l := Ledger{Sent: t.Sent, Received: t.Received}
	if t.Sent > t.Received {
		l.Lost = t.Sent - t.Received
	}
	machines := shareMachines(hosts)
	var others []Entry
	for i, h := range hosts {
		c := newCounts(h, t, machines[i])
		for _, p := range Places {
			n, ev := c.value(p)
			if n == 0 {
				continue
			}
			e := Entry{Host: h.Name, Side: h.Side, Place: p, Packets: n, Evidence: ev}
			if p == Other {
				others = append(others, e)
				continue
			}
			l.Entries = append(l.Entries, e)
		}
		l.Notes = append(l.Notes, c.notes...)
	}
	placed := l.Placed()
	placed += l.placeLinkDown(t, placed)
	// What none of the places owns is counted last, and no more of it
	// than the loss leaves: those counters also see traffic that is not
	// the test's (neighbour discovery, stray multicast).
	for _, e := range others {
		left := sub(l.Lost, placed)
		if e.Packets > left {
			e.Evidence = append(e.Evidence, fmt.Sprintf("%d counted, %d placed: the rest is more than the test lost (other traffic)", e.Packets, left))
			e.Packets = left
		}
		if e.Packets > 0 {
			l.Entries = append(l.Entries, e)
			placed += e.Packets
		}
	}
	if placed > l.Lost {
		l.Excess = placed - l.Lost
		l.Notes = append(l.Notes, fmt.Sprintf("the counters place %d more drops than the test lost: other traffic dropped at the same places, or a counter read over a wider window than the test's", l.Excess))
	} else if placed < l.Lost {
		l.Entries = append(l.Entries, Entry{Place: Unaccounted, Packets: l.Lost - placed,
			Evidence: []string{"no counter of the hosts given says where these died"}})
	}
	sort.SliceStable(l.Entries, func(i, j int) bool { return placeRank(l.Entries[i].Place) < placeRank(l.Entries[j].Place) })
	return l
}

// linkDownOverlap is where, in this order, the drops of a link that is
// down are counted (a veth or NIC with no carrier drops at transmit, a
// down interface's packets die as "other" reasons or in a qdisc).
var linkDownOverlap = []Place{NICTx, Other, NICRxRing, SenderQdisc, Qdisc, SenderSocket}

// placeLinkDown places what was sent while a link was down, up to the
// loss, and takes from the counters' entries (those where a down link's
// drops are counted) what would then be placed twice. It returns how
// many more packets are placed.
func (l *Ledger) placeLinkDown(t Test, placed uint64) uint64 {
	n := min(t.LinkDown, l.Lost)
	if n == 0 {
		return 0
	}
	ev := append([]string{fmt.Sprintf("%d datagrams were sent while the link was down", t.LinkDown)}, t.LinkEvidence...)
	over := sub(placed+n, l.Lost)
	for _, p := range linkDownOverlap {
		for i := range l.Entries {
			e := &l.Entries[i]
			if over == 0 || e.Place != p {
				continue
			}
			k := min(over, e.Packets)
			e.Packets -= k
			over -= k
			ev = append(ev, fmt.Sprintf("%d of them counted at the %s's %s, fell while the link was down", k, e.Host, p))
		}
	}
	l.Entries = append(l.Entries, Entry{Side: Path, Place: LinkDown, Packets: n, Evidence: ev})
	l.Entries = slices.DeleteFunc(l.Entries, func(e Entry) bool { return e.Packets == 0 })
	return n - sub(placed+n, l.Lost) + over
}

func placeRank(p Place) int {
	for i, q := range Places {
		if p == q {
			return i
		}
	}
	return len(Places)
}

func sub(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return 0
}

// shareMachines tells for each host whether another host of the ledger
// runs on the same kernel (same boot id): their softnet counters are the
// same numbers.
func shareMachines(hosts []Host) []bool {
	n := map[string]int{}
	for _, h := range hosts {
		if h.Delta.Machine != "" {
			n[h.Delta.Machine]++
		}
	}
	out := make([]bool, len(hosts))
	for i, h := range hosts {
		out[i] = h.Delta.Machine != "" && n[h.Delta.Machine] > 1
	}
	return out
}
