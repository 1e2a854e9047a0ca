package diagnose

import (
	"cmp"
	"fmt"
	"strconv"

	"linerate/results"
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
		return conntrackSampled(ev)
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
		f.Fixes = conntrackFixes(ct.Max, false)
	default:
		f.Summary = fmt.Sprintf("the connection tracker failed %s inserts, with room in its table%s", dropRate(d, n), dropShare(d, n))
		f.Evidence = append(f.Evidence, "insert_failed without a full table: two packets of a new flow raced to insert it (UDP over several CPUs)")
		f.Fixes = []Fix{{Kind: FixBoot, Target: "firewall", Value: "exempt the test's flows from tracking (nft `notrack` in a raw-priority prerouting chain)",
			Note: "or keep one flow's packets on one CPU (RSS/RPS by ports)"}}
	}
	return []Finding{f}
}

// conntrackFixes are the fixes of a full table of max entries: a larger
// table and hash, and, when short connections filled it (timewait), a
// shorter TIME_WAIT for the entries of closed connections.
func conntrackFixes(size uint64, timewait bool) []Fix {
	want := max(2*size, 262144)
	fixes := []Fix{
		{Kind: FixSysctl, Target: "net.netfilter.nf_conntrack_max", Value: strconv.FormatUint(want, 10),
			Note: "room for more flows (each entry costs about 300 bytes of memory)"},
		{Kind: FixSysctl, Target: "net.netfilter.nf_conntrack_buckets", Value: strconv.FormatUint(want, 10),
			Note: "the hash size with it, one bucket per entry; where the sysctl is read-only, the nf_conntrack module's hashsize parameter"},
	}
	if timewait {
		fixes = append(fixes, Fix{Kind: FixSysctl, Target: "net.netfilter.nf_conntrack_tcp_timeout_time_wait", Value: "30",
			Note: "closed connections leave their entries sooner (120 s by default): short connections fill the table with them"})
	}
	return fixes
}

// conntrackSampled is the rule over the once-a-second samples, when there
// are no drop counters of the window: the table reached its max, or the
// tracker dropped, in some second.
func conntrackSampled(ev *Evidence) []Finding {
	use, seen := results.Conntrack(ev.Host, ev.Rates)
	peak, limit, drop, failed, early := use.Peak, use.Max, use.Drop, use.InsertFailed, use.EarlyDrop
	full := limit > 0 && float64(peak) >= conntrackFull*float64(limit)
	if !seen || !full && drop+failed+early == 0 {
		return nil
	}
	where := cmp.Or(ev.Host, "this host")
	f := Finding{Severity: Warning, Subject: "conntrack",
		Evidence: []string{
			fmt.Sprintf("at most %d entries of nf_conntrack_max %d, in %d seconds sampled", peak, limit, len(ev.Rates)),
			fmt.Sprintf("nf_conntrack drop %d, insert_failed %d, early_drop %d over the samples", drop, failed, early),
		}}
	if drop+failed > 0 {
		f.Severity = Critical
	}
	if !full && drop == 0 && early == 0 {
		f.Summary = fmt.Sprintf("the connection tracker on %s failed %d inserts, with room in its table", where, failed)
		f.Fixes = []Fix{{Kind: FixBoot, Target: "firewall", Value: "exempt the test's flows from tracking (nft `notrack` in a raw-priority prerouting chain)",
			Note: "or keep one flow's packets on one CPU (RSS/RPS by ports)"}}
		return []Finding{f}
	}
	f.Summary = fmt.Sprintf("conntrack table full on %s: %d of %d entries, %d dropped", where, peak, limit, drop+failed)
	if early > 0 {
		f.Summary += fmt.Sprintf(", %d evicted", early)
	}
	f.Fixes = conntrackFixes(limit, true)
	return []Finding{f}
}
