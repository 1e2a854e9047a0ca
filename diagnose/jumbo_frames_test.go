package diagnose

import (
	"strings"
	"testing"

	"linerate/box"
	"linerate/results"
)

func TestJumboFrames(t *testing.T) {
	nic := func(mtu, max int) *box.Box {
		return &box.Box{NICs: []box.NIC{{Name: "eth1", MTU: mtu, MaxMTU: max}}}
	}
	for _, c := range []struct {
		name  string
		box   *box.Box
		path  *PathMTU
		value string // "" when no finding
		text  string // in the summary, evidence or note
	}{
		{"no path evidence", nic(1500, 9216), nil, "", ""},
		{"nothing known of the far end", nic(1500, 9216), &PathMTU{Iface: "eth1"}, "", ""},
		{"both ends and the probe", nic(1500, 9216), &PathMTU{Iface: "eth1", Peer: "10.0.0.2", PeerMaxMTU: 9702, ProbedMTU: 9000}, "9000", "a DF probe to 10.0.0.2 carried 9000 bytes"},
		{"the far end allows less", nic(1500, 9216), &PathMTU{Iface: "eth1", PeerMaxMTU: 4088, ProbedMTU: 1500}, "4088", "probe again after the change"},
		{"this end allows less", nic(1500, 7000), &PathMTU{Iface: "eth1", PeerMaxMTU: 9216}, "7000", "the path was not probed"},
		{"probe only", nic(1500, 9216), &PathMTU{Iface: "eth1", ProbedMTU: 1500}, "9000", "the far end's limit is unknown"},
		{"already jumbo", nic(9000, 9216), &PathMTU{Iface: "eth1", PeerMaxMTU: 9216, ProbedMTU: 9000}, "", ""},
		{"a hop is narrower", nic(1500, 9216), &PathMTU{Iface: "eth1", PeerMaxMTU: 9216, ProbedMTU: 1400}, "", ""},
		{"the far end allows no more", nic(1500, 9216), &PathMTU{Iface: "eth1", PeerMaxMTU: 1500, ProbedMTU: 1500}, "", ""},
		{"driver's maximum unknown", nic(1500, 0), &PathMTU{Iface: "eth1", PeerMaxMTU: 9216}, "", ""},
		{"another interface", nic(1500, 9216), &PathMTU{Iface: "eth0", PeerMaxMTU: 9216}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := jumboFrames{}.Check(&Evidence{Box: c.box, Path: c.path})
			if c.value == "" {
				if len(fs) != 0 {
					t.Fatalf("want no finding, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 || len(fs[0].Fixes) != 1 {
				t.Fatalf("want one finding with one fix, got %+v", fs)
			}
			f := fs[0].Fixes[0]
			if f.Kind != FixMTU || f.Target != "eth1" || f.Value != c.value {
				t.Errorf("fix %v, want mtu eth1 = %s", f, c.value)
			}
			all := fs[0].Summary + "\n" + strings.Join(fs[0].Evidence, "\n") + "\n" + f.Note
			for _, want := range []string{c.text, "seed 001", "+5 %"} {
				if !strings.Contains(all, want) {
					t.Errorf("%q not in\n%s", want, all)
				}
			}
		})
	}
}

// A bench result holds both ends' interfaces on the path with their
// largest MTU: diagnosing the client end from it has the far end's.
func TestJumboFramesFromResult(t *testing.T) {
	r := &results.Result{Schema: 1,
		Samples: []results.Sample{{Side: results.SideClient, Rates: box.Rates{Seconds: 1}}},
		Drops: []results.EndDrops{
			{Side: results.SideClient, Target: -1, Path: []box.PathIface{{Iface: "lo", Loopback: true}, {Iface: "eth1", MTU: 1500, MaxMTU: 9216}}},
			{Side: results.SideServer, Target: 0, Path: []box.PathIface{{Iface: "enp1s0", MTU: 1500, MaxMTU: 9000}}},
		}}
	b := &box.Box{NICs: []box.NIC{{Name: "eth1", MTU: 1500, MaxMTU: 9216}}}
	ev := FromResult(r, results.SideClient, b)
	if ev.Path == nil || ev.Path.Iface != "eth1" || ev.Path.PeerMaxMTU != 9000 {
		t.Fatalf("path from the result: %+v", ev.Path)
	}
	fs := jumboFrames{}.Check(ev)
	if len(fs) != 1 || fs[0].Fixes[0].Value != "9000" || !strings.Contains(strings.Join(fs[0].Evidence, "\n"), "enp1s0 of the server: its interface allows up to 9000") {
		t.Fatalf("findings %+v", fs)
	}
	if ev := FromResult(r, results.SideServer, b); ev.Path != nil {
		t.Errorf("the server end got the client's path: %+v", ev.Path)
	}
}
