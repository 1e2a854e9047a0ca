package ceiling

import (
	"fmt"
	"strings"

	"linerate/box"
	"linerate/internal/units"
	"linerate/source/rtnl"
)

// Buffer is what an interface's egress holds before it drops, in frames
// of a mix: a burst over the interface's rate is queued (or passed at
// once by a shaper's full bucket) instead of lost, until this many
// frames are held.
type Buffer struct {
	Frames float64 `json:"frames"`
	// What names what was counted: "tbf 1: on lra in client: queue
	// 256,072 B + bucket 131,072 B".
	What string `json:"what"`
}

// PathBuffer is the buffering ahead of the path's limit lim, read from
// path: the root egress qdisc of lim's interface, its queue limit (in
// packets, or in bytes of frames of m as the kernel counts them: no FCS)
// plus, for a token-bucket shaper, its bucket. ok is false when lim's
// interface is not in path or its root qdisc's limit was not read (htb,
// mq, cake: their queues are not decoded).
func PathBuffer(path []box.PathIface, lim PathLimit, m Mix) (Buffer, bool) {
	pkt := m.MeanBytes() - FCSBytes
	if pkt <= 0 {
		return Buffer{}, false
	}
	for _, p := range path {
		if p.Host != lim.Host || p.Iface != lim.Iface {
			continue
		}
		for _, q := range p.Qdiscs {
			if !q.Root() || q.Limit == 0 {
				continue
			}
			return qdiscBuffer(p, q, pkt), true
		}
	}
	return Buffer{}, false
}

// qdiscBuffer counts the root qdisc q of p in packets of pkt bytes.
func qdiscBuffer(p box.PathIface, q rtnl.Qdisc, pkt float64) Buffer {
	var frames float64
	var parts []string
	if q.LimitUnit == "packets" {
		frames = float64(q.Limit)
		parts = append(parts, "queue "+units.Count(float64(q.Limit))+" packets")
	} else {
		frames = float64(q.Limit) / pkt
		parts = append(parts, "queue "+units.Count(float64(q.Limit))+" B")
	}
	if q.Burst > 0 {
		frames += float64(q.Burst) / pkt
		parts = append(parts, "bucket "+units.Count(float64(q.Burst))+" B")
	}
	return Buffer{Frames: frames, What: fmt.Sprintf("%s %s on %s in %s: %s", q.Kind, rtnl.Handle(q.Handle), p.Iface, p.Host, strings.Join(parts, " + "))}
}
