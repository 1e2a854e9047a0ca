package report

import (
	"strings"
	"testing"

	"linerate/box"
	"linerate/plan"
	"linerate/results"
)

// busPlan is two gigabit ports of cm4 behind its Gen2 x1 bus, one flow
// into each.
const busPlan = `hosts:
  cm4:
    at: 10.231.1.1
    ports:
      peer1: {address: 10.231.1.1, speed: 1G}
      peer2: {address: 10.231.2.1, speed: 1G}
      peer3: {address: 10.231.3.1, speed: 1G}
      peer4: {address: 10.231.4.1, speed: 1G}
  pi1: 10.231.1.2
  pi2: 10.231.2.2
  pi3: 10.231.3.2
  pi4: 10.231.4.2
defaults: {proto: tcp}
flows:
  - {from: pi1, to: cm4, address: 10.231.1.1}
  - {from: pi2, to: cm4, address: 10.231.2.1}
  - {from: pi3, to: cm4, address: 10.231.3.1}
  - {from: pi4, to: cm4, address: 10.231.4.1}
ceiling: {host: cm4, pcie: gen2x1, mps: 128}
`

// busRound is a round in which each flow received goodput bps, its server
// end on an interface of kind (veth in a lab, "" for a NIC).
func busRound(pl *plan.Plan, goodput float64, kind string) results.FlowSet {
	var set results.FlowSet
	for _, f := range pl.Flows {
		fwd := results.Totals{Seconds: 1, ReceivedBytes: uint64(goodput / 8), ReceivedPackets: uint64(goodput / 8 / 1448)}
		r := &results.Result{Targets: []results.TargetResult{{Forward: &fwd}},
			Drops: []results.EndDrops{{Side: results.SideServer, Target: 0, Path: []box.PathIface{{Host: "server", Iface: f.Port, Kind: kind}}}}}
		r.Summary.Totals = fwd
		set.Flows = append(set.Flows, results.FlowRun{From: f.From, Result: r})
		set.Total.Add(fwd)
	}
	return set
}

// TestPlanTotalBus: the total beside "after the bus" says what became of
// the bus: in a lab (veth ports) it does not apply; on NICs past it by
// more than 5 %, the model is not what the traffic crossed; under it,
// nothing more.
func TestPlanTotalBus(t *testing.T) {
	pl, err := plan.Parse("cm4.yaml", []byte(busPlan))
	if err != nil {
		t.Fatal(err)
	}
	e, err := pl.Expect(pl.Ceiling.Bus)
	if err != nil || e.Bus == nil || e.LimitedBps >= e.Total.GoodputBps {
		t.Fatalf("expect: %v, %+v", err, e)
	}
	for _, c := range []struct {
		name    string
		goodput float64 // per flow
		kind    string
		want    string
		not     string
	}{
		{"a lab", 930e6, "veth", "after the bus, which does not apply here: cm4's PCIe gen2x1 link is the plan's model, and cm4 peer1 (veth), cm4 peer2 (veth), cm4 peer3 (veth), cm4 peer4 (veth): virtual, on no PCIe bus", ""},
		{"NICs past the bus", 930e6, "", "the goodput is 121 % of that: cm4's PCIe gen2x1 link as the plan models it is not what this traffic crossed", "does not apply"},
		{"NICs held by the bus", 760e6, "", "after the bus)", "not what this traffic crossed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			set := busRound(pl, c.goodput, c.kind)
			var b strings.Builder
			if err := PlanResult(&b, pl, &plan.Result{Plan: pl.File, Expected: e, Rounds: []results.FlowSet{set}}); err != nil {
				t.Fatal(err)
			}
			l := line(b.String(), "total:")
			t.Log(l)
			if !strings.Contains(l, c.want) || (c.not != "" && strings.Contains(l, c.not)) {
				t.Errorf("total line %q: want %q", l, c.want)
			}
		})
	}
}
