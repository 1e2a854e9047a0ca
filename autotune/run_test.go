package autotune

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"linerate/box"
	"linerate/diagnose"
	"linerate/internal/testenv"
	"linerate/internal/usage"
	"linerate/results"
	"linerate/sample"
	"linerate/source/cpuset"
	"linerate/tune"
	"linerate/wire"
)

// pairs zips rounds without and with a change into pairs.
func pairs(without, with []float64) []Pair {
	out := make([]Pair, len(without))
	for i := range without {
		out[i] = Pair{Before: without[i], After: with[i]}
	}
	return out
}

func TestJudge(t *testing.T) {
	const conf = 0.95
	for _, tc := range []struct {
		name          string
		metric        Metric
		without, with []float64
		decision      Decision
		gain          float64 // expected, ±0.001
		why           string
	}{
		{"clear gain", MetricRxPPS, []float64{100, 101, 99}, []float64{120, 121, 119}, Better, 0.20, "clear of the 2.0 % threshold"},
		{"noisy rounds, steady ratio", MetricRxPPS, []float64{100, 70, 130, 90}, []float64{128, 89, 166, 115}, Better, 0.277, "clear of"},
		{"a ratio that swings", MetricRxPPS, []float64{100, 100, 100}, []float64{140, 95, 120}, Unclear, 0.1686, "straddles the 2.0 % threshold"},
		{"below the minimum gain", MetricRxPPS, []float64{100, 100, 100}, []float64{101, 101.1, 100.9}, NotBetter, 0.01, "below the 2.0 % threshold"},
		{"worse", MetricRxPPS, []float64{100, 101, 99}, []float64{80, 81, 79}, NotBetter, -0.20, "worse: -20.0 %"},
		{"one pair", MetricRxPPS, []float64{100}, []float64{150}, Unclear, 0.5, "no interval yet"},
		{"less loss", MetricLoss, []float64{0.30, 0.31, 0.29}, []float64{0.10, 0.11, 0.09}, Better, 0.6677, "clear of"},
		{"more loss", MetricLoss, []float64{0.10, 0.10}, []float64{0.30, 0.30}, NotBetter, -2, "worse"},
		{"no loss to reduce", MetricLoss, []float64{0, 0}, []float64{0, 0}, NotBetter, 0, "nothing to improve"},
		{"loss from nothing", MetricLoss, []float64{0, 0}, []float64{0.01, 0.02}, NotBetter, 0, "worse: from 0 to 1.50 %"},
		{"loss to nothing", MetricLoss, []float64{0.02, 0.021, 0.019}, []float64{0, 0, 0}, Better, 1, "clear of"},
		{"less CPU", MetricCPUPerMpkt, []float64{2.0, 2.1, 2.05}, []float64{1.5, 1.58, 1.53}, Better, 0.2504, "clear of"},
		{"nothing measured", MetricRxPPS, nil, nil, Unclear, 0, "no rounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.metric, pairs(tc.without, tc.with), DefaultMinGain, conf)
			t.Logf("%s: %s", v.Decision, v.Why)
			if v.Decision != tc.decision || v.Keep != (tc.decision == Better) || math.Abs(v.Gain-tc.gain) > 0.001 || !strings.Contains(v.Why, tc.why) {
				t.Errorf("Judge(%v, %v) = %s keep %v gain %.4f why %q; want %s gain %.4f why ~%q",
					tc.without, tc.with, v.Decision, v.Keep, v.Gain, v.Why, tc.decision, tc.gain, tc.why)
			}
			if v.Keep && v.GainLow <= DefaultMinGain {
				t.Errorf("kept with an interval from %.4f", v.GainLow)
			}
			if v.Pairs > 1 && v.Gain > 0 && !(v.GainLow <= v.Gain && v.Gain <= v.GainHigh) {
				t.Errorf("gain %.4f outside its interval %.4f to %.4f", v.Gain, v.GainLow, v.GainHigh)
			}
			if _, err := json.Marshal(v); err != nil {
				t.Errorf("verdict does not encode: %v", err)
			}
		})
	}
}

