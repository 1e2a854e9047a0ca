package netfilter

import "fmt"

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
