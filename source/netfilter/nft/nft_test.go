package nft

import (
	"net/netip"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"linerate/internal/testenv"
	"linerate/source/netfilter"
	"linerate/source/procfs"
)

func TestRuleCounter(t *testing.T) {
	for _, c := range []struct {
		name    string
		exprs   []expr.Any
		found   bool
		verdict netfilter.Verdict
		exact   bool
	}{
		{"match counter drop", []expr.Any{&expr.Cmp{}, &expr.Counter{Packets: 3}, &expr.Verdict{Kind: expr.VerdictDrop}}, true, netfilter.VerdictDrop, true},
		{"counter before match", []expr.Any{&expr.Counter{Packets: 3}, &expr.Cmp{}, &expr.Verdict{Kind: expr.VerdictDrop}}, true, netfilter.VerdictDrop, false},
		{"reject", []expr.Any{&expr.Cmp{}, &expr.Counter{}, &expr.Log{}, &expr.Reject{}}, true, netfilter.VerdictReject, true},
		{"accept", []expr.Any{&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictAccept}}, true, netfilter.VerdictAccept, true},
		{"no counter", []expr.Any{&expr.Cmp{}, &expr.Verdict{Kind: expr.VerdictDrop}}, false, netfilter.VerdictDrop, false},
	} {
		rc, ok := ruleCounter(c.exprs)
		if ok != c.found || rc.Verdict != c.verdict || rc.Exact != c.exact {
			t.Errorf("%s: %+v found=%v", c.name, rc, ok)
		}
	}
}

// TestLiveRuleset reads, in a namespace of its own, a rule that drops one
// UDP packet in ten, and the conntrack statistics of that namespace.
func TestLiveRuleset(t *testing.T) {
	testenv.RequireRoot(t)
	ns := testenv.NewNetNS(t)
	ns.DropUDP(t, testenv.HookInput, 7100, 10)
	flush := &testenv.Flush{Sink: ns.ListenUDP(t, "127.0.0.1:7101", 0)}
	sent := ns.SendUDP(t, netip.MustParseAddrPort("127.0.0.1:7100"), 500, 32, flush)
	// A NAT chain, as a router that masquerades has.
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Handle)))
	if err != nil {
		t.Fatal(err)
	}
	nat := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "nat"})
	c.AddChain(&nftables.Chain{Name: "postrouting", Table: nat, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	rs, err := ReadRuleset(int(ns.Handle))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.NATChains) != 1 || rs.NATChains[0] != "ip nat postrouting" {
		t.Errorf("nat chains = %v", rs.NATChains)
	}
	if len(rs.Rules) != 1 {
		t.Fatalf("rules = %+v", rs.Rules)
	}
	r := rs.Rules[0]
	if r.Family != "inet" || r.Table != "lrt" || r.Chain != "input" || r.Hook != "input" || r.Verdict != netfilter.VerdictDrop || !r.Exact {
		t.Errorf("rule = %+v", r)
	}
	if r.Packets != uint64(sent/10) {
		t.Errorf("rule counted %d, want %d of %d", r.Packets, sent/10, sent)
	}
	// The namespace's own conntrack statistics, through the net directory
	// of a thread inside it.
	err = ns.Do(func() error {
		s, err := netfilter.ReadConntrackStat(procfs.NewFS("/proc").WithNetDir("/proc/thread-self/net"))
		if err != nil {
			return err
		}
		if s.Counters == nil {
			t.Error("no counters")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
