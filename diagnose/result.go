package diagnose

import (
	"linerate/box"
	"linerate/results"
)

// FromResult builds evidence from a saved bench result: the counter samples
// and drop counters of one end (side "client" or "server"; the first
// server when several) and what the load generator knew. b is that end's
// model of the box.
func FromResult(r *results.Result, side results.Side, b *box.Box) *Evidence {
	ev := &Evidence{Box: b}
	if side == results.SideClient {
		ev.Soak = r.Soak // the heat of the end that ran bench --soak
	}
	target := -1
	for _, s := range r.Samples {
		if s.Side != side {
			continue
		}
		if side == results.SideServer {
			if target < 0 {
				target = s.Target
			}
			if s.Target != target {
				continue
			}
		}
		ev.Rates = append(ev.Rates, s.Rates)
		if ev.Host == "" {
			ev.Host = s.Host
		}
	}
	sum := r.Summary
	l := &Load{
		SentPPS: sum.SentPPS, ReceivedPPS: sum.ReceivedPPS, LossRatio: sum.LossRatio,
		AskedPPS: r.Spec.Rate.PPS, Local: side == results.SideClient,
	}
	l.SenderLimited = sum.LimitedBy == results.LimitSender
	if sum.SenderThreadBusy != nil {
		l.SenderBusy = *sum.SenderThreadBusy * 100
	}
	ev.Load = l
	for _, d := range r.Drops {
		if d.Side == side && d.Delta != nil && (side == results.SideClient || target < 0 || d.Target == target) {
			delta := *d.Delta
			ev.Drops = &delta
			break
		}
	}
	if side == results.SideClient {
		ev.Path = resultPath(r)
	}
	if t := max(target, 0); side == results.SideServer && t < len(r.Targets) {
		// The queue meter runs on the server's receiving interface.
		if q := r.Targets[t].RxQueues; q != nil && q.Error == "" && len(q.Packets) > 0 {
			ev.Queues = append(ev.Queues, QueueCount{Iface: q.Interface, Counter: q.Counter, Packets: q.Packets, Seconds: r.Targets[t].Seconds})
		}
	}
	return ev
}

// FromResultHost builds evidence from the samples of one device in the
// middle of a result (side dut, its Host host): what its counters said
// while the test ran. Its Host names it in the findings.
func FromResultHost(r *results.Result, host string) *Evidence {
	ev := &Evidence{Host: host}
	for _, s := range r.Samples {
		if s.Side == results.SideDUT && s.Host == host {
			ev.Rates = append(ev.Rates, s.Rates)
		}
	}
	return ev
}

// resultPath is what a result says of the far end of the client's path:
// the first server's interface on the test's path and the largest MTU its
// driver accepts; nil when the result does not say.
func resultPath(r *results.Result) *PathMTU {
	var p PathMTU
	for _, d := range r.Drops {
		for _, i := range d.Path {
			switch {
			case i.Loopback:
			case d.Side == results.SideClient && p.Iface == "":
				p.Iface = i.Iface
			case d.Side == results.SideServer && p.PeerMaxMTU == 0 && i.MaxMTU > 0:
				p.PeerMaxMTU, p.Peer = i.MaxMTU, i.Iface+" of the server"
			}
		}
	}
	if p.Iface == "" || p.PeerMaxMTU == 0 {
		return nil
	}
	return &p
}
