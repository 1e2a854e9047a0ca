package rtnl

import "fmt"

// The parents of qdiscs that hang from an interface itself rather than
// from a class (pkt_sched.h).
const (
	// HandleRoot is TC_H_ROOT: the egress root.
	HandleRoot uint32 = 0xFFFFFFFF
	// HandleIngress is TC_H_INGRESS; clsact uses the same parent.
	HandleIngress uint32 = 0xFFFFFFF1
)

// Linklayer is tc_ratespec's link layer: how a shaper sizes a packet.
type Linklayer uint8

// TC_LINKLAYER_* of pkt_sched.h.
const (
	LinklayerUnaware  Linklayer = 0
	LinklayerEthernet Linklayer = 1
	// LinklayerATM rounds every packet up to whole 53-byte cells of 48
	// bytes of payload.
	LinklayerATM Linklayer = 2
)

// Rate is the rate of a shaper and how it counts a packet's size: the
// packet as the kernel holds it (the Ethernet header and what follows it,
// no FCS, preamble or gap), plus Overhead, at least MPU, in ATM cells when
// Linklayer says so.
type Rate struct {
	BytesPerSecond uint64    `json:"bytes_per_second"`
	Overhead       int       `json:"overhead,omitempty"`
	MPU            int       `json:"mpu,omitempty"`
	Linklayer      Linklayer `json:"linklayer,omitempty"`
}

// BitsPerSecond is the rate in bits per second.
func (r Rate) BitsPerSecond() float64 { return float64(r.BytesPerSecond) * 8 }

// QdiscStats are the counters of a qdisc or class (TCA_STATS2).
type QdiscStats struct {
	Bytes   uint64 `json:"bytes"`
	Packets uint64 `json:"packets"`
	Drops   uint64 `json:"drops"`
	// Overlimits counts the times the qdisc held a packet back because it
	// was over its rate (a shaper throttling), not drops.
	Overlimits uint64 `json:"overlimits"`
	Requeues   uint64 `json:"requeues"`
	// Backlog (bytes) and Qlen (packets) are what is queued now: gauges.
	Backlog uint64 `json:"backlog"`
	Qlen    uint64 `json:"qlen"`
}

// Sub returns the counters of s − a (backlog and qlen stay s's); a counter
// that went backwards gives 0. The 32-bit drops, overlimits and requeues
// are taken modulo 2^32 so that a wrap between a and s still subtracts.
func (s QdiscStats) Sub(a QdiscStats) QdiscStats {
	d := QdiscStats{Backlog: s.Backlog, Qlen: s.Qlen}
	if s.Bytes > a.Bytes {
		d.Bytes = s.Bytes - a.Bytes
	}
	if s.Packets > a.Packets {
		d.Packets = s.Packets - a.Packets
	}
	d.Drops = uint64(uint32(s.Drops) - uint32(a.Drops))
	d.Overlimits = uint64(uint32(s.Overlimits) - uint32(a.Overlimits))
	d.Requeues = uint64(uint32(s.Requeues) - uint32(a.Requeues))
	return d
}

// Node is what qdiscs and classes share: where they sit.
type Node struct {
	Ifindex int    `json:"ifindex"`
	Iface   string `json:"iface"`
	Kind    string `json:"kind"`
	Handle  uint32 `json:"handle"`
	Parent  uint32 `json:"parent"`
}

// Qdisc is one queueing discipline of an interface.
type Qdisc struct {
	Node
	// Rate is set for a qdisc that shapes on its own (tbf, cake with a
	// bandwidth); htb's rates are its classes'.
	Rate *Rate `json:"rate,omitempty"`
	// Limit is the queue's length limit, in LimitUnit ("packets" or
	// "bytes"); 0 when the qdisc kind's options are not read here.
	Limit     uint32 `json:"limit,omitempty"`
	LimitUnit string `json:"limit_unit,omitempty"`
	// Burst is the bytes a token-bucket shaper (tbf) lets through at once
	// when its bucket is full, on top of what its queue (Limit) holds; 0
	// when the qdisc has no bucket or its options are not read here.
	Burst uint32     `json:"burst,omitempty"`
	Stats QdiscStats `json:"stats"`
}

// Root reports whether the qdisc is an interface's egress root: its
// counters include every qdisc and class below it.
func (q Qdisc) Root() bool { return q.Parent == HandleRoot }

// Ingress reports whether the qdisc is an ingress or clsact qdisc.
func (q Qdisc) Ingress() bool { return q.Parent == HandleIngress }

// Class is one traffic class of a classful qdisc.
type Class struct {
	Node
	// Rate is the guaranteed rate and Ceil the most the class may borrow
	// up to (htb); nil when the class kind has none.
	Rate  *Rate      `json:"rate,omitempty"`
	Ceil  *Rate      `json:"ceil,omitempty"`
	Stats QdiscStats `json:"stats"`
}

// Handle formats a tc handle as tc prints it: "1:", "1:10", "root",
// "ingress".
func Handle(h uint32) string {
	switch h {
	case HandleRoot:
		return "root"
	case HandleIngress:
		return "ingress"
	}
	major, minor := h>>16, h&0xffff
	if minor == 0 {
		return fmt.Sprintf("%x:", major)
	}
	return fmt.Sprintf("%x:%x", major, minor)
}
