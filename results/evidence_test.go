package results

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"linerate/box"
	"linerate/ledger"
	"linerate/wire"
)

// cpus is a sample's per-CPU use: each CPU's busy and softirq percent.
func cpus(busySoftirq ...[2]float64) []box.CPUUse {
	var out []box.CPUUse
	for i, b := range busySoftirq {
		out = append(out, box.CPUUse{ID: i, Busy: b[0], SoftIRQ: b[1], System: b[0] - b[1], Idle: 100 - b[0]})
	}
	return out
}

// endSample is one second of an end's counters: its CPUs and its Udp
// counters (none dropped).
func endSample(side Side, host string, cpu []box.CPUUse) Sample {
	s := Sample{Side: side, Host: host, Rates: box.Rates{Seconds: 1, CPU: cpu, UDP: map[string]float64{"RcvbufErrors": 0, "SndbufErrors": 0}}}
	if side == SideServer {
		s.Target = 0
	}
	if side != SideServer {
		s.Target = -1
	}
	return s
}

// verdictCase is a built result the verdict judges.
type verdictCase struct {
	name    string
	spec    wire.Spec
	sent    float64 // pps over one second
	loss    float64
	client  []ThreadCPU
	target  TargetResult
	samples []Sample
	drops   []EndDrops
	ledger  *ledger.Ledger
	retrans uint64
	want    Limit
	says    []string // in LimitedWhy
	never   []string // not in LimitedWhy
}

func (c verdictCase) run(t *testing.T) {
	t.Helper()
	res := &Result{Spec: c.spec, FrameSize: 64, Samples: c.samples, Drops: c.drops, Ledger: c.ledger,
		Targets: []TargetResult{c.target}}
	s := &res.Summary
	s.Seconds = 1
	s.SentPackets, s.SentPPS = uint64(c.sent), c.sent
	s.LossRatio = c.loss
	s.LostPackets = uint64(c.sent * c.loss)
	s.ReceivedPackets = s.SentPackets - s.LostPackets
	s.ReceivedPPS = float64(s.ReceivedPackets)
	if c.spec.Proto == wire.TCP {
		s.SentBytes, s.ReceivedBytes = 1<<30, 1<<30
		s.Retransmits = c.retrans
	}
	Verdict(res, c.client)
	t.Logf("limited by %q: %s", s.LimitedBy, s.LimitedWhy)
	if s.LimitedBy != c.want {
		t.Errorf("limited by %q, want %q", s.LimitedBy, c.want)
	}
	if s.LimitedWhy == "" {
		t.Error("no reason given")
	}
	for _, w := range c.says {
		if !strings.Contains(s.LimitedWhy, w) {
			t.Errorf("the reason does not say %q", w)
		}
	}
	for _, w := range c.never {
		if strings.Contains(s.LimitedWhy, w) {
			t.Errorf("the reason says %q", w)
		}
	}
}