// TestJudgeInterval checks the interval against figures worked by hand:
// log ratios ln 1.2, ln 1.3, ln 1.25 have mean 0.2226 and standard
// deviation 0.0400; t(0.975, 2) = 4.3027, so the 95 % interval of the
// mean log ratio is 0.2226 ± 0.0994, a gain from +13.1 % to +38.1 %.
func TestJudgeInterval(t *testing.T) {
	v := Judge(MetricRxPPS, pairs([]float64{100, 100, 100}, []float64{120, 130, 125}), DefaultMinGain, 0.95)
	if math.Abs(v.GainLow-0.1307) > 0.001 || math.Abs(v.GainHigh-0.3806) > 0.001 || v.Method != MethodLogRatio || v.Pairs != 3 {
		t.Errorf("interval %.4f to %.4f by %q over %d pairs; want 0.1307 to 0.3806", v.GainLow, v.GainHigh, v.Method, v.Pairs)
	}
	// More looks, a wider interval each: the same pairs at 99 % are
	// unclear.
	if w := Judge(MetricRxPPS, pairs([]float64{100, 100, 100}, []float64{120, 130, 125}), 0.2, LookConfidence(6)); w.Decision != Unclear || w.GainHigh-w.GainLow <= v.GainHigh-v.GainLow {
		t.Errorf("at %.4f: %s, interval %.4f to %.4f", LookConfidence(6), w.Decision, w.GainLow, w.GainHigh)
	}
	if c := LookConfidence(6); math.Abs(c-(1-0.1/6)) > 1e-12 {
		t.Errorf("LookConfidence(6) = %v", c)
	}
}

func TestMedianSpread(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median odd = %v", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median even = %v", m)
	}
	if s := spread([]float64{90, 100, 110}, 100); math.Abs(s-0.2) > 1e-9 {
		t.Errorf("spread = %v", s)
	}
	if s := spread([]float64{5}, 5); s != 0 {
		t.Errorf("spread of one = %v", s)
	}
}

// TestJudgeGuardsThroughput: for the CPU goal a change that saves CPU per
// packet but loses throughput clearly is not kept.
func TestJudgeGuardsThroughput(t *testing.T) {
	r := func(pps, cpu float64) Round {
		return Round{Proto: "udp", ReceivedPPS: pps, ReceivedPackets: uint64(pps), CPUPerMpkt: cpu, CPUSampled: true}
	}
	a := &auto{cfg: Config{Goal: GoalCPU, MinGain: DefaultMinGain, Rounds: 3, MaxRounds: 3}, metric: MetricCPUPerMpkt}
	base := []Round{r(100e3, 2.0), r(101e3, 2.02), r(99e3, 1.98)}
	zip := func(with []Round) []roundPair {
		out := make([]roundPair, len(with))
		for i := range with {
			out[i] = roundPair{without: base[i], with: with[i]}
		}
		return out
	}
	if v := a.judge(zip([]Round{r(100e3, 1.5), r(100.5e3, 1.51), r(99.5e3, 1.49)})); !v.Keep {
		t.Errorf("same throughput, less CPU: not kept: %s", v.Why)
	}
	v := a.judge(zip([]Round{r(70e3, 1.5), r(71e3, 1.51), r(69e3, 1.49)}))
	if v.Keep || !strings.Contains(v.Why, "throughput fell 30.0 %") {
		t.Errorf("less CPU but 30 %% less throughput: keep %v, %q", v.Keep, v.Why)
	}
}

