package diagnose

import (
	"slices"
	"strings"
	"testing"

	"linerate/box"
	"linerate/results"
	"linerate/source/ethtool"
)

// routerPiBefore models the seed's RouterPi during "Outbound (upload)
// 932 Mbps 81k pps, CPU0 100 %": eth0 bcmgenet IRQs 41/42 and eth1 r8169
// MSI IRQ 55, everything on CPU0, RPS off, coalescing off.
func routerPiBefore() *Evidence {
	b := &box.Box{
		CPUs: []box.CPU{{ID: 0, Online: true}, {ID: 1, Online: true}, {ID: 2, Online: true}, {ID: 3, Online: true}},
		NICs: []box.NIC{
			{Name: "eth0", Kind: "physical", IRQs: []int{41, 42},
				RXQueues: []box.RXQueue{{Index: 0, RPSCPUs: "0"}},
				Coalesce: &ethtool.Coalesce{Params: map[string]uint32{"rx-usecs": 0, "rx-frames": 1}}},
			{Name: "eth1", Kind: "physical", IRQs: []int{55},
				RXQueues: []box.RXQueue{{Index: 0, RPSCPUs: "0"}},
				Channels: &ethtool.Channels{MaxCombined: 1, Combined: 1}},
		},
		IRQs: []box.IRQ{
			{Number: 41, Chip: "GICv2", Name: "eth0", AffinityList: []int{0}, Effective: []int{0}},
			{Number: 42, Chip: "GICv2", Name: "eth0", AffinityList: []int{0}, Effective: []int{0}},
			{Number: 55, Chip: "BRCM STB PCIe MSI", Name: "eth1", AffinityList: []int{0, 1, 2, 3}, Effective: []int{0}},
		},
		Sysctls: []box.Sysctl{{Name: "net.core.netdev_max_backlog", Value: "1000"}},
	}
	r := box.Rates{
		Seconds: 1,
		CPU: []box.CPUUse{
			{ID: 0, Busy: 100, SoftIRQ: 85, System: 10, IRQ: 5},
			{ID: 1, Busy: 1, Idle: 99}, {ID: 2, Busy: 1, Idle: 99}, {ID: 3, Busy: 0, Idle: 100},
		},
		Interrupts: map[string][]float64{"41": {79000, 0, 0, 0}, "42": {2000, 0, 0, 0}, "55": {9000, 0, 0, 0}},
		SoftIRQs:   map[string][]float64{"NET_RX": {90000, 2, 1, 0}},
		NetDev: map[string]box.NetDevRate{
			"eth0": {RxPps: 81000, TxPps: 40000, RxBps: 932e6},
			"eth1": {RxPps: 40000, TxPps: 81000, TxBps: 932e6},
		},
	}
	return &Evidence{Box: b, Rates: []box.Rates{r, r}}
}

func rulesFired(fs []Finding) []string {
	var ids []string
	for _, f := range fs {
		if !slices.Contains(ids, f.Rule) {
			ids = append(ids, f.Rule)
		}
	}
	slices.Sort(ids)
	return ids
}

func TestRouterPiBefore(t *testing.T) {
	fs, err := Run(routerPiBefore())
	if err != nil {
		t.Fatal(err)
	}
	got := rulesFired(fs)
	for _, want := range []string{"irq-single-cpu", "rps-off", "irq-unmovable", "coalescing-off"} {
		if !slices.Contains(got, want) {
			t.Errorf("rule %s did not fire; fired: %v", want, got)
		}
	}
	for _, f := range fs {
		if f.Rule == "irq-single-cpu" {
			if !strings.Contains(f.Summary, "CPU0") || !strings.Contains(f.Summary, "1-3") {
				t.Errorf("irq-single-cpu summary lacks the evidence: %q", f.Summary)
			}
			for _, fx := range f.Fixes {
				if fx.Kind == "irq-affinity" && fx.Target == "55" {
					t.Errorf("proposed moving the unmovable IRQ 55: %v", fx)
				}
			}
		}
		if f.Rule == "rps-off" && f.Subject == "eth1" {
			if len(f.Fixes) == 0 || f.Fixes[0].Kind != "rps" || f.Fixes[0].Value != "1-3" {
				t.Errorf("rps-off fix = %v, want rps eth1/rx-0 = 1-3", f.Fixes)
			}
		}
	}
}

