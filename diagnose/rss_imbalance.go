package diagnose

import (
	"fmt"
	"slices"

	"linerate/source/ethtool"
)

// rssImbalance: a multi-queue NIC whose packets land on one queue: per-queue
// counters skewed, udp4 hashed on addresses only, or an indirection table
// that is not an even interleave (seed: the APU4, `ethtool -X enp4s0 equal
// 2` and rx_queue_1_packets: 0).
type rssImbalance struct{}

func (rssImbalance) ID() string { return "rss-imbalance" }
func (rssImbalance) Explain() string {
	return "receive traffic skewed onto one RSS queue (hash fields or indirection table)"
}

func (rssImbalance) Check(ev *Evidence) []Finding {
	m, haveRates := ev.Mean()
	var out []Finding
	for i := range ev.Box.NICs {
		n := &ev.Box.NICs[i]
		nq := rxQueueCount(n)
		if !physical(n) || nq < 2 {
			continue
		}
		var evidence []string
		skewed := false
		if haveRates {
			qs := queuePackets(m, n)
			if len(qs) >= 2 && sum(qs) >= busyPPS/2 {
				top, share := argmax(qs)
				if share >= 0.8 {
					skewed = true
					evidence = append(evidence, fmt.Sprintf("rx queue %d gets %s of %s's packets (%s)", top, pct(share*100), n.Name, rate(qs[top])))
					for q, v := range qs {
						if q != top {
							evidence = append(evidence, fmt.Sprintf("rx queue %d: %s", q, rate(v)))
						}
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
		if !skewed && (!haveRates || len(fixes) == 0) {
			// Configuration alone, without skewed traffic, is worth a note.
			if len(fixes) > 0 {
				out = append(out, Finding{Severity: Info, Subject: n.Name,
					Summary:  n.Name + "'s RSS setup can put flows between the same two hosts on one queue",
					Evidence: evidence, Fixes: fixes})
			}
			continue
		}
		if !skewed {
			continue
		}
		out = append(out, Finding{
			Severity: Warning, Subject: n.Name,
			Summary:  fmt.Sprintf("%s receives on one of its %d RSS queues; the others sit idle", n.Name, nq),
			Evidence: evidence, Fixes: fixes,
		})
	}
	return out
}
