package ledger

import (
	"fmt"
	"sort"
	"strings"

	"linerate/source/ethtool"
	"linerate/source/rtnl"
)

// reasonPlaces maps the kernel's drop reasons (enum skb_drop_reason, as
// Linux 6.18 names them) to places. A reason not listed goes to Other,
// except TCP's own (ignoredReason): the test's datagrams are UDP, and TCP
// frees old, duplicate and out-of-window segments of the control
// connection as a matter of course.
var reasonPlaces = map[string]Place{
	"NETFILTER_DROP":     Netfilter,
	"NO_SOCKET":          NoSocket,
	"SOCKET_RCVBUFF":     SocketBuffer,
	"PROTO_MEM":          SocketBuffer,
	"SOCKET_BACKLOG":     SocketBuffer,
	"SOCKET_CLOSE":       SocketBuffer, // unread datagrams freed when the socket closed
	"CPU_BACKLOG":        Backlog,
	"XDP":                XDP,
	"FULL_RING":          NICRxRing, // a veth peer's ring full (NAPI mode), a tap's queue to its reader
	"DEV_READY":          NICTx,
	"QDISC_DROP":         Qdisc,
	"QDISC_OVERLIMIT":    Qdisc,
	"QDISC_CONGESTED":    Qdisc,
	"CAKE_FLOOD":         Qdisc,
	"FQ_BAND_LIMIT":      Qdisc,
	"FQ_HORIZON_LIMIT":   Qdisc,
	"FQ_FLOW_LIMIT":      Qdisc,
	"DUALPI2_STEP_DROP":  Qdisc,
	"TC_EGRESS":          Qdisc,
	"TC_INGRESS":         Qdisc,
	"TC_COOKIE_ERROR":    Qdisc,
	"TC_CHAIN_NOTFOUND":  Qdisc,
	"TC_RECLASSIFY_LOOP": Qdisc,
}

func ignoredReason(r string) bool {
	return strings.HasPrefix(r, "TCP_") || r == "SKB_CONSUMED" || r == "SKB_NOT_DROPPED_YET"
}

// counts are one host's drops by place, from counters and from drop
// reasons apart. A place's figure is the larger of the two, never their
// sum: both see the same packets.
type counts struct {
	counter, reason map[Place]uint64
	evidence        map[Place][]string
	notes           []string
}

func (c *counts) add(p Place, fromReason bool, n uint64, ev string) {
	if n == 0 {
		return
	}
	if fromReason {
		c.reason[p] += n
	} else {
		c.counter[p] += n
	}
	c.evidence[p] = append(c.evidence[p], ev)
}

func (c *counts) value(p Place) (uint64, []string) {
	return max(c.counter[p], c.reason[p]), c.evidence[p]
}

// queueDrops reads what the driver of iface dropped per receive queue
// (ethtool -S rx_queue_N_drops and the like). Where the interface's ring
// counters (ring) saw drops, the driver's per-queue figures say on which
// queues (igb counts a queue's overflows in both); otherwise they are the
// driver's own drops (virtio_net: receive errors and XDP drops, xdp of
// them already placed at XDP), placed as other.
func (c *counts) queueDrops(iface string, stats map[string]uint64, ring, xdp uint64) {
	drops := ethtool.RxQueueDrops(stats)
	if len(drops) == 0 {
		return
	}
	qs := make([]int, 0, len(drops))
	var total uint64
	for q, v := range drops {
		qs = append(qs, q)
		total += v
	}
	sort.Ints(qs)
	parts := make([]string, len(qs))
	for i, q := range qs {
		parts[i] = fmt.Sprintf("queue %d %d", q, drops[q])
	}
	ev := fmt.Sprintf("%s: the driver's per-queue drops: %s", iface, strings.Join(parts, ", "))
	if ring > 0 {
		c.evidence[NICRxRing] = append(c.evidence[NICRxRing], ev)
		return
	}
	if n := sub(total, xdp); n > 0 {
		if xdp > 0 {
			ev += fmt.Sprintf(" (less the %d XDP drops among them)", xdp)
		}
		c.add(Other, false, n, ev)
	}
}