// After the seed's tuning (IRQs on CPU1/2, RPS on CPU3) nothing
// concentrates on one CPU any more.
func TestRouterPiAfterIsQuiet(t *testing.T) {
	ev := routerPiBefore()
	ev.Box.NICs[1].RXQueues[0].RPSCPUs, ev.Box.NICs[1].RXQueues[0].RPSCPUList = "8", []int{3}
	for i := range ev.Rates {
		r := &ev.Rates[i]
		r.CPU = []box.CPUUse{{ID: 0, Busy: 3}, {ID: 1, Busy: 99, SoftIRQ: 80}, {ID: 2, Busy: 10}, {ID: 3, Busy: 1}}
		r.SoftIRQs = map[string][]float64{"NET_RX": {5000, 40000, 5000, 40000}}
		r.Interrupts = map[string][]float64{"41": {0, 8000, 0, 0}, "42": {0, 0, 2000, 0}, "55": {9000, 0, 0, 0}}
	}
	fs, _ := Run(ev)
	for _, f := range fs {
		// eth0 still has one queue on a busy CPU1 (the seed: "CPU1 can just
		// about manage"), so rps-off may speak of eth0, never of eth1.
		if f.Rule == "irq-single-cpu" || (f.Rule == "rps-off" && f.Subject == "eth1") {
			t.Errorf("false alarm after tuning: %s %s", f.Rule, f.Summary)
		}
	}
}

func TestAPU4RSS(t *testing.T) {
	table := make([]uint32, 128)
	for i := 64; i < 128; i++ {
		table[i] = 1
	}
	ev := &Evidence{
		Box: &box.Box{
			CPUs: []box.CPU{{ID: 0}, {ID: 1}, {ID: 2}, {ID: 3}},
			NICs: []box.NIC{{Name: "enp4s0", Kind: "physical",
				Channels: &ethtool.Channels{MaxCombined: 2, Combined: 2},
				RSS:      &ethtool.RSS{RXRings: 2, Indirection: table},
				FlowHash: map[string]string{"tcp4": "sdfn", "udp4": "sd"},
				RXQueues: []box.RXQueue{{Index: 0}, {Index: 1}}}},
		},
		Rates: []box.Rates{{Seconds: 1,
			CPU:     []box.CPUUse{{ID: 0, Busy: 5}, {ID: 1, Busy: 3}, {ID: 2, Busy: 2}, {ID: 3, Busy: 93, SoftIRQ: 68}},
			NetDev:  map[string]box.NetDevRate{"enp4s0": {RxPps: 160000}},
			Ethtool: map[string]map[string]float64{"enp4s0": {"rx_queue_0_packets": 160000, "rx_queue_1_packets": 0}}}},
	}
	fs, _ := Run(ev, "rss-imbalance")
	if len(fs) != 1 || fs[0].Severity != Warning {
		t.Fatalf("findings = %+v, want one rss-imbalance warning", fs)
	}
	var kinds []string
	for _, fx := range fs[0].Fixes {
		kinds = append(kinds, fx.Kind.String()+":"+fx.Value)
	}
	if !slices.Contains(kinds, "flow-hash:sdfn") || !slices.Contains(kinds, "rss-equal:2") {
		t.Errorf("fixes = %v, want flow-hash sdfn and rss-equal 2", kinds)
	}
}

func TestBudgetSqueezeAloneIsInfo(t *testing.T) {
	ev := &Evidence{Box: &box.Box{}, Rates: []box.Rates{{Seconds: 1,
		Softnet: []box.SoftnetRate{{CPU: 0, Processed: 100000, TimeSqueeze: 50}}}}}
	fs, _ := Run(ev, "budget-squeeze")
	if len(fs) != 1 || fs[0].Severity != Info || !strings.Contains(fs[0].Summary, "not a problem") {
		t.Fatalf("findings = %+v, want an info saying squeeze alone is not a problem", fs)
	}
	ev.Rates[0].Softnet[0].Dropped = 300
	fs, _ = Run(ev, "budget-squeeze")
	if len(fs) != 1 || fs[0].Severity != Warning || len(fs[0].Fixes) == 0 {
		t.Fatalf("findings = %+v, want a warning with a netdev_budget fix", fs)
	}
}