// TestVerdictWithoutEvidence: a counter nobody read is unknown, not zero.
// A plain iperf3 peer reports no socket drops, threads or per-CPU use, an
// end may go unsampled, a ledger may lack an end's counters: the verdict
// then says what it could not see and never names the path from the
// silence.
func TestVerdictWithoutEvidence(t *testing.T) {
	udp := func(dir wire.Direction, rate wire.Rate) wire.Spec {
		return wire.Spec{Proto: wire.UDP, Direction: dir, Payload: 18, Rate: rate}
	}
	calm := cpus([2]float64{40, 5}, [2]float64{30, 3})
	cpuUse := 38.5
	iperf3Server := TargetResult{IPerf3: &IPerf3{Peer: "server", CPUTotal: &cpuUse}}
	linerateServer := TargetResult{Threads: []ThreadCPU{{Role: "udp-recv", Busy: 0.3}}}
	sender := []ThreadCPU{{Role: "udp-send", Busy: 0.5}}
	for _, c := range []verdictCase{
		{name: "iperf3 server, as fast as possible, lossy", spec: udp(wire.Forward, wire.Rate{}), sent: 5e5, loss: 0.122,
			target: iperf3Server, samples: []Sample{endSample(SideClient, "", calm)},
			want: LimitUnknown, says: []string{"12.20 % lost", "a plain iperf3 server", "socket-buffer or backlog drops", "38.5 %"}, never: []string{"between the ends"}},
		{name: "iperf3 server, rate met, lossy", spec: udp(wire.Forward, wire.Rate{PPS: 1e5}), sent: 1e5, loss: 0.1,
			target: iperf3Server, samples: []Sample{endSample(SideClient, "", calm)},
			want: LimitUnknown, says: []string{"a plain iperf3 server"}},
		{name: "iperf3 server sending, lossy", spec: udp(wire.Reverse, wire.Rate{PPS: 1e5}), sent: 1e5, loss: 0.05,
			target: iperf3Server, samples: []Sample{endSample(SideClient, "", calm)},
			want: LimitUnknown, says: []string{"a plain iperf3 server", "socket or qdisc drops"}, never: []string{"socket-buffer"}},
		{name: "iperf3 client at serve --iperf3, lossy", spec: udp(wire.Forward, wire.Rate{PPS: 1e5}), sent: 1e5, loss: 0.05,
			target: TargetResult{IPerf3: &IPerf3{Peer: "client", CPUTotal: &cpuUse}}, samples: []Sample{endSample(SideServer, "", calm)},
			want: LimitUnknown, says: []string{"the client (a plain iperf3 client) reports no socket or qdisc drops"}, never: []string{"the server"}},
		{name: "iperf3 server sent no results", spec: udp(wire.Forward, wire.Rate{}), sent: 5e5, loss: 1,
			target: TargetResult{IPerf3: &IPerf3{Peer: "server"}}, samples: []Sample{endSample(SideClient, "", calm)},
			want: LimitUnknown, says: []string{"sent no results"}},
		{name: "client unsampled, lossy", spec: udp(wire.Forward, wire.Rate{}), sent: 5e5, loss: 0.1, client: sender,
			target: linerateServer, samples: []Sample{endSample(SideServer, "", calm)},
			want: LimitUnknown, says: []string{"the client was not sampled: no socket or qdisc drops"}},
		{name: "ledger without the receiver's counters", spec: udp(wire.Forward, wire.Rate{}), sent: 5e5, loss: 0.1, client: sender,
			target: linerateServer,
			drops:  []EndDrops{{Side: SideClient, Target: -1, Delta: &box.Drops{}}, {Side: SideServer, Target: 0, Error: "permission denied"}},
			ledger: &ledger.Ledger{Sent: 5e5, Received: 45e4, Lost: 5e4, Entries: []ledger.Entry{{Place: ledger.Unaccounted, Packets: 5e4}}},
			want:   LimitUnknown, never: []string{"between the ends"}},
		{name: "sends held back, sender unsampled", spec: udp(wire.Forward, wire.Rate{PPS: 1e6}), sent: 5e5, client: sender,
			target: linerateServer, want: LimitUnknown, says: []string{"the client was not sampled"}},
		{name: "sends held back, no sender threads", spec: udp(wire.Forward, wire.Rate{PPS: 1e6}), sent: 5e5,
			target: iperf3Server, samples: []Sample{endSample(SideClient, "", calm)},
			want: LimitUnknown, says: []string{"not measured"}},
		{name: "as fast as possible, sender unsampled", spec: udp(wire.Forward, wire.Rate{}), sent: 5e5, client: sender,
			target: linerateServer, want: LimitUnknown, says: []string{"not sampled"}},
		{name: "tcp retransmits, iperf3 server", spec: wire.Spec{Proto: wire.TCP, Direction: wire.Forward}, retrans: 40,
			client: []ThreadCPU{{Role: "tcp-send", Busy: 0.5}}, target: iperf3Server, samples: []Sample{endSample(SideClient, "", calm)},
			want: LimitUnknown, says: []string{"the server (a plain iperf3 server) was not sampled"}},
		// With both ends counted, the same silences are evidence.
		{name: "both ends counted, lossy", spec: udp(wire.Forward, wire.Rate{}), sent: 5e5, loss: 0.1, client: sender,
			target: linerateServer, samples: []Sample{endSample(SideClient, "", calm), endSample(SideServer, "", calm)},
			want: LimitPath, says: []string{"between the ends"}},
		{name: "ledger with both ends' counters", spec: udp(wire.Forward, wire.Rate{}), sent: 5e5, loss: 0.1, client: sender,
			target: linerateServer,
			drops:  []EndDrops{{Side: SideClient, Target: -1, Delta: &box.Drops{}}, {Side: SideServer, Target: 0, Delta: &box.Drops{}}},
			ledger: &ledger.Ledger{Sent: 5e5, Received: 45e4, Lost: 5e4, Entries: []ledger.Entry{{Place: ledger.Unaccounted, Packets: 5e4}}},
			want:   LimitPath, says: []string{"between the ends"}},
	} {
		t.Run(c.name, c.run)
	}
}

