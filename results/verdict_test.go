package results

import (
	"math"
	"strings"
	"testing"

	"linerate/box"
	"linerate/ceiling"
	"linerate/source/rtnl"
	"linerate/wire"
)

func TestVerdict(t *testing.T) {
	udp := func(rate wire.Rate) wire.Spec {
		return wire.Spec{Proto: "udp", Direction: wire.Forward, Payload: 18, Rate: rate}
	}
	sample := func(side Side, rcvbufErrs float64) Sample {
		return Sample{Side: side, Rates: box.Rates{Seconds: 1, UDP: map[string]float64{"RcvbufErrors": rcvbufErrs},
			CPU: []box.CPUUse{{ID: 0, Busy: 50}}}}
	}
	tests := []struct {
		name    string
		spec    wire.Spec
		sent    float64 // pps
		loss    float64
		client  []ThreadCPU
		server  []ThreadCPU
		samples []Sample
		want    Limit
	}{
		{"rate met", udp(wire.Rate{PPS: 1000}), 1000, 0, []ThreadCPU{{Role: "udp-send", Busy: 0.1}}, nil, nil, "asked rate"},
		{"sender saturated", udp(wire.Rate{PPS: 1e6}), 5e5, 0, []ThreadCPU{{Role: "udp-send", Busy: 0.99}}, nil, nil, "sender"},
		{"sender descheduled", udp(wire.Rate{PPS: 1e6}), 5e5, 0, []ThreadCPU{{Role: "udp-send", Busy: 0.5, Behind: 1000}}, nil, nil, "sender"},
		{"sends held back", udp(wire.Rate{PPS: 1e6}), 5e5, 0, []ThreadCPU{{Role: "udp-send", Busy: 0.5}}, nil, []Sample{sample("client", 0)}, "path"},
		{"receiver thread saturated", udp(wire.Rate{}), 5e5, 0.2, []ThreadCPU{{Role: "udp-send", Busy: 0.5}},
			[]ThreadCPU{{Role: "udp-recv", Busy: 0.97}}, nil, "receiver"},
		{"receiver buffer drops", udp(wire.Rate{}), 5e5, 0.2, []ThreadCPU{{Role: "udp-send", Busy: 0.5}},
			[]ThreadCPU{{Role: "udp-recv", Busy: 0.3}}, []Sample{sample("server", 5000)}, "receiver"},
		{"lost on the way", udp(wire.Rate{}), 5e5, 0.1, []ThreadCPU{{Role: "udp-send", Busy: 0.5}},
			[]ThreadCPU{{Role: "udp-recv", Busy: 0.3}}, []Sample{sample("client", 0), sample("server", 0)}, "path"},
		{"unlimited, sender bound", udp(wire.Rate{}), 5e5, 0, []ThreadCPU{{Role: "udp-send", Busy: 0.95}},
			[]ThreadCPU{{Role: "udp-recv", Busy: 0.3}}, nil, "sender"},
		{"unlimited, receiver bound", udp(wire.Rate{}), 5e5, 0, []ThreadCPU{{Role: "udp-send", Busy: 0.6}},
			[]ThreadCPU{{Role: "udp-recv", Busy: 0.93}}, nil, "receiver"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := &Result{Spec: tc.spec, FrameSize: 64, Samples: tc.samples,
				Targets: []TargetResult{{Threads: tc.server}}}
			s := &res.Summary
			s.Seconds = 1
			s.SentPackets = uint64(tc.sent)
			s.SentPPS = tc.sent
			s.LossRatio = tc.loss
			Verdict(res, tc.client)
			if s.LimitedBy != tc.want {
				t.Errorf("limited by %q (%s), want %q", s.LimitedBy, s.LimitedWhy, tc.want)
			}
			if s.LimitedWhy == "" {
				t.Error("no reason given")
			}
		})
	}
}