func TestSocketBufferAndBacklog(t *testing.T) {
	ev := &Evidence{Box: &box.Box{Sysctls: []box.Sysctl{{Name: "net.core.rmem_max", Value: "212992"}, {Name: "net.core.netdev_max_backlog", Value: "1000"}}},
		Rates: []box.Rates{{Seconds: 1, UDP: map[string]float64{"RcvbufErrors": 5000, "InDatagrams": 95000},
			Softnet: []box.SoftnetRate{{CPU: 1, Dropped: 20, Processed: 1e5}}}}}
	fs, _ := Run(ev, "socket-buffer-overflow", "backlog-drop")
	if got := rulesFired(fs); !slices.Equal(got, []string{"backlog-drop", "socket-buffer-overflow"}) {
		t.Fatalf("fired %v", got)
	}
	for _, f := range fs {
		if f.Rule == "socket-buffer-overflow" && f.Fixes[0].Value != "8388608" {
			t.Errorf("rmem_max fix = %v", f.Fixes[0])
		}
		if f.Rule == "backlog-drop" && f.Fixes[0].Value != "4096" {
			t.Errorf("backlog fix = %v", f.Fixes[0])
		}
	}
}

func TestGeneratorLimited(t *testing.T) {
	ev := &Evidence{Box: &box.Box{}, Load: &Load{AskedPPS: 1e6, SentPPS: 4e5, ReceivedPPS: 4e5, SenderBusy: 100}}
	fs, _ := Run(ev, "generator-limited")
	if len(fs) != 1 {
		t.Fatalf("findings = %+v", fs)
	}
	ev.Load.LossRatio = 0.2
	if fs, _ := Run(ev, "generator-limited"); len(fs) != 0 {
		t.Errorf("blamed the generator although the path lost 20%%: %+v", fs)
	}
}

func TestUnknownRule(t *testing.T) {
	if _, err := Run(&Evidence{Box: &box.Box{}}, "no-such-rule"); err == nil {
		t.Fatal("unknown rule accepted")
	}
}

func TestQuietBoxNoFindings(t *testing.T) {
	ev := &Evidence{Box: &box.Box{CPUs: []box.CPU{{ID: 0}, {ID: 1}}, NICs: []box.NIC{{Name: "eth0", IRQs: []int{38}}}},
		Rates: []box.Rates{{Seconds: 1, CPU: []box.CPUUse{{ID: 0, Busy: 3}, {ID: 1, Busy: 2}},
			Interrupts: map[string][]float64{"38": {10, 0}}, NetDev: map[string]box.NetDevRate{"eth0": {RxPps: 12}}}}}
	fs, _ := Run(ev)
	if len(fs) != 0 {
		t.Errorf("quiet box gave findings: %+v", fs)
	}
}

