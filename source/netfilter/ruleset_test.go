package netfilter

import "testing"

func TestVerdictDrops(t *testing.T) {
	if !VerdictReject.Drops() || VerdictAccept.Drops() || VerdictOther.Drops() {
		t.Error("Drops")
	}
}

func TestRulesetSub(t *testing.T) {
	a := Ruleset{Rules: []RuleCounter{{Family: "inet", Table: "t", Chain: "c", Handle: 2, Packets: 10, Bytes: 100}}}
	b := Ruleset{Rules: []RuleCounter{
		{Family: "inet", Table: "t", Chain: "c", Handle: 2, Packets: 15, Bytes: 150},
		{Family: "inet", Table: "t", Chain: "c", Handle: 3, Packets: 4, Bytes: 40},
	}}
	d := b.Sub(a)
	if len(d.Rules) != 2 || d.Rules[0].Packets != 5 || d.Rules[0].Bytes != 50 || d.Rules[1].Packets != 4 {
		t.Errorf("Sub = %+v", d)
	}
}