func TestTCPVerdict(t *testing.T) {
	cpu := func(side Side, busy ...float64) Sample {
		s := Sample{Side: side, Rates: box.Rates{Seconds: 1}}
		for i, b := range busy {
			s.CPU = append(s.CPU, box.CPUUse{ID: i, Busy: b})
		}
		return s
	}
	// The client's loop threads: one sending at 97 %, one receiving at
	// 95 % (reverse), or one sending at 50 %.
	busySend := []ThreadCPU{{Role: "tcp-send", Busy: 0.97}}
	busyRecv := []ThreadCPU{{Role: "tcp-recv", Busy: 0.95}}
	calm := []ThreadCPU{{Role: "tcp-send", Busy: 0.5}}
	for _, tc := range []struct {
		dir     wire.Direction
		samples []Sample
		threads []ThreadCPU // this end's, the client's
		retrans uint64
		want    Limit
	}{
		{wire.Forward, []Sample{cpu("client", 20, 99), cpu("server", 40, 40)}, nil, 0, "sender"},
		{wire.Reverse, []Sample{cpu("client", 20, 99), cpu("server", 40, 40)}, nil, 0, "receiver"},
		{wire.Forward, []Sample{cpu("client", 20, 30), cpu("server", 40, 40)}, nil, 12, "path"},
		{wire.Forward, []Sample{cpu("client", 20, 30), cpu("server", 40, 40)}, nil, 0, ""},
		// A loop's thread at 97 % limits though no CPU was 90 % busy on
		// average (the thread moved between CPUs), retransmits or not.
		{wire.Forward, []Sample{cpu("client", 60, 60), cpu("server", 40, 40)}, busySend, 12, "sender"},
		{wire.Reverse, []Sample{cpu("client", 60, 60), cpu("server", 40, 40)}, busyRecv, 12, "receiver"},
		{wire.Forward, []Sample{cpu("client", 60, 60), cpu("server", 40, 40)}, calm, 12, "path"},
		// Both ways at once: judged from the threads.
		{wire.Bidir, nil, busySend, 0, "sender"},
		{wire.Bidir, nil, calm, 0, ""},
	} {
		res := &Result{Spec: wire.Spec{Proto: "tcp", Direction: tc.dir}, Samples: tc.samples}
		res.Summary.SentBytes = 1 << 30
		res.Summary.Retransmits = tc.retrans
		Verdict(res, tc.threads)
		if res.Summary.LimitedBy != tc.want || res.Summary.LimitedWhy == "" {
			t.Errorf("%s %v: limited by %q (%s), want %q", tc.dir, tc.samples, res.Summary.LimitedBy, res.Summary.LimitedWhy, tc.want)
		}
	}
}

// TestCostCountsAMachineOnce: two serve processes (two server ids) on one
// machine (one boot id) share its CPUs: their CPU time is counted once.
func TestCostCountsAMachineOnce(t *testing.T) {
	busy := func(target int) Sample {
		return Sample{Side: "server", Target: target, Rates: box.Rates{Seconds: 1, CPU: []box.CPUUse{{ID: 0, Busy: 50}, {ID: 1, Busy: 30}}}}
	}
	for _, c := range []struct {
		name     string
		machines [2]string
		want     float64
	}{
		{"one machine", [2]string{"boot-a", "boot-a"}, 0.8},
		{"two machines", [2]string{"boot-a", "boot-b"}, 1.6},
	} {
		res := &Result{Samples: []Sample{busy(0), busy(1)}, Targets: []TargetResult{
			{ServerID: "s1", Machine: c.machines[0]}, {ServerID: "s2", Machine: c.machines[1]},
		}}
		Cost(res, nil, "")
		if got := res.Summary.CPUSeconds.Server; got == nil || math.Abs(*got-c.want) > 1e-9 {
			t.Errorf("%s: server CPU seconds %v, want %.1f", c.name, got, c.want)
		}
	}
}

