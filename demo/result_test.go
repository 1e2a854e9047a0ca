package demo

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"linerate/box"
	"linerate/ceiling"
	"linerate/wire"
)

// The files in testdata are real `linerate bench --json` results, run from
// lan to wan through a router lab with links capped at 984.395 Mbit/s,
// with 3 s measured (compacted with no other change).
func readBench(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func near(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

func TestParseBenchBad(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"", "no JSON result"},
		{"  \n", "no JSON result"},
		{"linerate: nothing listening", "its JSON result"},
		{`{"schema":2,"spec":{"proto":"tcp"}}`, "schema 2"},
		{`{"spec":{"proto":"tcp"}}`, "schema 0"},
		{`{"schema":1,"spec":{"proto":"sctp"}}`, `proto "sctp"`},
	} {
		_, err := parseBench([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseBench(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

func TestSummarise(t *testing.T) {
	type flowWant struct {
		dir      wire.Direction
		from, to string
		bps, pps float64
		frame    int
		ceilPPS  int64
		loss     float64
		retrans  uint64
	}
	for _, tc := range []struct {
		file  string
		flows []flowWant
	}{
		{"tcp-bidir", []flowWant{
			// TCP: goodput ÷ 1448-byte payload; full-size frames carry 81,274 a second on a gigabit port.
			{Forward, "lan", "wan", 949424640, 949424640.0 / 8 / 1448, 1518, 81274, 0, 0},
			{Reverse, "wan", "lan", 947497834.6666666, 947497834.6666666 / 8 / 1448, 1518, 81274, 0, 0},
		}},
		{"tcp-mss88", []flowWant{
			// --mss 88 with timestamps: 76-byte payloads in 146-byte frames,
			// 753,012 a second on a gigabit port (seeds/002).
			{Forward, "lan", "wan", 52882624, 52882624.0 / 8 / 76, 146, 753012, 0, 4},
		}},
		{"udp-64", []flowWant{
			{Forward, "lan", "wan", 45023232, 87936, 64, 1488095, 0, 0},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r, err := parseBench(readBench(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			flows, cpu, err := summarise(r, "lan", "wan", 1e9)
			if err != nil {
				t.Fatal(err)
			}
			if len(flows) != len(tc.flows) {
				t.Fatalf("%d flows, want %d: %+v", len(flows), len(tc.flows), flows)
			}
			for i, w := range tc.flows {
				f := flows[i]
				if f.Direction != w.dir || f.From != w.from || f.To != w.to {
					t.Errorf("flow %d: %s %s→%s, want %s %s→%s", i, f.Direction, f.From, f.To, w.dir, w.from, w.to)
				}
				if !near(f.Bps, w.bps) || !near(f.PPS, w.pps) {
					t.Errorf("flow %d: %v b/s %v pps, want %v and %v", i, f.Bps, f.PPS, w.bps, w.pps)
				}
				if f.Frame.Bytes != w.frame {
					t.Errorf("flow %d: %d-byte frames, want %d", i, f.Frame.Bytes, w.frame)
				}
				if f.Ceiling == nil || f.Ceiling.PPS != w.ceilPPS {
					t.Fatalf("flow %d: ceiling %+v, want %d pps", i, f.Ceiling, w.ceilPPS)
				}
				if want := w.pps / f.Ceiling.FramesPerSecond(); !near(f.Share, want) {
					t.Errorf("flow %d: share %v, want %v", i, f.Share, want)
				}
				if f.LossRatio != w.loss || f.Retransmits != w.retrans {
					t.Errorf("flow %d: loss %v retransmits %d, want %v and %d", i, f.LossRatio, f.Retransmits, w.loss, w.retrans)
				}
			}
			if len(cpu) != 2 || cpu[0].ID != 0 || cpu[1].ID != 1 {
				t.Fatalf("cpu %+v: want CPUs 0 and 1", cpu)
			}
			for _, c := range cpu {
				if c.Busy <= 0 || c.Busy > 100 {
					t.Errorf("cpu%d busy %v: want (0, 100]", c.ID, c.Busy)
				}
			}

			// Uncapped links: the same figures, no ceiling.
			flows, _, err = summarise(r, "lan", "wan", 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range flows {
				if f.Ceiling != nil || f.Share != 0 {
					t.Errorf("uncapped: ceiling %+v share %v", f.Ceiling, f.Share)
				}
			}
		})
	}
}

func TestSummariseBad(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"no target", `{"schema":1,"spec":{"proto":"udp"},"frame_size":64}`, "no target"},
		{"no direction", `{"schema":1,"spec":{"proto":"udp"},"frame_size":64,"targets":[{}]}`, "neither a forward nor a reverse"},
		{"udp without size", `{"schema":1,"spec":{"proto":"udp"},"targets":[{"forward":{}}]}`, "neither frame_size nor a payload"},
		{"udp frame too small", `{"schema":1,"spec":{"proto":"udp"},"frame_size":40,"targets":[{"forward":{}}]}`, "under the 64-byte"},
		{"tcp without mss", `{"schema":1,"spec":{"proto":"tcp"},"targets":[{"forward":{}}],"streams":[{"direction":"forward"}]}`, "no snd_mss"},
	} {
		r, err := parseBench([]byte(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_, _, err = summarise(r, "lan", "wan", 1e9)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func TestSummariseUDPPayload(t *testing.T) {
	// No frame_size: the frame is worked out from the payload.
	r, err := parseBench([]byte(`{"schema":1,"spec":{"proto":"udp","payload":18},"targets":[{"forward":{"received_pps":1000,"received_bps":512000}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	flows, _, err := summarise(r, "lan", "wan", 1e9)
	if err != nil {
		t.Fatal(err)
	}
	if flows[0].Frame.Bytes != 64 || flows[0].PPS != 1000 {
		t.Errorf("frame %d, %v pps: want 64 and 1000", flows[0].Frame.Bytes, flows[0].PPS)
	}
}

func TestCPUUse(t *testing.T) {
	sample := func(side string, target int, secs float64, busy0, busy1 float64) string {
		b, _ := json.Marshal(map[string]any{"side": side, "target": target, "seconds": secs, "cpu": []box.CPUUse{
			{ID: 0, User: busy0 / 2, System: busy0 / 4, SoftIRQ: busy0 / 4, Idle: 100 - busy0, Busy: busy0},
			{ID: 1, User: busy1, Idle: 100 - busy1, Busy: busy1},
		}})
		return string(b)
	}
	parse := func(samples ...string) []box.CPUUse {
		t.Helper()
		r, err := parseBench([]byte(`{"schema":1,"spec":{"proto":"udp"},"samples":[` + strings.Join(samples, ",") + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		return r.cpuUse()
	}

	// Weighted by seconds: (100×1 + 40×0.5) / 1.5 = 80; the server's
	// samples are not mixed in when the client has some.
	got := parse(sample("client", -1, 1, 100, 10), sample("client", -1, 0.5, 40, 70), sample("server", 0, 1, 0, 0))
	if len(got) != 2 || !near(got[0].Busy, 80) || !near(got[0].User, 40) || !near(got[0].SoftIRQ, 20) || !near(got[1].Busy, 30) {
		t.Errorf("client samples: %+v, want cpu0 busy 80 (usr 40, softirq 20), cpu1 busy 30", got)
	}
	// No client samples: the first server's.
	got = parse(sample("server", 0, 1, 60, 20), sample("server", 1, 1, 0, 0), sample("client", -1, 0, 99, 99))
	if len(got) != 2 || !near(got[0].Busy, 60) || !near(got[1].Busy, 20) {
		t.Errorf("server samples: %+v, want cpu0 60, cpu1 20", got)
	}
	if got := parse(); got != nil {
		t.Errorf("no samples: %+v, want none", got)
	}
}

func TestShapeRate(t *testing.T) {
	for _, tc := range []struct {
		speed int64
		want  uint64
	}{
		{0, 0},
		{-1, 0},
		{1_000_000_000, 984_395_000},   // 1e9 × 1514 / 1538
		{2_500_000_000, 2_460_988_000}, // 2.5e9 × 1514 / 1538
		{100_000_000, 98_440_000},
	} {
		if got := ShapeRate(tc.speed); got != tc.want {
			t.Errorf("ShapeRate(%d) = %d, want %d", tc.speed, got, tc.want)
		}
	}
	// Full-size frames, as tbf counts them (no FCS), pass the shaped link
	// as fast as a real port carries them.
	f, err := ceiling.MTUFrame(1500, tcpHeaders)
	if err != nil {
		t.Fatal(err)
	}
	port := ceiling.LineRate(1e9, f).FramesPerSecond()
	lab := float64(ShapeRate(1e9)) / float64((f.Bytes-ceiling.FCSBytes)*8)
	if math.Abs(lab-port)/port > 1e-5 {
		t.Errorf("shaped link passes %v full frames/s, a gigabit port %v", lab, port)
	}
}

// TestParseFlowSet: `bench --from --json` as the router prints it — one
// flow's result, and the router's own samples, which the CPU use is taken
// from.
func TestParseFlowSet(t *testing.T) {
	res := string(readBench(t, "udp-64"))
	dut := `{"side":"dut","target":-1,"seconds":1,"cpu":[{"id":0,"busy":100,"softirq":60},{"id":1,"busy":5}]}`
	set := `{"schema":1,"flows":[{"from":"lan:7557","to":["wan:7557"],"result":` + res + `}],"samples":[` + dut + `]}`
	r, err := parseFlowSet([]byte(set))
	if err != nil {
		t.Fatal(err)
	}
	if r.Spec.Proto != wire.UDP || r.Summary.ReceivedPPS <= 0 {
		t.Errorf("the flow's result was not read: %+v", r.Summary)
	}
	cpu := r.cpuUse()
	if len(cpu) != 2 || cpu[0].Busy != 100 || cpu[0].SoftIRQ != 60 || cpu[1].Busy != 5 {
		t.Errorf("CPU use %+v, want the router's samples", cpu)
	}
	o, err := flowOutcome(Experiments[2], []string{"bench"}, []byte(set), "lan", "wan", 1e9)
	if err != nil || len(o.Flows) != 1 || o.Flows[0].PPS != 87936 || string(o.Bench) != set {
		t.Errorf("outcome %+v, %v", o, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"", "no JSON result"},
		{`{"schema":2,"flows":[]}`, "schema 2"},
		{`{"schema":1,"flows":[]}`, "0 flows; want one"},
		{`{"schema":1,"flows":[{"from":"lan:7557","result":null,"error":"lan:7557: flow refused"}]}`, "the flow from lan:7557 has no result: lan:7557: flow refused"},
		{`{"schema":1,"flows":[{"from":"lan:7557"}]}`, "no result: no reason given"},
		{`{"schema":1,"flows":[{"from":"lan:7557","result":{"schema":1,"spec":{"proto":"sctp"}}}]}`, `proto "sctp"`},
	} {
		if _, err := parseFlowSet([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlowSet(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}