// fakeRouter is a rig over a directory laid out like / (real files, the
// real journal): one NIC eth1 with a single rx queue whose rps_cpus
// decides the traffic's fate, as on the RouterPi of seed 002. With RPS
// off, CPU0 does all the receive work at 99 % and 100 kpps get through;
// with RPS on, 150 kpps. rps_flow_cnt and the RFS sysctl change nothing.
type fakeRouter struct {
	t     *testing.T
	root  string
	sys   *tune.Dir
	calls int
	// onMeasure, if set, runs before each round with its number (from 1).
	onMeasure func(n int)
	// received, if set, is the pps round n receives, with RPS on or off,
	// in place of 100 or 150 kpps with ±0.5 % of jitter.
	received func(n int, rps bool) float64
}

func newFakeRouter(t *testing.T) *fakeRouter {
	root := t.TempDir()
	testenv.WriteFiles(t, root, map[string]string{
		"sys/class/net/eth1/queues/rx-0/rps_cpus":     "0\n",
		"sys/class/net/eth1/queues/rx-0/rps_flow_cnt": "0\n",
		"sys/class/net/eth1/queues/tx-0/xps_cpus":     "0\n",
		"sys/devices/system/cpu/online":               "0-1\n",
		"proc/sys/net/core/rps_sock_flow_entries":     "0\n",
	})
	return &fakeRouter{t: t, root: root, sys: tune.NewDir(root)}
}

func (f *fakeRouter) rps() []int {
	b, err := os.ReadFile(filepath.Join(f.root, "sys/class/net/eth1/queues/rx-0/rps_cpus"))
	if err != nil {
		f.t.Fatal(err)
	}
	l, err := cpuset.ParseMask(strings.TrimSpace(string(b)))
	if err != nil {
		f.t.Fatal(err)
	}
	return l
}

func (f *fakeRouter) rig() *Rig {
	return &Rig{
		Name: "fake", DUT: "eth1 box", System: f.sys,
		Inspect: func(context.Context) (*box.Box, error) {
			l := f.rps()
			return &box.Box{NICs: []box.NIC{{Name: "eth1", Kind: "physical", OperState: "up",
				RXQueues: []box.RXQueue{{Index: 0, RPSCPUs: cpuset.FormatMask(l), RPSCPUList: l}}}},
				CPUs: []box.CPU{{ID: 0, Online: true}, {ID: 1, Online: true}}}, nil
		},
		Driver: f,
	}
}

// The fake router is its own driver: it makes up the device under
// test's samples instead of reading them.
func (f *fakeRouter) Name() string { return "fake" }
func (f *fakeRouter) Close() error { return nil }

func (f *fakeRouter) Measure(ctx context.Context, _ sample.Reader) (Measurement, error) {
	f.calls++
	if f.onMeasure != nil {
		f.onMeasure(f.calls)
	}
	// ±0.5 % from round to round.
	jitter := 1 + 0.005*float64(f.calls%3-1)
	pps, busy0, busy1 := 100e3, 99.0, 10.0
	if len(f.rps()) > 0 {
		pps, busy0, busy1 = 150e3, 60, 60
	}
	pps *= jitter
	if f.received != nil {
		pps = f.received(f.calls, len(f.rps()) > 0)
	}
	sent := 200e3
	start := time.Date(2026, 1, 1, 0, 0, f.calls, 0, time.UTC)
	res := &results.Result{Spec: wire.Spec{Proto: "udp"}, FrameSize: 64, Interrupted: ctx.Err() != nil,
		Summary: results.Summary{Totals: results.Totals{Seconds: 1, SentPPS: sent, ReceivedPPS: pps,
			SentPackets: uint64(sent), ReceivedPackets: uint64(pps), LostPackets: uint64(sent - pps),
			LossRatio: (sent - pps) / sent, ReceivedBPS: pps * 64 * 8}, LimitedBy: "receiver"}}
	rt := box.Rates{Start: start, End: start.Add(time.Second), Seconds: 1,
		CPU:      []box.CPUUse{{ID: 0, Busy: busy0, SoftIRQ: busy0 - 5, Idle: 100 - busy0}, {ID: 1, Busy: busy1, Idle: 100 - busy1}},
		SoftIRQs: map[string][]float64{"NET_RX": {50000, 10}},
		NetDev:   map[string]box.NetDevRate{"eth1": {RxPps: sent}},
	}
	return Measurement{Result: res, DUT: []box.Rates{rt}}, nil
}

