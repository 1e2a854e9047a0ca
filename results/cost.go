package results

import (
	"cmp"
	"fmt"

	"linerate/box"
)

// endCPU is one end's CPU over its samples: the machine's busy time and
// what its CPUs could give, and the process's time when every sample
// carried it.
type endCPU struct {
	machine, capacity, process float64
	sampled, processed         bool
}

// cpuOf adds up the CPU time of samples.
func cpuOf(samples []box.Rates) endCPU {
	c := endCPU{sampled: len(samples) > 0, processed: len(samples) > 0}
	for _, r := range samples {
		for _, u := range r.CPU {
			c.machine += u.Busy / 100 * r.Seconds
		}
		c.capacity += float64(len(r.CPU)) * r.Seconds
		if r.Process == nil {
			c.processed = false
			continue
		}
		c.process += r.Process.Seconds(r.Seconds)
	}
	if !c.processed {
		c.process = 0
	}
	return c
}

// at is the figure of side s.
func (c *CPUCost) at(s Side) **float64 {
	if s == SideClient {
		return &c.Client
	}
	return &c.Server
}

// setCost fills side s's CPU figures from c, over the packets and bits
// that end sent and received.
func (sum *Summary) setCost(s Side, c endCPU, pk, bits float64) {
	per := func(secs float64, mpkt, gbit *CPUCost) {
		if pk > 0 {
			*mpkt.at(s) = ptr(secs / pk * 1e6)
		}
		if bits > 0 {
			*gbit.at(s) = ptr(secs / bits * 1e9)
		}
	}
	if c.sampled {
		*sum.CPUSeconds.at(s) = ptr(c.machine)
		per(c.machine, &sum.CPUSecondsPerMpkt, &sum.CPUSecondsPerGbit)
		if c.capacity > 0 {
			*sum.MachineCPUBusy.at(s) = ptr(c.machine / c.capacity)
		}
	}
	if c.processed {
		*sum.ProcessCPUSeconds.at(s) = ptr(c.process)
		per(c.process, &sum.ProcessCPUSecondsPerMpkt, &sum.ProcessCPUSecondsPerGbit)
	}
}

// Cost fills the CPU figures of each end: its machine's busy time and
// linerate's own process's, each per packet and per gigabit. The
// client's packets are those it sent and received; a server's those of
// the targets it serves. Targets on the same machine (same boot id, or
// without one the same server process) share its CPU, counted once, and
// targets of one server process its process time; a server on the
// client's machine shares the client's machine.
func Cost(res *Result, client []box.Rates, machine string) {
	sum := &res.Summary
	sum.setCost(SideClient, cpuOf(client), float64(sum.SentPackets+sum.ReceivedPackets), sum.sentBits+sum.recvBits)
	srv := serversCPU(res, machine)
	var pk, bits float64
	for _, t := range res.Targets {
		pk += float64(t.SentPackets + t.ReceivedPackets)
		bits += t.sentBits + t.recvBits
	}
	sum.setCost(SideServer, srv, pk, bits)
}

// serversCPU is the servers' CPU over their samples, each machine and
// each serve process counted once; it notes a server on the client's
// machine.
func serversCPU(res *Result, machine string) endCPU {
	machines, procs := map[string]bool{}, map[string]bool{}
	var srv endCPU
	partial := false // a server's samples lacked its process
	for i, t := range res.Targets {
		var rates []box.Rates
		for _, s := range res.Samples {
			if s.Side == SideServer && s.Target == i {
				rates = append(rates, s.Rates)
			}
		}
		c := cpuOf(rates)
		proc := cmp.Or(t.ServerID, fmt.Sprint("target-", i))
		mach := cmp.Or(t.Machine, proc)
		if c.sampled && !machines[mach] {
			machines[mach] = true
			srv.sampled = true
			srv.machine += c.machine
			srv.capacity += c.capacity
		}
		if c.sampled && !c.processed {
			partial = true
		}
		if c.processed && !procs[proc] {
			procs[proc] = true
			srv.processed = true
			srv.process += c.process
		}
	}
	if srv.sampled && machine != "" && machines[machine] {
		res.Notes = append(res.Notes, "the client and a server run on one machine: the machine CPU figures of each end are that machine's, counted once per end")
	}
	srv.processed = srv.processed && !partial
	return srv
}

func ptr(f float64) *float64 { return &f }
