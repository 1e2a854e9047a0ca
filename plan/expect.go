package plan

import (
	"fmt"
	"math"
	"slices"

	"linerate/ceiling"
	"linerate/wire"
)

// Traffic is what goes one way: frames per second, the goodput (L4 payload) they
// carry and the line rate they fill (preamble, SFD and gap counted).
// Known is false when nothing bounds it: no rate and no link speed given,
// so it goes as fast as the path allows.
type Traffic struct {
	PPS        float64 `json:"pps"`
	GoodputBps float64 `json:"goodput_bps"`
	LineBps    float64 `json:"line_bps"`
	Known      bool    `json:"known"`
}

func (l *Traffic) add(o Traffic) {
	l.PPS += o.PPS
	l.GoodputBps += o.GoodputBps
	l.LineBps += o.LineBps
}

// PortTraffic is what the plan sends through one port of a host (one of
// the host's ports, or one destination address when the plan describes
// no ports): In into the host (forward), Out from it (reverse); bidir is
// both.
type PortTraffic struct {
	Host string `json:"host"`
	// Port is the port's name, empty when the plan gives none.
	Port      string   `json:"port,omitempty"`
	Addresses []string `json:"addresses"`
	// Flows are the positions in Plan.Flows of the flows through it.
	Flows []int `json:"flows"`
	// SpeedBps is the port's link speed (0: not given).
	SpeedBps int64   `json:"speed_bps,omitempty"`
	In       Traffic `json:"in"`
	Out      Traffic `json:"out"`
}

// BusTraffic is the plan's traffic through the ceiling host's PCIe bus.
type BusTraffic struct {
	Host string      `json:"host"`
	Bus  ceiling.Bus `json:"bus"`
	// Ports are the host's ports behind the bus (all when empty).
	Ports []string `json:"ports,omitempty"`
	// Expected is the goodput the links let through the bus, both ways
	// added.
	Expected Traffic `json:"expected"`
	// CarriedBps is the goodput the bus carries of that traffic: all of it
	// when the bus suffices. With Expected unknown, it is the most the bus
	// carries with every flow's frames in equal numbers.
	CarriedBps float64 `json:"carried_bps"`
	// Share is how much of the expected traffic the bus carries (1 or more:
	// all of it); 0 when Expected is unknown.
	Share float64 `json:"share,omitempty"`
	// Binding is the link direction that runs out first: up (device to
	// memory: received frames) or down.
	Binding string `json:"binding"`
}

// Expectation is what a plan's links and its ceiling let it carry, worked
// out before it runs.
type Expectation struct {
	// Flows holds each flow's expected load out of its sender and back
	// (forward, reverse), in Plan.Flows order.
	Flows []FlowTraffic `json:"flows"`
	Ports []PortTraffic `json:"ports"`
	Total Traffic       `json:"total"`
	Bus   *BusTraffic   `json:"bus,omitempty"`
	// Limited is Total after the bus: the goodput the plan can reach.
	LimitedBps float64 `json:"limited_bps"`
}

// FlowTraffic is one flow's expected load each way.
type FlowTraffic struct {
	Forward Traffic `json:"forward"`
	Reverse Traffic `json:"reverse"`
}

// sends says whether a flow of direction dir carries traffic forward
// (from → to) and back.
func sends(dir wire.Direction) (forward, reverse bool) {
	return dir != wire.Reverse, dir != wire.Forward
}

// askedFPS is the frame rate a flow asks for; 0 when it asks for none. A
// TCP rate in bits per second counts payload, as the agents pace it.
func askedFPS(f *Flow, fr ceiling.Frame) float64 {
	if f.Proto == wire.TCP {
		return f.Rate.PacketsPerSecond(max(fr.Payload, 1))
	}
	return f.Rate.PacketsPerSecond(fr.Bytes)
}

func loadOf(fps float64, fr ceiling.Frame) Traffic {
	return Traffic{PPS: fps, GoodputBps: fps * float64(fr.Payload*8), LineBps: ceiling.LineBps(fps, fr), Known: true}
}

