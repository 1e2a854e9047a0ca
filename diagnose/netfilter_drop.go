package diagnose

import (
	"fmt"
	"sort"
)

// netfilterDrop: the firewall drops packets (nftables rules that drop or
// reject, chain policies, seen by the rules' counters or the kernel's drop
// reasons) → review the rules named.
type netfilterDrop struct{}

func (netfilterDrop) ID() string { return "netfilter-drop" }
func (netfilterDrop) Explain() string {
	return "firewall rules or policies drop packets (nftables counters, drop reason NETFILTER_DROP)"
}

func (netfilterDrop) Check(ev *Evidence) []Finding {
	d := ev.Drops
	if d == nil {
		return nil
	}
	var ct uint64
	if d.Conntrack != nil {
		ct = d.Conntrack.Dropped()
	}
	var byRules uint64
	var evidence []string
	var fixes []Fix
	if rs := d.Nftables; rs != nil {
		rules := append(rs.Rules[:0:0], rs.Rules...)
		sort.SliceStable(rules, func(i, j int) bool { return rules[i].Packets > rules[j].Packets })
		for _, r := range rules {
			if !r.Verdict.Drops() || r.Packets == 0 {
				continue
			}
			at := ""
			if !r.Exact {
				at = "at most "
			} else {
				byRules += r.Packets
			}
			evidence = append(evidence, fmt.Sprintf("nft rule %s (%s, hook %s): %s%s packets", r.Key(), r.Verdict, r.Hook, at, dropRate(d, r.Packets)))
			if len(fixes) < 3 {
				fixes = append(fixes, Fix{Kind: FixBoot, Target: "firewall", Value: "review nft rule " + r.Key(),
					Note: "it " + string(r.Verdict) + "s this traffic; `nft -a list ruleset` shows it by handle"})
			}
		}
		for _, p := range rs.DropPolicies {
			evidence = append(evidence, "chain "+p+" has policy drop")
		}
	}
	byReason := d.Reasons["NETFILTER_DROP"]
	if byReason > ct {
		byReason -= ct
	} else {
		byReason = 0
	}
	if byReason > 0 {
		evidence = append(evidence, fmt.Sprintf("drop reason NETFILTER_DROP %s (conntrack's own drops taken off)", dropRate(d, byReason)))
	}
	n := max(byRules, byReason)
	if n == 0 {
		return nil
	}
	if byReason > byRules {
		fixes = append(fixes, Fix{Kind: FixBoot, Target: "firewall", Value: "review the chains' policies and rules without counters",
			Note: fmt.Sprintf("%d drops are not in any rule's counter: a policy drop, an iptables rule or a rule without `counter`", byReason-byRules)})
	}
	return []Finding{{
		Severity: Warning, Subject: "netfilter",
		Summary:  fmt.Sprintf("the firewall dropped %s packets%s", dropRate(d, n), dropShare(d, n)),
		Evidence: evidence,
		Fixes:    fixes,
	}}
}
