package diagnose

import (
	"testing"

	"linerate/box"
	"linerate/results"
)

// endsResult is a result of a pair lab: the client in one namespace with
// its interface b, the server in another with its interface a, both on
// one machine.
func endsResult() *results.Result {
	const boot = "26faaaff-062f-4bf6-8f86-1efdee04593f"
	end := func(side results.Side, target int, netns uint64, iface string) results.EndDrops {
		return results.EndDrops{Side: side, Target: target, Ifaces: []string{iface},
			Path:  []box.PathIface{{Host: string(side), Iface: iface, Kind: "veth", MTU: 1500, MaxMTU: 65535}},
			Delta: &box.Drops{Netns: netns, Machine: boot}}
	}
	sample := func(side results.Side, target int) results.Sample {
		return results.Sample{Side: side, Target: target, Rates: box.Rates{Seconds: 1, CPU: []box.CPUUse{{ID: 0, Busy: 50}, {ID: 1, Busy: 20}}}}
	}
	return &results.Result{Schema: 1,
		Drops:   []results.EndDrops{end(results.SideClient, -1, 4026532181, "b"), end(results.SideServer, 0, 4026532884, "a")},
		Samples: []results.Sample{sample(results.SideClient, -1), sample(results.SideServer, 0)}}
}

// TestSavedBox: each end's place and configuration come from what the run
// saved of that end: the server's interface a, not the client's b.
func TestSavedBox(t *testing.T) {
	r := endsResult()
	if tg := EndTarget(r, results.SideServer); tg != 0 {
		t.Errorf("server target %d", tg)
	}
	p, ok := EndPlace(r, results.SideServer, 0)
	if !ok || p.Netns != 4026532884 || p.Machine == "" {
		t.Errorf("server place %+v %v", p, ok)
	}
	if c, _ := EndPlace(r, results.SideClient, -1); c == p {
		t.Errorf("client and server in one place: %+v", c)
	}
	b := SavedBox(r, results.SideServer, 0)
	if len(b.NICs) != 1 || b.NICs[0].Name != "a" || b.NICs[0].Kind != "veth" || b.NICs[0].MaxMTU != 65535 || len(b.CPUs) != 2 {
		t.Errorf("saved box of the server: %+v", b)
	}
	// Its findings are not to be applied on this machine.
	here := Origin{Host: "this", MachineID: "0123456789abcdef0123456789abcdef"}
	if OriginOf(b).SameMachine(here) {
		t.Errorf("findings of a saved end count as this machine's: %+v", OriginOf(b))
	}
	if _, err := Run(FromResult(r, results.SideServer, b)); err != nil {
		t.Errorf("rules over a saved box: %v", err)
	}
	// Without drop counters the result does not say where an end ran.
	r.Drops = nil
	if _, ok := EndPlace(r, results.SideServer, 0); ok {
		t.Error("a place without drop counters")
	}
}