// TestUnmovableFromEvidence: an IRQ on a controller linerate knows nothing
// of is found unmovable from what the box shows: interrupts landing on a
// CPU its smp_affinity_list does not allow, or a refused write; and then
// no fix moves it. Allowed 0-3 and delivered to CPU0 alone (x86's APIC
// does that by design) is not evidence.
func TestUnmovableFromEvidence(t *testing.T) {
	for _, c := range []struct {
		name     string
		affinity []int
		refused  string
		want     string // evidence of irq-unmovable; "" for none
	}{
		{"interrupts outside the mask", []int{2}, "", "100 % of its 9.0k/s interrupts on CPU0, which smp_affinity_list 2 does not allow"},
		{"refused write", []int{0, 1, 2, 3}, "write error: Input/output error", "writing smp_affinity failed: write error: Input/output error"},
		{"x86 default", []int{0, 1, 2, 3}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := routerPiBefore()
			q := &ev.Box.IRQs[2]
			q.Chip, q.AffinityList, q.Effective = "PCI-MSI-0000:01:00.0", c.affinity, c.affinity[:1]
			if c.refused != "" {
				q.Unsupported = map[string]string{"smp_affinity_write": c.refused}
			}
			fs, err := Run(ev)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				if f.Rule == "irq-unmovable" && f.Subject == "irq 55" {
					got = append(got, f.Evidence...)
				}
				for _, fx := range f.Fixes {
					if c.want != "" && fx.Kind == "irq-affinity" && fx.Target == "55" {
						t.Errorf("%s proposes moving IRQ 55, which cannot move: %v", f.Rule, fx)
					}
				}
			}
			if c.want == "" && len(got) > 0 {
				t.Errorf("irq-unmovable fired without evidence: %q", got)
			}
			if c.want != "" && !slices.Contains(got, c.want) {
				t.Errorf("irq-unmovable evidence %q, want %q", got, c.want)
			}
		})
	}
}

// TestNothingForTheHostInANamespace: diagnosed inside a network namespace,
// the RouterPi's findings keep their RPS fixes but propose no IRQ move and
// no host-wide sysctl; the evidence says what was left for the host.
func TestNothingForTheHostInANamespace(t *testing.T) {
	ev := routerPiBefore()
	ev.Box.Meta.Source = "live netns lr-demo-router"
	for i := range ev.Box.Sysctls {
		ev.Box.Sysctls[i].HostWide = true
	}
	fs, err := Run(ev)
	if err != nil {
		t.Fatal(err)
	}
	rps, dropped := 0, 0
	for _, f := range fs {
		for _, fx := range f.Fixes {
			switch {
			case fx.Kind == "irq-affinity" || fx.Kind == "sysctl" && fx.Target == "net.core.netdev_max_backlog":
				t.Errorf("%s proposes %s:%s inside a namespace", f.Rule, fx.Kind, fx.Target)
			case fx.Kind == "rps":
				rps++
			}
		}
		for _, e := range f.Evidence {
			if strings.HasPrefix(e, "not proposed: irq-affinity:") && strings.Contains(e, "IRQs are the host's") {
				dropped++
			}
		}
	}
	if rps == 0 || dropped == 0 {
		t.Errorf("%d rps fixes, %d irq moves left for the host: want some of each\n%+v", rps, dropped, fs)
	}
}

// virtioGuest is a lab guest's virtio-net NIC with four queues and RSS on,
// udp4 hashed on addresses only as seed 004's i211 was.
func virtioGuest() *box.Box {
	table := make([]uint32, 128)
	for i := range table {
		table[i] = uint32(i % 4)
	}
	return &box.Box{
		CPUs: []box.CPU{{ID: 0}, {ID: 1}, {ID: 2}, {ID: 3}},
		NICs: []box.NIC{{Name: "a", Kind: "physical", Driver: &ethtool.DriverInfo{Driver: "virtio_net"},
			Channels: &ethtool.Channels{MaxCombined: 4, Combined: 4},
			RSS:      &ethtool.RSS{RXRings: 4, Indirection: table},
			FlowHash: map[string]string{"tcp4": "sdfn", "udp4": "sd"},
			RXQueues: []box.RXQueue{{Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}}}},
	}
}

