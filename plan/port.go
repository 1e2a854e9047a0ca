package plan

import (
	"fmt"
	"slices"
	"strings"

	"linerate/ceiling"
	"linerate/results"
)

// BusOf is the bus e was worked out with, nil without one.
func (e *Expectation) BusOf() *ceiling.Bus {
	if e == nil || e.Bus == nil {
		return nil
	}
	b := e.Bus.Bus
	return &b
}

// Goodput is the payload bits per second t received (UDP payload, TCP
// data); 0 for nil or an empty window.
func Goodput(t *results.Totals) float64 {
	if t == nil || t.Seconds <= 0 {
		return 0
	}
	return float64(t.ReceivedBytes) * 8 / t.Seconds
}

// FlowWays is a flow's forward and reverse totals (nil where it sent none).
func FlowWays(fr *results.FlowRun) (fwd, rev *results.Totals) {
	if fr.Result == nil || len(fr.Result.Targets) == 0 {
		return nil, nil
	}
	t := fr.Result.Targets[0]
	return t.Forward, t.Reverse
}

// PortGoodput is what one port carried over a round: the goodput received
// into its host (In) and sent out of it (Out).
type PortGoodput struct {
	In, Out float64
}

// PortsOf is the goodput of each of e's ports over one round of pl's
// flows, in e.Ports order.
func (pl *Plan) PortsOf(e *Expectation, set *results.FlowSet) []PortGoodput {
	out := make([]PortGoodput, len(e.Ports))
	for j, p := range e.Ports {
		for _, i := range p.Flows {
			if i >= len(set.Flows) || i >= len(pl.Flows) {
				continue
			}
			fwd, rev := FlowWays(&set.Flows[i])
			into, back := &out[j].In, &out[j].Out
			if pl.Flows[i].From == p.Host {
				into, back = back, into
			}
			*into += Goodput(fwd)
			*back += Goodput(rev)
		}
	}
	return out
}

// PortName names a port as the tables do: "eth1 10.0.1.1", or its
// addresses when the plan gives it no name.
func (p PortTraffic) PortName() string {
	s := strings.Join(p.Addresses, " ")
	if p.Port != "" {
		s = p.Port + " " + s
	}
	return s
}

// BusEvidence is what a round says of the ceiling's bus on the host that
// ran it: Virtual lists the ports behind the bus whose interface, at the
// ceiling host's end of a flow, is a virtual one (veth, bridge, ...) — a
// lab's, which sits on no PCIe bus, so the bus modelled by the plan's
// ceiling does not hold it — with the kind each end read.
type BusEvidence struct {
	Virtual []string
}

// Applies says whether the bus may hold the round: false when a port
// behind it is virtual.
func (b BusEvidence) Applies() bool { return len(b.Virtual) == 0 }

// String is why the bus does not apply: "peer1 (veth), peer2 (veth) are
// virtual interfaces, on no PCIe bus".
func (b BusEvidence) String() string {
	if b.Applies() {
		return ""
	}
	return fmt.Sprintf("%s: virtual, on no PCIe bus", strings.Join(b.Virtual, ", "))
}

// BusOf reads a round for evidence of the ceiling's bus: for every flow
// into or out of the ceiling host through a port behind the bus, the
// kind of interface that end of the flow ran on (each end records its
// interfaces on the test's path).
func (pl *Plan) BusOf(e *Expectation, set *results.FlowSet) BusEvidence {
	var ev BusEvidence
	if pl.Ceiling == nil || e == nil || e.Bus == nil {
		return ev
	}
	host := pl.Ceiling.Host
	for i := range set.Flows {
		if i >= len(pl.Flows) {
			break
		}
		f := &pl.Flows[i]
		r := set.Flows[i].Result
		if r == nil || (f.To != host && f.From != host) {
			continue
		}
		if len(e.Bus.Ports) > 0 && (f.To != host || !slices.Contains(e.Bus.Ports, f.Port)) {
			continue // not through a port behind the bus
		}
		side := results.SideServer
		if f.From == host {
			side = results.SideClient
		}
		for _, d := range r.Drops {
			if d.Side != side {
				continue
			}
			for _, p := range d.Path {
				if p.Kind == "" || p.Loopback {
					continue
				}
				name := fmt.Sprintf("%s %s (%s)", host, p.Iface, p.Kind)
				if !slices.Contains(ev.Virtual, name) {
					ev.Virtual = append(ev.Virtual, name)
				}
			}
		}
	}
	return ev
}
