package results

import (
	"fmt"
	"slices"
	"strings"

	"linerate/internal/units"
	"linerate/wire"
)

// seen is what the verdict could read of one end of a test (the client,
// or every server): a figure it did not read is unknown, never zero, and
// no conclusion is drawn from its absence.
type seen struct {
	// side is the end; name how the verdict calls it ("the server", "the
	// server (a plain iperf3 server)").
	side Side
	name string
	// threads: its engine threads' CPU was measured (ThreadCPU).
	threads bool
	// counters: its socket and backlog counters were sampled over the
	// window (Udp: of /proc/net/snmp, softnet_stat), and with them its
	// per-CPU use.
	counters bool
	// cpus: its per-CPU use was sampled.
	cpus bool
	// drops: its drop counters were read over the window (EndDrops with a
	// Delta: what the ledger places).
	drops bool
	// iperf3 is a plain iperf3 peer's report, when the end is one: it
	// reports its counts and its process's CPU use at the end, nothing
	// else.
	iperf3 *IPerf3
}

// ends is what the verdict could read of the client and of the servers.
type ends struct{ client, server seen }

// seenEnds says what of each end of res was read; clientThreads are the
// client's measured threads.
func seenEnds(res *Result, clientThreads []ThreadCPU) ends {
	e := ends{
		client: seen{side: SideClient, name: "the client", threads: len(clientThreads) > 0},
		server: seen{side: SideServer, name: "the server", threads: len(res.Targets) > 0},
	}
	if len(res.Targets) > 1 {
		e.server.name = "the servers"
	}
	e.client.counters = sampled(res, SideClient, -1, true)
	e.client.cpus = sampled(res, SideClient, -1, false)
	e.client.drops = dropsRead(res, SideClient, -1)
	e.server.counters, e.server.cpus, e.server.drops = true, true, true
	for i := range max(len(res.Targets), 1) {
		e.server.counters = e.server.counters && sampled(res, SideServer, i, true)
		e.server.cpus = e.server.cpus && sampled(res, SideServer, i, false)
		e.server.drops = e.server.drops && dropsRead(res, SideServer, i)
	}
	for _, t := range res.Targets {
		e.server.threads = e.server.threads && len(t.Threads) > 0
		if t.IPerf3 == nil {
			continue
		}
		// The iperf3 peer is the end this one is not.
		end := &e.server
		if t.IPerf3.Peer == string(SideClient) {
			end = &e.client
		}
		end.iperf3 = t.IPerf3
		end.name += " (a plain iperf3 " + t.IPerf3.Peer + ")"
	}
	return e
}

// sampled says whether an end's samples hold its UDP counters (udp), or
// else its per-CPU use: target is the server's index, -1 for the client.
func sampled(res *Result, side Side, target int, udp bool) bool {
	for _, s := range res.Samples {
		has := len(s.CPU) > 0
		if udp {
			has = len(s.UDP) > 0
		}
		if s.Side == side && (side == SideClient || s.Target == target) && has {
			return true
		}
	}
	return false
}

// dropsRead says whether an end's drop counters were read.
func dropsRead(res *Result, side Side, target int) bool {
	for _, d := range res.Drops {
		if d.Side == side && (side == SideClient || d.Target == target) && d.Delta != nil {
			return true
		}
	}
	return false
}

// sender and receiver are the ends that send and receive a one-way test;
// both ways at once each end is both, and both are returned.
func (e ends) sender(sp wire.Spec) []seen   { return e.playing(sp, true) }
func (e ends) receiver(sp wire.Spec) []seen { return e.playing(sp, false) }

func (e ends) playing(sp wire.Spec, sends bool) []seen {
	switch {
	case sp.Direction == wire.Bidir:
		return []seen{e.client, e.server}
	case sp.ClientSends() == sends:
		return []seen{e.client}
	}
	return []seen{e.server}
}

// lossUnseen lists, per end, what a loss could not be placed for: a
// receiving end whose socket-buffer and backlog drops were not counted,
// a sending end whose socket and qdisc drops were not. Empty when both
// ends' counters were read: a loss neither counted is then between them.
func (e ends) lossUnseen(sp wire.Spec) []string {
	var out []string
	for _, end := range []seen{e.client, e.server} {
		if end.counters {
			continue
		}
		var what []string
		if slices.ContainsFunc(e.receiver(sp), func(r seen) bool { return r.side == end.side }) {
			what = append(what, "socket-buffer or backlog drops")
		}
		if slices.ContainsFunc(e.sender(sp), func(r seen) bool { return r.side == end.side }) {
			what = append(what, "socket or qdisc drops")
		}
		lacks := "reports no"
		if end.iperf3 == nil {
			lacks = "was not sampled: no"
		}
		out = append(out, fmt.Sprintf("%s %s %s and no per-CPU use%s: what its kernel dropped cannot be told from the path",
			end.name, lacks, strings.Join(what, ", no "), end.processCPU()))
	}
	return out
}

// processCPU is what a plain iperf3 peer said of its process's CPU use,
// as a clause; "" for other ends.
func (s seen) processCPU() string {
	if s.iperf3 == nil || s.iperf3.CPUTotal == nil {
		return ""
	}
	return fmt.Sprintf(" (it reported its process's CPU use, %s, not which CPUs were full)", units.Percent(*s.iperf3.CPUTotal/100, 1))
}

// threadsText is the busiest thread's share of a CPU, or that no thread
// of that kind was measured.
func threadsText(busy float64, measured bool) string {
	if !measured {
		return "not measured"
	}
	return units.Percent(busy, 0)
}

// unsampledNames names the ends among es whose CPUs were not sampled, ""
// when every one was.
func unsampledNames(es []seen) string {
	var out []string
	for _, s := range es {
		if !s.cpus && !slices.Contains(out, s.name) {
			out = append(out, s.name)
		}
	}
	return strings.Join(out, " and ")
}

// dropsBoth says whether both ends' drop counters were read.
func (e ends) dropsBoth() bool { return e.client.drops && e.server.drops }

// noReport says that a plain iperf3 peer sent no results, so what it
// counted (and the loss) is unknown; "" when every end reported.
func (e ends) noReport() string {
	for _, end := range []seen{e.client, e.server} {
		if end.iperf3 != nil && end.iperf3.CPUTotal == nil {
			return end.name + " sent no results: what it counted is unknown, and so is the loss"
		}
	}
	return ""
}
