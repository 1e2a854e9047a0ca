package diagnose

import (
	"fmt"
	"slices"

	"linerate/box"
	"linerate/source/ethtool"
)

// rssImbalance: a multi-queue NIC whose packets land on one queue: per-queue
// counters skewed, udp4 hashed on addresses only, or an indirection table
// that is not an even interleave (seed: the APU4, `ethtool -X enp4s0 equal
// 2` and rx_queue_1_packets: 0).
//
// The per-queue counts are the driver's own, from the samples (netdev
// qstats or ethtool -S per queue, box.Rates.RxQueues), else what a test
// counted per queue over its window (Evidence.Queues: the same counters,
// or linerate's XDP counter on a veth).
type rssImbalance struct{}

func (rssImbalance) ID() string { return "rss-imbalance" }
func (rssImbalance) Explain() string {
	return "receive traffic skewed onto one RSS queue (hash fields or indirection table)"
}

const (
	// skewShare is the share of a NIC's packets on one queue that counts
	// as every flow landing there.
	skewShare = 0.8
	// queueEvidencePPS is the packet rate under which per-queue counts
	// say nothing of the hash (a few control packets land anywhere).
	queueEvidencePPS = 100.0
)

func (rssImbalance) Check(ev *Evidence) []Finding {
	var out []Finding
	for i := range ev.Box.NICs {
		n := &ev.Box.NICs[i]
		nq := rxQueueCount(n)
		if !physical(n) || nq < 2 {
			continue
		}
		qs, from := rxQueueRates(ev, n)
		var evidence []string
		skewed, busy := false, false
		if len(qs) >= 2 && sum(qs) >= queueEvidencePPS {
			top, share := argmax(qs)
			if share >= skewShare {
				skewed, busy = true, sum(qs) >= busyPPS/2
				evidence = append(evidence, fmt.Sprintf("rx queue %d gets %s of %s's packets (%s, %s)", top, pct(share*100), n.Name, rate(qs[top]), from))
				for q, v := range qs {
					if q != top {
						evidence = append(evidence, fmt.Sprintf("rx queue %d: %s", q, rate(v)))
					}
				}
			}
		}
		var fixes []Fix
		if h, ok := flowHash(n, ethtool.UDP4); ok && h&(ethtool.HashL4B01|ethtool.HashL4B23) == 0 {
			evidence = append(evidence, fmt.Sprintf("udp4 hashes only %q: every UDP flow between two addresses lands on one queue", h.Letters()))
			fixes = append(fixes, Fix{Kind: FixFlowHash, Target: n.Name + "/udp4", Value: "sdfn", Note: "hash UDP ports too"})
		}
		if n.RSS != nil && len(n.RSS.Indirection) > 0 {
			want := ethtool.EqualTable(len(n.RSS.Indirection), nq)
			if !slices.Equal(n.RSS.Indirection, want) {
				share := n.RSS.QueueShare()
				evidence = append(evidence, fmt.Sprintf("indirection table (%d entries) is not an even interleave over %d queues: %v entries per queue", len(n.RSS.Indirection), nq, share))
				fixes = append(fixes, Fix{Kind: FixRSSEqual, Target: n.Name, Value: fmt.Sprint(nq), Note: "ethtool -X " + n.Name + " equal " + fmt.Sprint(nq)})
			}
		}
		switch {
		case skewed && busy:
			out = append(out, Finding{
				Severity: Warning, Subject: n.Name,
				Summary:  fmt.Sprintf("%s receives on one of its %d RSS queues; the others sit idle", n.Name, nq),
				Evidence: evidence, Fixes: fixes,
			})
		case skewed:
			// The skew is measured, the rate too low to cost anything yet:
			// at line rate one CPU would take every packet.
			out = append(out, Finding{
				Severity: Info, Subject: n.Name,
				Summary:  fmt.Sprintf("%s receives on one of its %d RSS queues (at %s, not a bottleneck yet; at line rate one CPU takes every packet)", n.Name, nq, rate(sum(qs))),
				Evidence: evidence, Fixes: fixes,
			})
		case qs == nil && len(fixes) > 0:
			// Configuration alone, with no per-queue counts to confirm it,
			// is worth a note.
			out = append(out, Finding{Severity: Info, Subject: n.Name,
				Summary:  n.Name + "'s RSS setup can put flows between the same two hosts on one queue",
				Evidence: evidence, Fixes: fixes})
		}
	}
	return out
}

// rxQueueRates is the packets per second each receive queue of n took and
// where the figures come from: the samples' per-queue counters of the
// driver, else the test's per-queue counts over its window; nil when
// neither counted n's queues.
func rxQueueRates(ev *Evidence, n *box.NIC) ([]float64, string) {
	if m, ok := ev.Mean(); ok {
		if q := m.RxQueues[n.Name]; len(q) > 0 {
			return q, "the driver's per-queue counters"
		}
		var driver string
		if n.Driver != nil {
			driver = n.Driver.Driver
		}
		if q := ethtool.RxQueueRates(m.Ethtool[n.Name], driver); q != nil {
			return q, "ethtool -S per queue"
		}
	}
	for _, c := range ev.Queues {
		if c.Iface != n.Name || c.Seconds <= 0 || len(c.Packets) == 0 {
			continue
		}
		q := make([]float64, len(c.Packets))
		for i, p := range c.Packets {
			q[i] = float64(p) / c.Seconds
		}
		return q, fmt.Sprintf("counted by %s over the test's %.0f s", c.Counter, c.Seconds)
	}
	return nil, ""
}