// TestVerdictOverCeiling: a received rate 150 % of the computed ceiling is
// not the link: the ceiling or the path is not what linerate thinks, and
// the verdict names the suspect. An engine that sends below the qdiscs
// leaves the sender's shaper out of the ceiling.
func TestVerdictOverCeiling(t *testing.T) {
	tbf := rtnl.Qdisc{Node: rtnl.Node{Iface: "lra", Kind: "tbf", Handle: 0x10000, Parent: rtnl.HandleRoot}, Rate: &rtnl.Rate{BytesPerSecond: 100e6 / 8}}
	shaped := []box.PathIface{{Host: "client", Iface: "lra", Kind: "veth", Qdiscs: []rtnl.Qdisc{tbf}}}
	nic := []box.PathIface{{Host: "client", Iface: "eth0", SpeedMbps: 1000}}
	nicShaped := []box.PathIface{{Host: "client", Iface: "eth0", SpeedMbps: 1000, Qdiscs: []rtnl.Qdisc{tbf}}}
	shaperFPS := ceiling.ShaperFPS(*tbf.Rate, ceiling.SingleFrame(1518))
	linkFPS := ceiling.SingleFrame(1518).LineFPS(1e9)
	udp := wire.Spec{Proto: wire.UDP, Direction: wire.Forward, Payload: 1518 - 46}
	tcp := wire.Spec{Proto: wire.TCP, Direction: wire.Forward}
	for _, c := range []struct {
		name     string
		spec     wire.Spec
		engine   string
		path     []box.PathIface
		received float64 // pps
		want     Limit
		wantBy   string // the ceiling's kind
		why      string // in LimitedWhy
	}{
		{"socket over a shaper", udp, "socket", shaped, 1.5 * shaperFPS, LimitOverCeiling, ceiling.LimitShaper, "did not pass through"},
		{"socket at a shaper", udp, "socket", shaped, shaperFPS, LimitLink, ceiling.LimitShaper, "tbf 1:"},
		{"socket over a link", udp, "socket", nic, 1.5 * linkFPS, LimitOverCeiling, ceiling.LimitLink, "link speed"},
		{"ring past its bypassed shaper", udp, "ring", nicShaped, 1.5 * shaperFPS, LimitUnknown, ceiling.LimitLink, ""},
		{"ring over the link", udp, "ring", nicShaped, 1.5 * linkFPS, LimitOverCeiling, ceiling.LimitLink, "link speed"},
		{"xdp, shaper bypassed, no link speed", udp, "xdp", shaped, 1.5 * shaperFPS, LimitUnknown, "", ""},
		{"tcp over a link", tcp, "socket", nic, 1.5 * linkFPS, LimitOverCeiling, ceiling.LimitLink, "GRO"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := &Result{Spec: c.spec, Engine: c.engine, FrameSize: 1518,
				Targets: []TargetResult{{Address: "10.99.0.2:5201"}},
				Drops:   []EndDrops{{Side: SideClient, Target: -1, Path: c.path}}}
			s := &res.Summary
			s.Seconds = 1
			s.ReceivedPPS = c.received
			s.ReceivedPackets = uint64(c.received)
			s.SentPPS, s.SentPackets = s.ReceivedPPS, s.ReceivedPackets
			if c.spec.Proto == wire.TCP {
				s.SentBytes = s.ReceivedPackets * (1518 - 70)
				s.ReceivedBytes = s.SentBytes
			}
			Verdict(res, []ThreadCPU{{Role: "udp-send", Busy: 0.5}})
			by := ""
			if s.PathCeiling != nil {
				by = s.PathCeiling.By
			}
			t.Logf("ceiling %+v; limited by %q: %s", s.PathCeiling, s.LimitedBy, s.LimitedWhy)
			if by != c.wantBy {
				t.Errorf("ceiling by %q, want %q", by, c.wantBy)
			}
			if c.want == LimitUnknown {
				if s.LimitedBy == LimitLink || s.LimitedBy == LimitOverCeiling {
					t.Errorf("limited by %q (%s), want neither link nor over ceiling", s.LimitedBy, s.LimitedWhy)
				}
				return
			}
			if s.LimitedBy != c.want || !strings.Contains(s.LimitedWhy, c.why) {
				t.Errorf("limited by %q (%s), want %q saying %q", s.LimitedBy, s.LimitedWhy, c.want, c.why)
			}
		})
	}
}
