package diagnose

import (
	"fmt"
	"strconv"
)

// conntrackDrop: the connection tracker drops packets: its table is full
// (drop; early_drop evicting entries to make room) or inserts fail →
// raise nf_conntrack_max and the hash size with it.
type conntrackDrop struct{}

func (conntrackDrop) ID() string { return "conntrack-drop" }
func (conntrackDrop) Explain() string {
	return "the connection tracker drops packets: table full (nf_conntrack drop) or failed inserts"
}

// conntrackFull is the share of nf_conntrack_max at which the table counts
// as full.
const conntrackFull = 0.9

func (conntrackDrop) Check(ev *Evidence) []Finding {
	d := ev.Drops
	if d == nil || d.Conntrack == nil {
		return nil
	}
	ct := d.Conntrack
	n := ct.Dropped()
	if n == 0 && ct.Counters["early_drop"] == 0 {
		return nil
	}
	c := ct.Counters
	f := Finding{Severity: Warning, Subject: "conntrack",
		Evidence: []string{
			fmt.Sprintf("nf_conntrack drop %s, insert_failed %s, early_drop %s", dropRate(d, c["drop"]), dropRate(d, c["insert_failed"]), dropRate(d, c["early_drop"])),
			fmt.Sprintf("%d entries, nf_conntrack_max %d, nf_conntrack_buckets %d", ct.Entries, ct.Max, ct.Buckets),
		}}
	full := ct.Max > 0 && float64(ct.Entries) >= conntrackFull*float64(ct.Max)
	switch {
	case c["drop"] > 0 || c["early_drop"] > 0 || full:
		f.Summary = fmt.Sprintf("the connection tracking table is full: %s packets dropped%s", dropRate(d, n), dropShare(d, n))
		if n > 0 {
			f.Severity = Critical
		}
		want := max(2*ct.Max, 262144)
		f.Fixes = []Fix{
			{Kind: FixSysctl, Target: "net.netfilter.nf_conntrack_max", Value: strconv.FormatUint(want, 10),
				Note: "room for more flows (each entry costs about 300 bytes of memory)"},
			{Kind: FixSysctl, Target: "net.netfilter.nf_conntrack_buckets", Value: strconv.FormatUint(want, 10),
				Note: "the hash size with it, one bucket per entry; where the sysctl is read-only, the nf_conntrack module's hashsize parameter"},
		}
	default:
		f.Summary = fmt.Sprintf("the connection tracker failed %s inserts, with room in its table%s", dropRate(d, n), dropShare(d, n))
		f.Evidence = append(f.Evidence, "insert_failed without a full table: two packets of a new flow raced to insert it (UDP over several CPUs)")
		f.Fixes = []Fix{{Kind: FixBoot, Target: "firewall", Value: "exempt the test's flows from tracking (nft `notrack` in a raw-priority prerouting chain)",
			Note: "or keep one flow's packets on one CPU (RSS/RPS by ports)"}}
	}
	return []Finding{f}
}