// TestAutoFakeRouter runs the whole loop: diagnose proposes RPS and RFS,
// RPS is kept (+50 %), the RFS items change nothing and are rolled back,
// and the files say so.
func TestAutoFakeRouter(t *testing.T) {
	f := newFakeRouter(t)
	store := tune.NewStore(t.TempDir())
	var progress bytes.Buffer
	rep, err := Run(context.Background(), Config{Rig: f.rig(), Store: store, Rounds: 3, Progress: &progress})
	if err != nil {
		t.Fatalf("Auto: %v\n%s", err, progress.String())
	}
	got := map[string]string{}
	rounds := len(rep.Baseline)
	for _, tr := range rep.Trials {
		got[tr.Item.Kind.String()+" "+tr.Item.Target] = tr.Outcome
		if tr.Outcome == RolledBack && !tr.Restored {
			t.Errorf("%s rolled back but not restored", tr.Item)
		}
		if n := tr.Verdict.Pairs; n < 3 || len(tr.Rounds) != n || len(tr.Without) != n {
			t.Errorf("%s: %d rounds with, %d without, %d pairs judged; want 3 pairs or more", tr.Item, len(tr.Rounds), len(tr.Without), n)
		}
		rounds += 2 * tr.Verdict.Pairs
	}
	want := map[string]string{
		"rps eth1/rx-0":                         Kept,
		"rps-flow eth1/rx-0":                    RolledBack,
		"sysctl net.core.rps_sock_flow_entries": RolledBack,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: outcome %q, want %q (all: %v)\n%s", k, got[k], w, got, progress.String())
		}
	}
	if len(rep.Trials) != 3 {
		t.Errorf("%d trials, want 3: %v", len(rep.Trials), got)
	}
	if rep.Metric != MetricRxPPS || rep.Before.ReceivedPPS != 100e3 || rep.After.ReceivedPPS != 150e3 {
		t.Errorf("before/after: %s %v → %v", rep.Metric, rep.Before.ReceivedPPS, rep.After.ReceivedPPS)
	}
	if k := rep.Trials[0]; math.Abs(k.Verdict.Before-100e3) > 1e3 || math.Abs(k.Verdict.After-150e3) > 1e3 ||
		math.Abs(k.Verdict.Change-0.5) > 0.01 || k.Verdict.GainLow <= DefaultMinGain {
		t.Errorf("rps trial verdict: %+v", k.Verdict)
	}
	// A later trial's rounds without its change have the kept one in place.
	if r := rep.Trials[1]; math.Abs(r.Verdict.Before-150e3) > 1.5e3 {
		t.Errorf("rps-flow measured without it at %v, want about the kept 150000", r.Verdict.Before)
	}
	files := testenv.ReadFiles(t, f.root, []string{"sys/class/net/eth1/queues/rx-0/rps_cpus",
		"sys/class/net/eth1/queues/rx-0/rps_flow_cnt", "proc/sys/net/core/rps_sock_flow_entries"})
	if files["sys/class/net/eth1/queues/rx-0/rps_cpus"] != "2" || files["sys/class/net/eth1/queues/rx-0/rps_flow_cnt"] != "0" ||
		files["proc/sys/net/core/rps_sock_flow_entries"] != "0" {
		t.Errorf("files after auto: %v; want rps on CPU1 (2), the rest as before", files)
	}
	// The kept change is the journal's only record; rollback undoes it.
	recs, err := store.List()
	if err != nil || len(recs) != 1 || len(rep.Records) != 1 || recs[0].ID != rep.Records[0] || recs[0].State != tune.RecApplied {
		t.Fatalf("journal: %v %v; report records %v", recs, err, rep.Records)
	}
	if _, err := store.Rollback(context.Background(), f.sys, recs[0]); err != nil {
		t.Fatal(err)
	}
	if l := f.rps(); len(l) != 0 {
		t.Errorf("rps after rollback: %v", l)
	}
	// Diagnosed twice (the second pass found RPS on and nothing new): the
	// baseline's rounds and each trial's pairs.
	if f.calls != rounds {
		t.Errorf("%d rounds measured, want %d", f.calls, rounds)
	}
	for _, w := range []string{"rps-off eth1 (critical)", "[1/3] rps eth1/rx-0 none → 1 (diagnose rps-off)", "kept: 99.5 kpps → 150.0 kpps, +50.5 % (interval"} {
		if !strings.Contains(progress.String(), w) {
			t.Errorf("progress lacks %q:\n%s", w, progress.String())
		}
	}
}

