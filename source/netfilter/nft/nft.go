// Package nft reads the counters of a network namespace's nftables rules
// over netlink, with google/nftables, as netfilter.Ruleset: the rules that
// count, what they do with what they match, the base chains whose policy
// drops and the chains that translate addresses. The types live in
// linerate/source/netfilter, apart from this client, so that what only
// models or judges them links no netlink library.
package nft

import (
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"linerate/source/netfilter"
)

// ReadRuleset lists every rule with a counter, in the network namespace
// whose file descriptor is netnsFD (the caller's when 0 or less).
func ReadRuleset(netnsFD int) (netfilter.Ruleset, error) {
	var opts []nftables.ConnOption
	if netnsFD > 0 {
		opts = append(opts, nftables.WithNetNSFd(netnsFD))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return netfilter.Ruleset{}, fmt.Errorf("nftables: %w", err)
	}
	chains, err := c.ListChains()
	if err != nil {
		return netfilter.Ruleset{}, fmt.Errorf("nftables: list chains: %w", err)
	}
	var rs netfilter.Ruleset
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
			return netfilter.Ruleset{}, fmt.Errorf("nftables: rules of %s %s %s: %w", fam, ch.Table.Name, ch.Name, err)
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
func ruleCounter(exprs []expr.Any) (netfilter.RuleCounter, bool) {
	var rc netfilter.RuleCounter
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
				rc.Verdict = netfilter.VerdictDrop
			case expr.VerdictAccept:
				rc.Verdict = netfilter.VerdictAccept
			}
		case *expr.Reject:
			rc.Verdict = netfilter.VerdictReject
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