// TestRSSFromDriverQueues: a bench of 8 flows at 500 pps into a virtio
// guest (the figures of such a run): the driver's per-queue counters in
// the samples show one queue taking everything. The rate is far below
// what costs a CPU, so the finding is a note, and it names the skew and
// the hash fix; the same counters evenly spread say nothing.
func TestRSSFromDriverQueues(t *testing.T) {
	ev := &Evidence{Box: virtioGuest(), Rates: []box.Rates{
		{Seconds: 1, RxQueues: map[string][]float64{"a": {0, 0, 2, 608}}},
		{Seconds: 1, RxQueues: map[string][]float64{"a": {0, 1, 0, 612}}},
	}}
	fs, _ := Run(ev, "rss-imbalance")
	if len(fs) != 1 || fs[0].Severity != Info || !strings.Contains(fs[0].Summary, "one of its 4 RSS queues") {
		t.Fatalf("findings = %+v, want one rss-imbalance note", fs)
	}
	if ev := strings.Join(fs[0].Evidence, "\n"); !strings.Contains(ev, "rx queue 3 gets 100 % of a's packets") || !strings.Contains(ev, "driver's per-queue counters") {
		t.Errorf("evidence %q: no skew from the driver's counters", ev)
	}
	if len(fs[0].Fixes) != 1 || fs[0].Fixes[0].Kind != FixFlowHash || fs[0].Fixes[0].Target != "a/udp4" || fs[0].Fixes[0].Value != "sdfn" {
		t.Errorf("fixes = %+v, want flow-hash a/udp4 sdfn", fs[0].Fixes)
	}
	// At a rate that costs a CPU, a warning.
	for i := range ev.Rates {
		ev.Rates[i].RxQueues["a"][3] = 90000
	}
	if fs, _ := Run(ev, "rss-imbalance"); len(fs) != 1 || fs[0].Severity != Warning {
		t.Errorf("at 90 kpps: %+v, want a warning", fs)
	}
	// Spread: nothing, though the hash could still be better.
	ev.Rates = []box.Rates{{Seconds: 1, RxQueues: map[string][]float64{"a": {150, 148, 300, 152}}}}
	ev.Box.NICs[0].FlowHash["udp4"] = "sdfn"
	if fs, _ := Run(ev, "rss-imbalance"); len(fs) != 0 {
		t.Errorf("spread over four queues: %+v", fs)
	}
	// Per-queue counters under ethtool -S's names (no RxQueues) count too.
	ev.Box.NICs[0].FlowHash["udp4"] = "sd"
	ev.Rates = []box.Rates{{Seconds: 1, Ethtool: map[string]map[string]float64{"a": {
		"rx_queue_0_packets": 0, "rx_queue_1_packets": 600, "rx_queue_2_packets": 1, "rx_queue_3_packets": 0, "rx_queue_1_drops": 0}}}}
	if fs, _ := Run(ev, "rss-imbalance"); len(fs) != 1 || !strings.Contains(strings.Join(fs[0].Evidence, "\n"), "rx queue 1 gets") {
		t.Errorf("from ethtool -S names: %+v", fs)
	}
}

// TestRSSFromTestQueues: without per-queue counters in the samples (a
// veth), what the test counted per queue over its window (--xdp) shows
// the skew.
func TestRSSFromTestQueues(t *testing.T) {
	ev := &Evidence{Box: virtioGuest(), Rates: []box.Rates{{Seconds: 1}},
		Queues: []QueueCount{{Iface: "a", Counter: "xdp", Packets: []uint64{0, 0, 3000, 2}, Seconds: 3}}}
	fs, _ := Run(ev, "rss-imbalance")
	if len(fs) != 1 || !strings.Contains(strings.Join(fs[0].Evidence, "\n"), "counted by xdp over the test's 3 s") {
		t.Fatalf("findings = %+v, want the skew from the test's queue counts", fs)
	}
}

// TestFromResultQueues: a result's per-queue counts of the server's
// receiving interface become evidence of the server's end, not the
// client's.
func TestFromResultQueues(t *testing.T) {
	r := &results.Result{Targets: []results.TargetResult{{
		Totals:   results.Totals{Seconds: 2},
		RxQueues: &results.QueueStat{Interface: "a", Counter: results.CounterEthtool, Packets: []uint64{1, 0, 0, 1200}}}}}
	ev := FromResult(r, results.SideServer, virtioGuest())
	if len(ev.Queues) != 1 || ev.Queues[0].Iface != "a" || ev.Queues[0].Seconds != 2 || ev.Queues[0].Packets[3] != 1200 {
		t.Errorf("server's queues: %+v", ev.Queues)
	}
	if ev := FromResult(r, results.SideClient, virtioGuest()); len(ev.Queues) != 0 {
		t.Errorf("the client's evidence took the server's queues: %+v", ev.Queues)
	}
}