// TestAutoInterrupted: Ctrl-C during a trial's bench rolls that trial
// back, keeps what was kept, and says so.
func TestAutoInterrupted(t *testing.T) {
	f := newFakeRouter(t)
	store := tune.NewStore(t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Rounds: 1-2 baseline, 3-8 the rps trial's three pairs, 9 the
	// rps-flow trial's first.
	f.onMeasure = func(n int) {
		if n == 9 {
			cancel()
		}
	}
	rep, err := Run(ctx, Config{Rig: f.rig(), Store: store, Rounds: 2})
	if !errors.Is(err, context.Canceled) || rep == nil || !rep.Interrupted {
		t.Fatalf("Auto: %v, report %v; want an interrupted report", err, rep)
	}
	if len(rep.Trials) != 2 || rep.Trials[0].Outcome != Kept || rep.Trials[1].Outcome != Interrupted || !rep.Trials[1].Restored {
		t.Fatalf("trials: %+v", rep.Trials)
	}
	files := testenv.ReadFiles(t, f.root, []string{"sys/class/net/eth1/queues/rx-0/rps_cpus", "sys/class/net/eth1/queues/rx-0/rps_flow_cnt"})
	if files["sys/class/net/eth1/queues/rx-0/rps_cpus"] != "2" || files["sys/class/net/eth1/queues/rx-0/rps_flow_cnt"] != "0" {
		t.Errorf("files: %v", files)
	}
	if recs, _ := store.List(); len(recs) != 1 {
		t.Errorf("journal holds %d records, want the kept one", len(recs))
	}
}

// TestAutoBadTry: an impossible --try is bad input before any traffic.
func TestAutoBadTry(t *testing.T) {
	f := newFakeRouter(t)
	_, err := Run(context.Background(), Config{Rig: f.rig(), Store: tune.NewStore(t.TempDir()),
		Try: []tune.Item{{Kind: "rps", Target: "eth9/rx-0", Value: "1"}}})
	if !usage.Is(err) || !strings.Contains(err.Error(), "no interface eth9") || f.calls != 0 {
		t.Errorf("err %v (usage %v), %d rounds run", err, usage.Is(err), f.calls)
	}
	_, err = Run(context.Background(), Config{Rig: f.rig(), Store: tune.NewStore(t.TempDir()), NoFixes: true})
	if !usage.Is(err) || !strings.Contains(err.Error(), "nothing to try") {
		t.Errorf("--no-fixes without --try: %v", err)
	}
	_, err = Run(context.Background(), Config{Rig: f.rig(), Store: tune.NewStore(t.TempDir()), Goal: "speed"})
	if !usage.Is(err) || !strings.Contains(err.Error(), `Goal "speed"`) {
		t.Errorf("bad goal: %v", err)
	}
}

// TestAutoDryRunAndTry: a dry run lists --try first, then the fixes
// (a fix for the same target as a --try is dropped), changes nothing and
// journals nothing.
func TestAutoDryRunAndTry(t *testing.T) {
	f := newFakeRouter(t)
	state := t.TempDir()
	rep, err := Run(context.Background(), Config{Rig: f.rig(), Store: tune.NewStore(state), Rounds: 1, DryRun: true,
		Try: []tune.Item{{Kind: "xps", Target: "eth1/tx-0", Value: "1"}, {Kind: "rps", Target: "eth1/rx-0", Value: "0-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range rep.Candidates {
		got = append(got, c.Source+" "+describeChanges(c.Changes))
	}
	want := []string{"--try xps eth1/tx-0 none → 1", "--try rps eth1/rx-0 none → 0-1",
		"diagnose rps-off rps-flow eth1/rx-0 0 → 4096", "diagnose rps-off sysctl net.core.rps_sock_flow_entries 0 → 32768"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("candidates:\n got %q\nwant %q", got, want)
	}
	if len(rep.Trials) != 0 || f.calls != 1 || len(f.rps()) != 0 {
		t.Errorf("dry run: %d trials, %d rounds, rps %v", len(rep.Trials), f.calls, f.rps())
	}
	if _, err := os.Stat(filepath.Join(state, "journal")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dry run made a journal: %v", err)
	}
}

// A Metric is stored as the name it always was, and reads back as itself;
// a name this version does not know survives the round trip.
func TestMetricJSON(t *testing.T) {
	for _, m := range append(metrics, Metric{name: "future_metric"}) {
		b, err := json.Marshal(struct {
			Metric Metric `json:"metric"`
		}{m})
		if want := `{"metric":"` + m.String() + `"}`; err != nil || string(b) != want {
			t.Errorf("%v: %s, %v; want %s", m, b, err, want)
		}
		var back struct {
			Metric Metric `json:"metric"`
		}
		if err := json.Unmarshal(b, &back); err != nil || back.Metric != m {
			t.Errorf("%s read back as %+v, %v", b, back.Metric, err)
		}
	}
	if got := MetricRxBPS.Format(941.23e6); got != "941.23 Mbit/s" {
		t.Errorf("received_bps: %q", got)
	}
	if got := MetricLoss.Format(0.04123); got != "4.12 %" {
		t.Errorf("loss_ratio: %q", got)
	}
	if got := MetricCPUPerMpkt.Format(1.8512); got != "1.85 s/Mpkt" {
		t.Errorf("cpu_seconds_per_mpkt: %q", got)
	}
	if !MetricRxPPS.HigherIsBetter() || MetricLoss.HigherIsBetter() || MetricCPUPerMpkt.Unit() != "s/Mpkt" {
		t.Error("a metric lost its direction or unit")
	}
}

// TestJudgeLossAtOfferedLoad: the demo's case, RPS frees the sender's CPU
// and it sends twice as much; the loss that comes with it is not the
// change's.
func TestJudgeLossAtOfferedLoad(t *testing.T) {
	r := func(sent, loss float64) Round {
		return Round{Proto: "udp", SentPPS: sent, ReceivedPPS: sent * (1 - loss), LossRatio: loss}
	}
	base := []Round{r(100e3, 0.02), r(101e3, 0.021), r(99e3, 0.019)}
	a := &auto{cfg: Config{Goal: GoalLoss, MinGain: DefaultMinGain, Rounds: 3, MaxRounds: 3}, metric: MetricLoss}
	judge := func(with ...Round) Verdict {
		ps := make([]roundPair, len(with))
		for i := range with {
			ps[i] = roundPair{without: base[i], with: with[i]}
		}
		return a.judge(ps)
	}
	// Twice the load, more loss: not judged, said why.
	v := judge(r(200e3, 0.14), r(201e3, 0.145), r(199e3, 0.144))
	if v.Keep || v.Decision != NotBetter || !strings.HasPrefix(v.Why, "not judged: offered loads differ") || v.Note == "" {
		t.Errorf("more loss at twice the load: keep %v, why %q, note %q", v.Keep, v.Why, v.Note)
	}
	// Half the load, less loss: not the change's either.
	v = judge(r(50e3, 0.001), r(50.5e3, 0.0011), r(49.5e3, 0.0009))
	if v.Keep || !strings.HasPrefix(v.Why, "not judged") {
		t.Errorf("less loss at half the load kept: %q", v.Why)
	}
	// Twice the load and less loss: better whatever the load, noted.
	v = judge(r(200e3, 0.001), r(201e3, 0.0011), r(199e3, 0.0009))
	if !v.Keep || !strings.Contains(v.Why, "offered loads differ") {
		t.Errorf("less loss at twice the load: keep %v, %q", v.Keep, v.Why)
	}
	// The same load within 5 %: judged as before, no note.
	v = judge(r(103e3, 0.001), r(102e3, 0.0011), r(104e3, 0.0009))
	if !v.Keep || v.Note != "" {
		t.Errorf("less loss at the same load: keep %v, %q, note %q", v.Keep, v.Why, v.Note)
	}
}

// TestRefuseIRQsByName: a refused irq-affinity change of an IRQ named by
// what it serves is remembered by the number it resolved to, as one
// named by number is, so that the next pass does not propose it again.
func TestRefuseIRQsByName(t *testing.T) {
	a := &auto{}
	refused := errors.New("write error: input/output error")
	a.refuseIRQs("eth0/TxRx-1", []tune.Change{{Kind: diagnose.FixIRQAffinity, Target: "eth0/TxRx-1", IRQ: 52}}, refused)
	a.refuseIRQs("41", []tune.Change{{Kind: diagnose.FixIRQAffinity, Target: "41"}}, refused)
	if len(a.refusedIRQs) != 2 || a.refusedIRQs[52] == "" || a.refusedIRQs[41] == "" {
		t.Errorf("refused IRQs %v, want 41 and 52", a.refusedIRQs)
	}
}

// runTry runs tune auto over the fake router with --try rps only.
func runTry(t *testing.T, f *fakeRouter, rounds, maxRounds int) (*Report, string) {
	t.Helper()
	var progress bytes.Buffer
	rep, err := Run(context.Background(), Config{Rig: f.rig(), Store: tune.NewStore(t.TempDir()), Rounds: rounds, MaxRounds: maxRounds,
		NoFixes: true, Passes: 1, Try: []tune.Item{{Kind: "rps", Target: "eth1/rx-0", Value: "1"}}, Progress: &progress})
	if err != nil || len(rep.Trials) != 1 {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	t.Logf("\n%s", progress.String())
	return rep, progress.String()
}

// TestAutoDriftCancels: the machine speeds up 3 % a round while a change
// that does nothing is tried. Rounds with the change measured after the
// rounds without it look 8 % better (the old way, baseline first, kept
// it); interleaved pairs, with and without in alternating order, see the
// drift cancel and do not keep it.
func TestAutoDriftCancels(t *testing.T) {
	f := newFakeRouter(t)
	f.received = func(n int, rps bool) float64 { return 100e3 * (1 + 0.03*float64(n)) }
	rep, _ := runTry(t, f, 3, 8)
	tr := rep.Trials[0]
	if tr.Outcome == Kept || !tr.Restored || len(f.rps()) != 0 {
		t.Errorf("a change that does nothing under drift: %s (%s), restored %v, rps %v", tr.Outcome, tr.Why, tr.Restored, f.rps())
	}
	if math.Abs(tr.Verdict.Gain) > 0.01 {
		t.Errorf("estimated gain %.4f under a steady drift, want about 0", tr.Verdict.Gain)
	}
}

// TestAutoAddsRoundsWhileUnclear is the demo's case on a busy machine: a
// change worth +27.5 % while the machine's speed wanders by a third from
// round to round (other work coming and going). Two rounds each way were
// "within the noise" (the old way rolled RPS back so); pairs of adjacent
// rounds cancel the wandering, and the trial adds pairs until the
// interval clears the threshold, then keeps it and says how many pairs
// it took.
func TestAutoAddsRoundsWhileUnclear(t *testing.T) {
	f := newFakeRouter(t)
	// A slow wander of the machine's speed, and a little noise of each round.
	noise := []float64{1.02, 0.97, 1.00, 1.03, 0.98, 0.99, 1.01, 0.96, 1.02, 1.00, 0.98}
	f.received = func(n int, rps bool) float64 {
		wander := 1 + 0.2*math.Sin(2*math.Pi*float64(n)/12)
		pps := 100e3 * wander * noise[(n-1)%len(noise)]
		if rps {
			pps *= 1.275
		}
		return pps
	}
	rep, progress := runTry(t, f, 2, 10)
	tr := rep.Trials[0]
	v := tr.Verdict
	if tr.Outcome != Kept || len(f.rps()) == 0 {
		t.Fatalf("+27.5 %% under a wandering load: %s (%s)", tr.Outcome, tr.Why)
	}
	if v.Pairs <= 2 || len(tr.Rounds) != v.Pairs || len(tr.Without) != v.Pairs {
		t.Errorf("decided after %d pairs (%d rounds with, %d without); want more than the first look's 2", v.Pairs, len(tr.Rounds), len(tr.Without))
	}
	if v.GainLow <= DefaultMinGain || v.GainLow > 0.275 || v.GainHigh < 0.275 || math.Abs(v.Gain-0.275) > 0.03 {
		t.Errorf("gain %.3f, interval %.3f to %.3f: want about +27.5 %% inside it, clear of 2 %%", v.Gain, v.GainLow, v.GainHigh)
	}
	if !strings.Contains(tr.Why, fmt.Sprintf("%d pairs)", v.Pairs)) || !strings.Contains(progress, "after 3 pairs:") {
		t.Errorf("the trial does not say the pairs it took: %q", tr.Why)
	}
	// The order of each pair alternates: with first in odd pairs.
	rs := tr.Rounds
	if len(rs) > 1 && rs[0].ReceivedPPS < tr.Without[0].ReceivedPPS {
		t.Errorf("pair 1: with %v, without %v", rs[0].ReceivedPPS, tr.Without[0].ReceivedPPS)
	}
}

// TestAutoUndecided: a small gain in large noise is still unclear at the
// bound on rounds: rolled back, read back, and said as undecided.
func TestAutoUndecided(t *testing.T) {
	f := newFakeRouter(t)
	noise := []float64{1.00, 0.80, 1.15, 0.90, 1.20, 0.85, 1.05, 0.95}
	f.received = func(n int, rps bool) float64 {
		pps := 100e3 * noise[(n-1)%len(noise)]
		if rps {
			pps *= 1.04
		}
		return pps
	}
	rep, _ := runTry(t, f, 3, 4)
	tr := rep.Trials[0]
	if tr.Outcome != Undecided || !tr.Restored || len(f.rps()) != 0 || tr.Verdict.Pairs != 4 || tr.Verdict.Decision != Unclear {
		t.Fatalf("small gain in large noise: %s after %d pairs (%s), restored %v", tr.Outcome, tr.Verdict.Pairs, tr.Why, tr.Restored)
	}
	if !strings.HasPrefix(tr.Why, "undecided after 4 pairs (8 rounds") || TrialOutcomeWord(tr.Outcome) != "undecided (rolled back)" {
		t.Errorf("why %q, outcome %q", tr.Why, TrialOutcomeWord(tr.Outcome))
	}
	if f.calls != 3+8 {
		t.Errorf("%d rounds measured, want 3 + 4 pairs", f.calls)
	}
}
