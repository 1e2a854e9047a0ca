package netfilter

import (
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Verdict is what a rule does with the packets it matches.
type Verdict string

// The verdicts the drop ledger tells apart.
const (
	VerdictDrop   Verdict = "drop"
	VerdictReject Verdict = "reject" // drops and answers with ICMP or a TCP reset
	VerdictAccept Verdict = "accept"
	VerdictOther  Verdict = "" // continue, jump, goto, return, queue, or none
)

// Drops reports whether the verdict ends the packet.
func (v Verdict) Drops() bool { return v == VerdictDrop || v == VerdictReject }

// RuleCounter is the counter of one nftables rule.
type RuleCounter struct {
	Family string `json:"family"`
	Table  string `json:"table"`
	Chain  string `json:"chain"`
	// Hook is the base chain's hook ("input", "forward", "prerouting",
	// ...); "" for a regular chain jumped to.
	Hook    string  `json:"hook,omitempty"`
	Handle  uint64  `json:"handle"`
	Verdict Verdict `json:"verdict"`
	Packets uint64  `json:"packets"`
	Bytes   uint64  `json:"bytes"`
	// Exact is false when the counter sits before a match of the rule: it
	// then counts packets that did not all get the verdict.
	Exact bool `json:"exact"`
}

// Key names the rule: "inet filter forward #4".
func (r RuleCounter) Key() string {
	return fmt.Sprintf("%s %s %s #%d", r.Family, r.Table, r.Chain, r.Handle)
}

// Ruleset is what the drop ledger needs of a namespace's nftables: the
// rule counters and the base chains whose policy drops (their drops have no
// counter).
type Ruleset struct {
	Rules []RuleCounter `json:"rules,omitempty"`
	// DropPolicies names the base chains with policy drop: "inet filter input".
	DropPolicies []string `json:"drop_policies,omitempty"`
	// NATChains names the chains of type nat: "ip nat postrouting". A box
	// with any translates addresses and keeps mappings in conntrack.
	NATChains []string `json:"nat_chains,omitempty"`
}

// Sub returns each rule's counts in r minus those in a, matched by Key; a
// rule a lacks is taken whole, one that went backwards (replaced) too.
func (r Ruleset) Sub(a Ruleset) Ruleset {
	prev := make(map[string]RuleCounter, len(a.Rules))
	for _, x := range a.Rules {
		prev[x.Key()] = x
	}
	d := Ruleset{DropPolicies: r.DropPolicies, NATChains: r.NATChains}
	for _, x := range r.Rules {
		if p, ok := prev[x.Key()]; ok && x.Packets >= p.Packets && x.Bytes >= p.Bytes {
			x.Packets -= p.Packets
			x.Bytes -= p.Bytes
		}
		d.Rules = append(d.Rules, x)
	}
	return d
}

// ReadRuleset lists every rule with a counter, in the network namespace
// whose file descriptor is netnsFD (the caller's when 0 or less).
func ReadRuleset(netnsFD int) (Ruleset, error) {
	var opts []nftables.ConnOption
	if netnsFD > 0 {
		opts = append(opts, nftables.WithNetNSFd(netnsFD))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return Ruleset{}, fmt.Errorf("nftables: %w", err)
	}
	chains, err := c.ListChains()
	if err != nil {
		return Ruleset{}, fmt.Errorf("nftables: list chains: %w", err)
	}
	var rs Ruleset
	for _, ch := range chains {
		fam := family(ch.Table.Family)
		if ch.Type == nftables.ChainTypeNAT {
			rs.NATChains = append(rs.NATChains, fam+" "+ch.Table.Name+" "+ch.Name)
		}
		hook := ""
		if ch.Hooknum != nil {
			hook = hookName(ch.Table.Family, uint32(*ch.Hooknum))
			if ch.Policy != nil && *ch.Policy == nftables.ChainPolicyDrop {
				rs.DropPolicies = append(rs.DropPolicies, fam+" "+ch.Table.Name+" "+ch.Name)
			}
		}
		rules, err := c.GetRules(ch.Table, ch)
		if err != nil {
			return Ruleset{}, fmt.Errorf("nftables: rules of %s %s %s: %w", fam, ch.Table.Name, ch.Name, err)
		}
		for _, r := range rules {
			rc, ok := ruleCounter(r.Exprs)
			if !ok {
				continue
			}
			rc.Family, rc.Table, rc.Chain, rc.Hook, rc.Handle = fam, ch.Table.Name, ch.Name, hook, r.Handle
			rs.Rules = append(rs.Rules, rc)
		}
	}
	return rs, nil
}

// ruleCounter finds a rule's counter and verdict. The counter is exact when
// only statements that do not match (log, another counter, the verdict)
// follow it.
func ruleCounter(exprs []expr.Any) (RuleCounter, bool) {
	var rc RuleCounter
	found := false
	for i, e := range exprs {
		switch e := e.(type) {
		case *expr.Counter:
			if !found {
				rc.Packets, rc.Bytes, found = e.Packets, e.Bytes, true
				rc.Exact = onlyStatements(exprs[i+1:])
			}
		case *expr.Verdict:
			switch e.Kind {
			case expr.VerdictDrop:
				rc.Verdict = VerdictDrop
			case expr.VerdictAccept:
				rc.Verdict = VerdictAccept
			}
		case *expr.Reject:
			rc.Verdict = VerdictReject
		}
	}
	return rc, found
}

func onlyStatements(exprs []expr.Any) bool {
	for _, e := range exprs {
		switch e.(type) {
		case *expr.Counter, *expr.Log, *expr.Verdict, *expr.Reject:
		default:
			return false
		}
	}
	return true
}

func family(f nftables.TableFamily) string {
	switch f {
	case nftables.TableFamilyINet:
		return "inet"
	case nftables.TableFamilyIPv4:
		return "ip"
	case nftables.TableFamilyIPv6:
		return "ip6"
	case nftables.TableFamilyARP:
		return "arp"
	case nftables.TableFamilyNetdev:
		return "netdev"
	case nftables.TableFamilyBridge:
		return "bridge"
	}
	return fmt.Sprintf("family-%d", f)
}

// hookName names a base chain's hook as nft prints it. The numbers are
// enum nf_inet_hooks (include/uapi/linux/netfilter.h); netdev chains use
// NF_NETDEV_INGRESS 0 and NF_NETDEV_EGRESS 1.
func hookName(f nftables.TableFamily, n uint32) string {
	if f == nftables.TableFamilyNetdev {
		switch n {
		case 0:
			return "ingress"
		case 1:
			return "egress"
		}
	}
	switch n {
	case unix.NF_INET_PRE_ROUTING:
		return "prerouting"
	case unix.NF_INET_LOCAL_IN:
		return "input"
	case unix.NF_INET_FORWARD:
		return "forward"
	case unix.NF_INET_LOCAL_OUT:
		return "output"
	case unix.NF_INET_POST_ROUTING:
		return "postrouting"
	case 5: // NF_INET_INGRESS, Linux 5.10
		return "ingress"
	}
	return fmt.Sprintf("hook-%d", n)
}
