package diagnose

import (
	"fmt"
	"strings"
)

// udpClosedPort: UDP datagrams arrive at a port nothing listens on (Udp
// NoPorts). On a box that translates addresses that is the classic sign of
// a NAT mapping that expired or was lost: replies come back and no longer
// find their way in → longer UDP conntrack timeouts. Elsewhere: the
// receiver is not listening where the sender sends.
type udpClosedPort struct{}

func (udpClosedPort) ID() string { return "udp-closed-port" }
func (udpClosedPort) Explain() string {
	return "UDP arriving at a closed port (Udp NoPorts): nothing listens, or a NAT lost its mapping"
}

func (udpClosedPort) Check(ev *Evidence) []Finding {
	d := ev.Drops
	if d == nil {
		return nil
	}
	n := d.SNMP["Udp"]["NoPorts"]
	if n == 0 {
		return nil
	}
	f := Finding{Severity: Warning, Subject: "udp",
		Evidence: []string{fmt.Sprintf("Udp NoPorts %s, InDatagrams %s", dropRate(d, n), dropRate(d, d.SNMP["Udp"]["InDatagrams"]))}}
	var nat []string
	if d.Nftables != nil {
		nat = d.Nftables.NATChains
	}
	if len(nat) > 0 {
		f.Summary = fmt.Sprintf("%s UDP datagrams reach this NAT for no socket%s: a mapping expired or was lost", dropRate(d, n), dropShare(d, n))
		f.Evidence = append(f.Evidence, "nat chains: "+strings.Join(nat, ", "))
		if d.Conntrack != nil {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%d conntrack entries (nf_conntrack_max %d)", d.Conntrack.Entries, d.Conntrack.Max))
		}
		f.Fixes = []Fix{
			{Kind: FixSysctl, Target: "net.netfilter.nf_conntrack_udp_timeout", Value: "60",
				Note: "keep a one-way UDP mapping 60 s instead of 30 s"},
			{Kind: FixSysctl, Target: "net.netfilter.nf_conntrack_udp_timeout_stream", Value: "180",
				Note: "and a two-way one 180 s instead of 120 s"},
		}
		if d.Conntrack != nil && d.Conntrack.Dropped() > 0 {
			f.Evidence = append(f.Evidence, "the tracker is also dropping: see conntrack-drop (a full table loses mappings too)")
		}
	} else {
		f.Summary = fmt.Sprintf("%s UDP datagrams arrive at a port nothing listens on%s", dropRate(d, n), dropShare(d, n))
		f.Fixes = []Fix{{Kind: FixBench, Target: "receiver", Value: "check that the receiver listens on the port the sender sends to, for the whole run",
			Note: "datagrams after a receiver stopped count here too"}}
	}
	return []Finding{f}
}