// Expect works out the plan's expectation. bus, when not nil, is the
// ceiling host's bus (the plan's own, or one read from its capture).
func (pl *Plan) Expect(bus *ceiling.Bus) (*Expectation, error) {
	e := &Expectation{Flows: make([]FlowTraffic, len(pl.Flows))}
	frames := make([]ceiling.Frame, len(pl.Flows))
	for i := range pl.Flows {
		fr, err := pl.Flows[i].Frame()
		if err != nil {
			return nil, fmt.Errorf("flow %d: %w", pl.Flows[i].Index, err)
		}
		frames[i] = fr
	}
	// Ports in the order their first flow comes.
	for i := range pl.Flows {
		f := &pl.Flows[i]
		if f.RR != nil {
			continue // transactions: a round trip's rate, not a share of the line
		}
		j := slices.IndexFunc(e.Ports, func(p PortTraffic) bool {
			return p.Host == f.To && (f.Port != "" && p.Port == f.Port || f.Port == "" && p.Port == "" && p.Addresses[0] == f.Address)
		})
		if j < 0 {
			e.Ports = append(e.Ports, PortTraffic{Host: f.To, Port: f.Port, SpeedBps: f.SpeedBps})
			j = len(e.Ports) - 1
		}
		p := &e.Ports[j]
		p.Flows = append(p.Flows, i)
		if !slices.Contains(p.Addresses, f.Address) {
			p.Addresses = append(p.Addresses, f.Address)
		}
	}
	e.Total.Known = true
	for j := range e.Ports {
		p := &e.Ports[j]
		for _, in := range []bool{true, false} {
			var members []int
			for _, i := range p.Flows {
				fwd, rev := sends(pl.Flows[i].Direction)
				if in && fwd || !in && rev {
					members = append(members, i)
				}
			}
			l := share(pl, frames, members, p.SpeedBps, func(i int, ld Traffic) {
				if in {
					e.Flows[i].Forward = ld
				} else {
					e.Flows[i].Reverse = ld
				}
			})
			if in {
				p.In = l
			} else {
				p.Out = l
			}
			e.Total.add(l)
			e.Total.Known = e.Total.Known && l.Known
		}
	}
	e.LimitedBps = e.Total.GoodputBps
	if bus != nil && pl.Ceiling != nil {
		b, err := pl.busLoad(e, frames, *bus)
		if err != nil {
			return nil, err
		}
		e.Bus = b
		if b.Expected.Known && b.CarriedBps < b.Expected.GoodputBps {
			e.LimitedBps -= b.Expected.GoodputBps - b.CarriedBps
		}
	}
	return e, nil
}

// share gives the flows of one port and direction their loads: each its
// asked rate, all of them scaled down to fit the link when they ask for
// more, and the flows that ask for no rate an equal share of the line time
// left. Without a speed, a flow without a rate is unknown. each receives
// every flow's load.
func share(pl *Plan, frames []ceiling.Frame, members []int, speed int64, each func(int, Traffic)) Traffic {
	total := Traffic{Known: true}
	if len(members) == 0 {
		return total
	}
	fps := map[int]float64{}
	var used float64 // share of the line time the asked rates take
	var free []int
	for _, i := range members {
		r := askedFPS(&pl.Flows[i], frames[i])
		if r <= 0 {
			free = append(free, i)
			continue
		}
		fps[i] = r
		if speed > 0 {
			used += ceiling.LineBps(r, frames[i]) / float64(speed)
		}
	}
	if speed > 0 {
		if used > 1 {
			for i := range fps {
				fps[i] /= used
			}
			used = 1
		}
		for _, i := range free {
			fps[i] = (1 - used) / float64(len(free)) * float64(speed) / float64(frames[i].WireBytes()*8)
		}
		free = nil
	}
	for _, i := range members {
		if slices.Contains(free, i) {
			each(i, Traffic{})
			total.Known = false
			continue
		}
		ld := loadOf(fps[i], frames[i])
		each(i, ld)
		total.add(ld)
	}
	return total
}

