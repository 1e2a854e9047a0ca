package diagnose

import (
	"fmt"
	"slices"

	"linerate/box"
	"linerate/internal/order"
	"linerate/results"
)

// Place is where a process ran: its machine (the kernel's boot id) and
// its network namespace (the namespace's inode number). Two ends of a lab
// share a machine and differ in namespace.
type Place struct {
	Machine string
	Netns   uint64
}

// EndTarget is the target whose server end diagnose reads for side: the
// first server that has samples (-1 for the client and the device in the
// middle).
func EndTarget(r *results.Result, side results.Side) int {
	if side != results.SideServer {
		return -1
	}
	for _, s := range r.Samples {
		if s.Side == side {
			return s.Target
		}
	}
	return 0
}

// EndPlace is where one end of a result ran, from its drop counters (each
// end records its namespace and its machine with them); ok is false when
// the result does not say.
func EndPlace(r *results.Result, side results.Side, target int) (Place, bool) {
	for _, d := range r.Drops {
		if d.Side != side || (side == results.SideServer && d.Target != target) || d.Delta == nil {
			continue
		}
		if d.Delta.Machine != "" && d.Delta.Netns != 0 {
			return Place{Machine: d.Delta.Machine, Netns: d.Delta.Netns}, true
		}
	}
	return Place{}, false
}

// SavedBox is what a result holds of one end's configuration: its CPUs
// (those its samples count) and its interfaces on the test's path (name,
// kind, MTU and largest MTU, as that end read them). The rest (queues,
// IRQs, offloads, rings, sysctls) the run did not save: the box says so
// in Unsupported, and the rules that need them find nothing. Its origin
// is not any machine's ID: the findings name another machine's (or
// namespace's) interfaces, so tune plan --findings refuses them here
// unless forced.
func SavedBox(r *results.Result, side results.Side, target int) *box.Box {
	b := &box.Box{Meta: box.Meta{Source: "the run's record of its " + string(side) + " end"}, Unsupported: map[string]string{}}
	if p, ok := EndPlace(r, side, target); ok {
		b.Meta.MachineID = fmt.Sprintf("boot %s netns %d", p.Machine, p.Netns)
	}
	for _, s := range r.Samples {
		if s.Side != side || (side == results.SideServer && s.Target != target) {
			continue
		}
		for _, c := range s.CPU {
			if !slices.ContainsFunc(b.CPUs, func(o box.CPU) bool { return o.ID == c.ID }) {
				b.CPUs = append(b.CPUs, box.CPU{ID: c.ID, Online: true})
			}
		}
	}
	order.Sort(b.CPUs, func(x, y box.CPU) int { return x.ID - y.ID })
	for _, d := range r.Drops {
		if d.Side != side || (side == results.SideServer && d.Target != target) {
			continue
		}
		for _, p := range d.Path {
			if slices.ContainsFunc(b.NICs, func(n box.NIC) bool { return n.Name == p.Iface }) {
				continue
			}
			kind := box.NICKind(p.Kind)
			switch {
			case p.Loopback:
				kind = box.KindLoopback
			case kind == "":
				kind = box.KindPhysical
			}
			b.NICs = append(b.NICs, box.NIC{Name: p.Iface, Kind: kind, OperState: "up", Carrier: true, MTU: p.MTU, MaxMTU: p.MaxMTU,
				Unsupported: map[string]string{"configuration": "not saved in the run"}})
		}
	}
	for _, item := range []string{"irqs", "sysctls", "thermal", "throttle", "pcie", "irqbalance"} {
		b.Unsupported[item] = "not saved in the run"
	}
	return b
}