func newCounts(h Host, t Test, sharedMachine bool) *counts {
	c := &counts{counter: map[Place]uint64{}, reason: map[Place]uint64{}, evidence: map[Place][]string{}}
	d := h.Delta
	sends := h.Side == Sender || h.Side == Local
	qdiscPlace := Qdisc
	if sends {
		qdiscPlace = SenderQdisc
	}
	onPath := func(iface string) bool {
		if len(h.Ifaces) == 0 {
			return true
		}
		for _, i := range h.Ifaces {
			if i == iface {
				return true
			}
		}
		return false
	}

	// Qdiscs: a root's counters include every qdisc and class below it.
	var qdrops uint64
	for _, q := range d.Qdiscs {
		if !q.Root() || !onPath(q.Iface) || q.Stats.Drops == 0 {
			continue
		}
		qdrops += q.Stats.Drops
		ev := fmt.Sprintf("%s %s on %s: %d dropped, %d overlimits", q.Kind, rtnl.Handle(q.Handle), q.Iface, q.Stats.Drops, q.Stats.Overlimits)
		if q.Limit > 0 {
			ev += fmt.Sprintf(" (limit %d %s)", q.Limit, q.LimitUnit)
		}
		c.add(qdiscPlace, false, q.Stats.Drops, ev)
	}

	// Interfaces.
	names := make([]string, 0, len(d.Links))
	for n := range d.Links {
		if onPath(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	// peerTx is what veths and taps dropped because the far side had no
	// room: with no qdisc between, a UDP sender counts it in SndbufErrors.
	var rxDropped, xdpDrops, peerTx uint64
	for _, n := range names {
		l := d.Links[n]
		s := l.Stats
		// A veth's tx_dropped counts what its peer's backlog or ring
		// refused: that drop belongs to the peer's place.
		if l.Kind == "veth" || l.Kind == "tun" {
			peerTx += s.TxDropped
		}
		txDropped := s.TxDropped
		if l.Kind == "tun" && txDropped > 0 {
			// A tap's tx_dropped is mostly what its reader had no room for
			// (tun_net_xmit's FULL_RING: the queue to the process behind
			// it, a QEMU guest's NIC, was full): the next hop's receive
			// ring, counted on this side.
			c.add(NICRxRing, false, txDropped, fmt.Sprintf("%s (tap): tx_dropped %d: its reader (the NIC of a guest behind it) had no room", n, txDropped))
			txDropped = 0
		}
		if l.Kind != "veth" && !l.Loopback {
			if tx := txDropped + s.TxErrors; tx > 0 {
				c.add(NICTx, false, tx, fmt.Sprintf("%s: tx_dropped %d, tx_errors %d (fifo %d, carrier %d, aborted %d)", n, txDropped, s.TxErrors, s.TxFifoErrors, s.TxCarrierErrors, s.TxAbortedErrors))
			}
		}
		ring := s.RxMissedErrors + s.RxFifoErrors + s.RxOverErrors
		if ring > 0 {
			c.add(NICRxRing, false, ring, fmt.Sprintf("%s: rx_missed %d, rx_fifo %d, rx_over %d", n, s.RxMissedErrors, s.RxFifoErrors, s.RxOverErrors))
		}
		if o := s.RxNohandler + s.RxOtherhostDropped + s.RxCRCErrors + s.RxFrameErrors + s.RxLengthErrors; o > 0 {
			c.add(Other, false, o, fmt.Sprintf("%s: rx_nohandler %d, rx_otherhost_dropped %d, rx_crc %d, rx_frame %d, rx_length %d", n, s.RxNohandler, s.RxOtherhostDropped, s.RxCRCErrors, s.RxFrameErrors, s.RxLengthErrors))
		}
		var x uint64
		var xnames []string
		for k, v := range d.Ethtool[n] {
			lk := strings.ToLower(k)
			if v > 0 && strings.Contains(lk, "xdp") && strings.Contains(lk, "drop") {
				x += v
				xnames = append(xnames, fmt.Sprintf("%s %d", k, v))
			}
		}
		if x > 0 {
			sort.Strings(xnames)
			c.add(XDP, false, x, n+": "+strings.Join(xnames, ", "))
		}
		xdpDrops += x
		c.queueDrops(n, d.Ethtool[n], ring, x)
		rxDropped += s.RxDropped
	}

	// Backlog: softnet_stat is per CPU of the machine, not per namespace.
	var softnet uint64
	var per []string
	for _, s := range d.Softnet {
		softnet += s.Dropped
		if s.Dropped > 0 {
			per = append(per, fmt.Sprintf("CPU%d %d", s.CPU, s.Dropped))
		}
	}
	if softnet > 0 {
		ev := "softnet_stat dropped: " + strings.Join(per, ", ")
		n := softnet
		switch {
		case sharedMachine:
			// Another host of the ledger shares these counters: take only
			// what this host's interfaces counted as rx_dropped (the core
			// counts a backlog drop there too).
			n = min(softnet, sub(rxDropped, xdpDrops))
			ev += fmt.Sprintf(" (the machine's, shared with other hosts of the ledger; %d of them as rx_dropped on %s)", n, strings.Join(names, ", "))
		case len(h.Ifaces) > 0:
			// The host's path is known: the machine's other interfaces
			// and namespaces (another lab, a guest's tap) drop into the
			// same counters. Only what its path counted as rx_dropped is
			// its own.
			n = min(softnet, sub(rxDropped, xdpDrops))
			ev += fmt.Sprintf(" (the machine's; %d of them as rx_dropped on %s, this host's path)", n, strings.Join(names, ", "))
		}
		if n == 0 {
			c.notes = append(c.notes, fmt.Sprintf("%s: %s, none on its path (other interfaces' or namespaces' traffic)", h.Name, ev))
		}
		c.add(Backlog, false, n, ev)
	}

	// SNMP.
	udp := d.SNMP["Udp"]
	if n := udp["NoPorts"]; n > 0 {
		c.add(NoSocket, false, n, fmt.Sprintf("Udp NoPorts %d", n))
	}
	if n := udp["RcvbufErrors"] + udp["MemErrors"]; n > 0 {
		c.add(SocketBuffer, false, n, fmt.Sprintf("Udp RcvbufErrors %d, MemErrors %d", udp["RcvbufErrors"], udp["MemErrors"]))
	}
	if n := sub(udp["InErrors"], udp["RcvbufErrors"]+udp["MemErrors"]); n > 0 {
		c.add(Other, false, n, fmt.Sprintf("Udp InErrors %d beyond RcvbufErrors and MemErrors (checksum errors %d)", udp["InErrors"], udp["InCsumErrors"]))
	}
	refused := uint64(0)
	if sends {
		refused = t.Refused
		// A qdisc drop of a UDP datagram returns ENOBUFS, which the kernel
		// swallows and counts as SndbufErrors (udp_send_skb); so does a
		// veth whose peer refused the packet (veth_xmit's NET_XMIT_DROP,
		// the veth's tx_dropped: the peer's drop), and so do sends the
		// application saw fail (EAGAIN, ENOBUFS). What remains died in the
		// socket layer after the application counted it sent.
		snd := udp["SndbufErrors"]
		raw := sub(snd, qdrops+peerTx)
		mine := min(raw, refused)
		refused -= mine
		if n := raw - mine; n > 0 {
			c.add(SenderSocket, false, n, fmt.Sprintf("Udp SndbufErrors %d, less %d qdisc drops, %d a veth peer or a tap's reader refused and %d refused sends", snd, qdrops, peerTx, mine))
		}
	}
	ip, ipext := d.SNMP["Ip"], d.SNMP["IpExt"]
	var ipOther []string
	var ipN uint64
	for _, f := range []struct {
		m    map[string]uint64
		sec  string
		name string
	}{{ip, "Ip", "OutNoRoutes"}, {ip, "Ip", "InHdrErrors"}, {ip, "Ip", "InAddrErrors"}, {ip, "Ip", "InUnknownProtos"},
		{ipext, "IpExt", "InNoRoutes"}, {ipext, "IpExt", "InTruncatedPkts"}} {
		if v := f.m[f.name]; v > 0 {
			ipN += v
			ipOther = append(ipOther, fmt.Sprintf("%s %s %d", f.sec, f.name, v))
		}
	}
	if ipN > 0 {
		c.add(Other, false, ipN, strings.Join(ipOther, ", "))
	}
	if ip["InDiscards"]+ip["OutDiscards"] > 0 {
		// Not placed: OutDiscards also counts the sender's qdisc drops,
		// InDiscards drops that other counters see.
		c.notes = append(c.notes, fmt.Sprintf("%s: Ip InDiscards %d, OutDiscards %d (seen, not placed: other counters own those drops)", h.Name, ip["InDiscards"], ip["OutDiscards"]))
	}

	// Netfilter.
	var ctDropped uint64
	if ct := d.Conntrack; ct != nil {
		ctDropped = ct.Dropped()
		if ctDropped > 0 {
			ev := fmt.Sprintf("nf_conntrack drop %d, insert_failed %d, early_drop %d; %d entries", ct.Counters["drop"], ct.Counters["insert_failed"], ct.Counters["early_drop"], ct.Entries)
			if ct.Max > 0 {
				ev += fmt.Sprintf(" of nf_conntrack_max %d", ct.Max)
			}
			c.add(Conntrack, false, ctDropped, ev)
		}
	}
	if rs := d.Nftables; rs != nil {
		for _, r := range rs.Rules {
			if !r.Verdict.Drops() || r.Packets == 0 {
				continue
			}
			if r.Exact {
				c.add(Netfilter, false, r.Packets, fmt.Sprintf("nft rule %s (%s): %d packets", r.Key(), r.Verdict, r.Packets))
			} else {
				c.evidence[Netfilter] = append(c.evidence[Netfilter], fmt.Sprintf("nft rule %s (%s): at most %d packets (its counter sits before a match)", r.Key(), r.Verdict, r.Packets))
			}
		}
		for _, p := range rs.DropPolicies {
			c.evidence[Netfilter] = append(c.evidence[Netfilter], "chain "+p+" has policy drop (not counted by nftables)")
		}
	}

	// Sends the sender's firewall refused (EPERM) were not counted as sent:
	// take what refusals SndbufErrors did not explain off its netfilter
	// figure.
	defer func() {
		if refused == 0 {
			return
		}
		c.counter[Netfilter] = sub(c.counter[Netfilter], refused)
		c.reason[Netfilter] = sub(c.reason[Netfilter], refused)
		c.evidence[Netfilter] = append(c.evidence[Netfilter], fmt.Sprintf("less %d refused sends (EPERM: not counted as sent)", refused))
	}()

	// Drop reasons: the namespace's kfree_skb counts.
	if d.Reasons == nil {
		why := d.Unavailable["reasons"]
		if why == "" {
			why = "not counted"
		}
		c.notes = append(c.notes, fmt.Sprintf("%s: drop reasons unavailable: %s", h.Name, why))
		return c
	}
	rnames := make([]string, 0, len(d.Reasons))
	for r := range d.Reasons {
		rnames = append(rnames, r)
	}
	sort.Strings(rnames)
	for _, r := range rnames {
		n := d.Reasons[r]
		if n == 0 || ignoredReason(r) {
			continue
		}
		p, ok := reasonPlaces[r]
		if !ok {
			p = Other
		}
		if p == Qdisc {
			p = qdiscPlace
		}
		ev := fmt.Sprintf("drop reason %s %d", r, n)
		if p == Netfilter && ctDropped > 0 {
			// The tracker's drops are netfilter verdicts too.
			n = sub(n, ctDropped)
			ev += fmt.Sprintf(" (%d of them conntrack's)", ctDropped)
		}
		c.add(p, true, n, ev)
	}
	return c
}