// busLoad is the plan's traffic through the ceiling host's bus: what goes
// into the host at the addresses behind it comes up the bus, what leaves
// goes down, and a TCP receiver's ACKs (one per ceiling.TCPAckEvery
// segments) cross the other way.
func (pl *Plan) busLoad(e *Expectation, frames []ceiling.Frame, bus ceiling.Bus) (*BusTraffic, error) {
	c := pl.Ceiling
	b := &BusTraffic{Host: c.Host, Bus: bus, Ports: c.Ports, Expected: Traffic{Known: true}}
	ack, err := ceiling.PayloadFrame(0, ceiling.Headers{Proto: ceiling.TCP, TCPTimestamps: true})
	if err != nil {
		return nil, err
	}
	type part struct {
		dir   ceiling.Direction
		load  Traffic
		frame ceiling.Frame
		tcp   bool
	}
	var parts []part
	for i := range pl.Flows {
		f := &pl.Flows[i]
		var hostIn, hostOut Traffic // into and out of the ceiling host
		switch {
		case f.RR != nil:
			continue
		case f.To == c.Host && (len(c.Ports) == 0 || slices.Contains(c.Ports, f.Port)):
			hostIn, hostOut = e.Flows[i].Forward, e.Flows[i].Reverse
		case f.From == c.Host && len(c.Ports) == 0:
			// Which port a host sends from is not in the plan: only a bus
			// with every port of the host behind it is known to carry it.
			hostIn, hostOut = e.Flows[i].Reverse, e.Flows[i].Forward
		default:
			continue
		}
		fwd, rev := sends(f.Direction)
		into, out := fwd, rev
		if f.From == c.Host {
			into, out = rev, fwd
		}
		if into {
			parts = append(parts, part{ceiling.Receive, hostIn, frames[i], f.Proto == wire.TCP})
		}
		if out {
			parts = append(parts, part{ceiling.Transmit, hostOut, frames[i], f.Proto == wire.TCP})
		}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("ceiling: no flow goes to or from %s through a port behind its bus", c.Host)
	}
	for _, p := range parts {
		b.Expected.add(p.load)
		b.Expected.Known = b.Expected.Known && p.load.Known
	}
	// A unit of work is one second of the expected traffic when it is
	// known (so the units per second the bus carries is the share of it
	// that fits), else one frame of each part.
	var flows []ceiling.Flow
	var goodputPerUnit float64
	for _, p := range parts {
		n := 1.0
		if b.Expected.Known {
			n = p.load.PPS
		}
		flows = append(flows, ceiling.Flow{Dir: p.dir, Frame: p.frame, PerUnit: n})
		goodputPerUnit += n * float64(p.frame.Payload*8)
		if p.tcp {
			other := ceiling.Transmit
			if p.dir == ceiling.Transmit {
				other = ceiling.Receive
			}
			flows = append(flows, ceiling.Flow{Dir: other, Frame: ack, PerUnit: n / ceiling.TCPAckEvery})
		}
	}
	ld, err := bus.Carry(ceiling.DefaultDMA, flows...)
	if err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	b.Binding = ld.Binding
	if b.Expected.Known {
		b.Share = ld.UnitsPerSec
		b.CarriedBps = math.Min(1, ld.UnitsPerSec) * b.Expected.GoodputBps
	} else {
		b.CarriedBps = ld.UnitsPerSec * goodputPerUnit
	}
	return b, nil
}

// BusFromReport takes the bus of a capture's ceiling report: the PCIe
// link shared by the most NICs (a multi-port card), as it runs.
func BusFromReport(r ceiling.Report) (*ceiling.Bus, error) {
	var best *ceiling.Group
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Link == nil || g.MPS == 0 {
			continue
		}
		if best == nil || len(g.NICs) > len(best.NICs) {
			best = g
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no PCIe link with a known width and MPS among the NICs")
	}
	return &ceiling.Bus{Link: *best.Link, MPS: best.MPS, MRRS: max(best.MRRS, 128)}, nil
}