// TestVerdictFullCPU: a CPU full of softirq on a sampled machine (an end,
// or a router in the middle) is named, with its softirq share and the
// other CPUs, where no thread was saturated; the path is not.
func TestVerdictFullCPU(t *testing.T) {
	udp := wire.Spec{Proto: wire.UDP, Direction: wire.Forward, Payload: 18}
	seed002 := cpus([2]float64{100, 52}, [2]float64{1, 0})
	calm := cpus([2]float64{40, 5}, [2]float64{30, 3})
	program := cpus([2]float64{99, 2}, [2]float64{1, 0})
	sender := []ThreadCPU{{Role: "udp-send", Busy: 0.82}}
	server := TargetResult{Threads: []ThreadCPU{{Role: "udp-recv", Busy: 0.16}}}
	for _, c := range []verdictCase{
		{name: "as fast as possible, one CPU full of softirq", spec: udp, sent: 5e5, client: sender, target: server,
			samples: []Sample{endSample(SideClient, "", seed002), endSample(SideServer, "", seed002)},
			want:    LimitCPU, says: []string{"cpu0 100 % busy, 52 % of it softirq, cpu1 idle", "busiest sender 82 %, receiver 16 %", "the client's samples", "the server's", "linerate diagnose"},
			never: []string{"the kernel below the sockets"}},
		{name: "lossy, the router's CPU full", spec: udp, sent: 5e5, loss: 0.2, client: sender, target: server,
			samples: []Sample{endSample(SideClient, "", calm), endSample(SideServer, "", calm), endSample(SideDUT, "router", seed002)},
			want:    LimitCPU, says: []string{"20.00 % lost", "router's samples", "cpu0 100 % busy, 52 % of it softirq"}},
		{name: "rate short, the sender's CPU full", spec: wire.Spec{Proto: wire.UDP, Direction: wire.Forward, Payload: 18, Rate: wire.Rate{PPS: 1e6}},
			sent: 5e5, client: sender, target: server, samples: []Sample{endSample(SideClient, "", seed002), endSample(SideServer, "", calm)},
			want: LimitCPU, says: []string{"sent 500000 pps of 1000000 asked", "cpu0 100 % busy"}},
		{name: "tcp retransmits, the router's CPU full", spec: wire.Spec{Proto: wire.TCP, Direction: wire.Forward}, retrans: 12,
			client: []ThreadCPU{{Role: "tcp-send", Busy: 0.5}}, target: server,
			samples: []Sample{endSample(SideClient, "", calm), endSample(SideServer, "", calm), endSample(SideDUT, "router", seed002)},
			want:    LimitCPU, says: []string{"router's samples", "52 % of it softirq"}},
		{name: "tcp, the receiver's CPU full of softirq", spec: wire.Spec{Proto: wire.TCP, Direction: wire.Forward},
			client: []ThreadCPU{{Role: "tcp-send", Busy: 0.5}}, target: server,
			samples: []Sample{endSample(SideClient, "", calm), endSample(SideServer, "", seed002)},
			want:    LimitReceiver, says: []string{"cpu0 of the receiving end (server) was 100 % busy, 52 % of it softirq", "linerate diagnose"}},
		// A CPU full of a program's time, not the kernel's packet work,
		// is not this verdict's to name.
		{name: "a CPU full of a program", spec: udp, sent: 5e5, client: sender, target: server,
			samples: []Sample{endSample(SideClient, "", program), endSample(SideServer, "", program)},
			want:    LimitPath},
	} {
		t.Run(c.name, c.run)
	}
}

// TestVerdictFullCPURealFigures judges again a result `make demo` saved
// on a 2-CPU machine: an unlimited 64-byte flood between two namespaces
// whose samples show both CPUs about 91 % busy, near half of it softirq,
// with the sender thread at 71 % and the receiver at 26 %. It was called
// the path; the CPUs were full.
func TestVerdictFullCPURealFigures(t *testing.T) {
	b, err := os.ReadFile("testdata/lab-udp-64.json")
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	res.Summary.LimitedBy, res.Summary.LimitedWhy = "", ""
	Verdict(&res, []ThreadCPU{{Role: "udp-send", Busy: 0.71}})
	s := res.Summary
	t.Logf("limited by %q: %s", s.LimitedBy, s.LimitedWhy)
	if s.LimitedBy != LimitCPU {
		t.Errorf("limited by %q, want %q", s.LimitedBy, LimitCPU)
	}
	for _, w := range []string{"cpu0 91 % busy, 47 % of it softirq", "cpu1 91 % busy", "linerate diagnose"} {
		if !strings.Contains(s.LimitedWhy, w) {
			t.Errorf("the reason does not say %q", w)
		}
	}
}
