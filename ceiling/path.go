package ceiling

import (
	"fmt"
	"math"

	"linerate/box"
	"linerate/internal/units"
	"linerate/source/rtnl"
)

// Limiters of a path.
const (
	// LimitLink is a link's speed.
	LimitLink = "link"
	// LimitShaper is a shaping qdisc's or class's rate.
	LimitShaper = "shaper"
)

// PathLimit is the slowest part of a path for a mix of frames.
type PathLimit struct {
	Host  string `json:"host"`
	Iface string `json:"iface"`
	// By is LimitLink or LimitShaper; What names it: "1G link",
	// "tbf 1: 100M".
	By   string `json:"by"`
	What string `json:"what"`
	// RateBps is the limiter's own rate: the link speed, or the shaper's
	// rate in bits per second of what it counts.
	RateBps float64 `json:"rate_bps"`
	// FPS is the most frames per second of the mix the path carries;
	// L2Bps those frames in bits (destination MAC through FCS); LineBps
	// with preamble, SFD and gap (what a link's speed counts).
	FPS     float64 `json:"fps"`
	L2Bps   float64 `json:"l2_bps"`
	LineBps float64 `json:"line_bps"`
}

// PathCeiling returns the slowest of the path's limits for the mix m:
// each physical interface's link speed (a veth, bridge or loopback has
// none that limits: it moves packets as fast as the CPU does, whatever
// speed it reports) and each shaper on an interface's egress: a qdisc
// with a rate (tbf, cake) or, under an htb root, the fastest ceiling of
// its top-level classes (a flow cannot go faster than the class it falls
// in; which class that is depends on filters this does not read). ok is
// false when nothing on the path limits.
func PathCeiling(path []box.PathIface, m Mix) (PathLimit, bool) {
	best := PathLimit{FPS: math.Inf(1)}
	found := false
	consider := func(p box.PathIface, by, what string, rate, fps float64) {
		if fps > 0 && fps < best.FPS {
			best = PathLimit{Host: p.Host, Iface: p.Iface, By: by, What: what, RateBps: rate, FPS: fps}
			found = true
		}
	}
	for _, p := range path {
		if p.Kind == "" && !p.Loopback && p.SpeedMbps > 0 {
			speed := float64(p.SpeedMbps) * 1e6
			consider(p, LimitLink, units.Speed(int64(speed))+" link", speed, m.LineFPS(speed))
		}
		for _, q := range p.Qdiscs {
			if q.Rate != nil {
				consider(p, LimitShaper, fmt.Sprintf("%s %s %s", q.Kind, rtnl.Handle(q.Handle), units.Speed(int64(q.Rate.BitsPerSecond()))),
					q.Rate.BitsPerSecond(), ShaperFPS(*q.Rate, m))
			}
			if q.Kind == "htb" {
				var top *rtnl.Class
				for i, c := range p.Classes {
					if c.Parent == q.Handle && c.Ceil != nil && (top == nil || c.Ceil.BytesPerSecond > top.Ceil.BytesPerSecond) {
						top = &p.Classes[i]
					}
				}
				if top != nil {
					consider(p, LimitShaper, fmt.Sprintf("htb class %s ceil %s", rtnl.Handle(top.Handle), units.Speed(int64(top.Ceil.BitsPerSecond()))),
						top.Ceil.BitsPerSecond(), ShaperFPS(*top.Ceil, m))
				}
			}
		}
	}
	if !found {
		return PathLimit{}, false
	}
	best.L2Bps = best.FPS * m.MeanBytes() * 8
	best.LineBps = best.FPS * m.MeanWireBytes() * 8
	return best, true
}

// ShaperFPS is the frames per second of the mix m that a shaper of rate r
// lets through. A shaper counts a packet as the kernel holds it: the
// Ethernet frame without its FCS, plus the rate's overhead, at least its
// MPU, and in whole 53-byte cells of 48 bytes on an ATM link layer
// (psched_l2t_ns in include/net/sch_generic.h).
func ShaperFPS(r rtnl.Rate, m Mix) float64 {
	size := m.meanOf(func(b int) float64 {
		n := b - FCSBytes + r.Overhead
		if n < r.MPU {
			n = r.MPU
		}
		if r.Linklayer == rtnl.LinklayerATM {
			n = (n + 47) / 48 * 53
		}
		return float64(n)
	})
	if size <= 0 || r.BytesPerSecond == 0 {
		return 0
	}
	return float64(r.BytesPerSecond) / size
}
