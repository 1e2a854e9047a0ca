package autotune

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name        string
		metric      Metric
		base, trial []float64
		keep        bool
		gain        float64 // expected, ±0.001
		why         string
	}{
		{"clear gain", MetricRxPPS, []float64{100, 101, 99}, []float64{120, 121, 119}, true, 0.20, "beyond the noise (2.0 %)"},
		{"two rounds each", MetricRxPPS, []float64{100, 102}, []float64{110, 112}, true, 0.0990, "beyond the noise"},
		{"within the baseline's spread", MetricRxPPS, []float64{100, 110, 90}, []float64{115, 116, 114}, false, 0.15, "within the noise (20.0 %)"},
		{"below the minimum gain", MetricRxPPS, []float64{100, 100, 100}, []float64{101.5, 101.5, 101.5}, false, 0.015, "within the noise (2.0 %)"},
		{"one lucky round", MetricRxPPS, []float64{100, 101, 99}, []float64{99.5, 130, 131}, false, 0.30, "was no better than the baseline's median"},
		{"worse", MetricRxPPS, []float64{100, 101, 99}, []float64{80, 81, 79}, false, -0.20, "worse by 20.0 %"},
		{"noisy trial", MetricRxBPS, []float64{100, 100, 100}, []float64{101, 140, 200}, false, 0.40, "within the noise (70.7 %)"},
		{"less loss", MetricLoss, []float64{0.30, 0.31, 0.29}, []float64{0.10, 0.11, 0.09}, true, 2.0 / 3, "beyond the noise (20.0 %)"},
		{"more loss", MetricLoss, []float64{0.10, 0.10}, []float64{0.30, 0.30}, false, -2, "worse by 200.0 %"},
		{"no loss to reduce", MetricLoss, []float64{0, 0}, []float64{0, 0}, false, 0, "nothing to improve"},
		{"loss from nothing", MetricLoss, []float64{0, 0}, []float64{0.01, 0.02}, false, 0, "worse: from 0 to 1.50 %"},
		{"less CPU", MetricCPUPerMpkt, []float64{2.0, 2.1, 2.05}, []float64{1.5, 1.52, 1.49}, true, 0.2683, "beyond the noise (4.9 %)"},
		{"nothing measured", MetricRxPPS, nil, []float64{1}, false, 0, "no rounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.metric, tc.base, tc.trial, DefaultMinGain)
			if v.Keep != tc.keep || math.Abs(v.Gain-tc.gain) > 0.001 || !strings.Contains(v.Why, tc.why) {
				t.Errorf("Judge(%v, %v) = keep %v gain %.4f why %q; want keep %v gain %.4f why ~%q",
					tc.base, tc.trial, v.Keep, v.Gain, v.Why, tc.keep, tc.gain, tc.why)
			}
			if tc.keep && v.Gain <= v.Noise {
				t.Errorf("kept with gain %.4f not above noise %.4f", v.Gain, v.Noise)
			}
		})
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
	// A stalled trial (median 0) is measured against the baseline: the
	// noise stays finite, so the verdict still encodes as JSON.
	v := Judge(MetricRxPPS, []float64{100, 100}, []float64{0, 0, 50}, 0.02)
	if math.IsInf(v.Noise, 0) || math.IsNaN(v.Noise) || v.Keep {
		t.Errorf("stalled trial: %+v", v)
	}
	if _, err := json.Marshal(v); err != nil {
		t.Errorf("verdict does not encode: %v", err)
	}
}

// TestJudgeGuardsThroughput: for the CPU goal a change that saves CPU per
// packet but loses throughput beyond the noise is not kept.
func TestJudgeGuardsThroughput(t *testing.T) {
	r := func(pps, cpu float64) Round {
		return Round{Proto: "udp", ReceivedPPS: pps, ReceivedPackets: uint64(pps), CPUPerMpkt: cpu, CPUSampled: true}
	}
	a := &auto{cfg: Config{Goal: GoalCPU, MinGain: DefaultMinGain}, metric: MetricCPUPerMpkt,
		rounds: []Round{r(100e3, 2.0), r(101e3, 2.02), r(99e3, 1.98)}}
	if v := a.judge([]Round{r(100e3, 1.5), r(100.5e3, 1.51), r(99.5e3, 1.49)}); !v.Keep {
		t.Errorf("same throughput, less CPU: not kept: %s", v.Why)
	}
	v := a.judge([]Round{r(70e3, 1.5), r(71e3, 1.51), r(69e3, 1.49)})
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
	for _, tr := range rep.Trials {
		got[tr.Item.Kind.String()+" "+tr.Item.Target] = tr.Outcome
		if tr.Outcome == RolledBack && !tr.Restored {
			t.Errorf("%s rolled back but not restored", tr.Item)
		}
		if len(tr.Rounds) != 3 {
			t.Errorf("%s: %d rounds, want 3", tr.Item, len(tr.Rounds))
		}
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
	if k := rep.Trials[0]; k.Verdict.Before != 100e3 || k.Verdict.After != 150e3 || math.Abs(k.Verdict.Change-0.5) > 1e-9 {
		t.Errorf("rps trial verdict: %+v", k.Verdict)
	}
	// A rolled-back trial is judged against the new baseline.
	if r := rep.Trials[1]; r.Verdict.Before != 150e3 {
		t.Errorf("rps-flow judged against %v, want the kept 150000", r.Verdict.Before)
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
	// Diagnosed twice (the second pass found RPS on and nothing new), 3 +
	// 3×3 rounds.
	if f.calls != 12 {
		t.Errorf("%d rounds measured, want 12", f.calls)
	}
	for _, w := range []string{"rps-off eth1 (critical)", "[1/3] rps eth1/rx-0 none → 1 (diagnose rps-off)", "kept: 100.0 kpps → 150.0 kpps"} {
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
	// Rounds: 1-2 baseline, 3-4 the rps trial, 5 the rps-flow trial.
	f.onMeasure = func(n int) {
		if n == 5 {
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
	a := &auto{cfg: Config{Goal: GoalLoss, MinGain: DefaultMinGain}, metric: MetricLoss, rounds: base}
	// Twice the load, more loss: not judged, said why.
	v := a.judge([]Round{r(200e3, 0.14), r(201e3, 0.145), r(199e3, 0.144)})
	if v.Keep || !strings.HasPrefix(v.Why, "not judged: offered loads differ") || v.Note == "" {
		t.Errorf("more loss at twice the load: keep %v, why %q, note %q", v.Keep, v.Why, v.Note)
	}
	// Half the load, less loss: not the change's either.
	v = a.judge([]Round{r(50e3, 0.001), r(50.5e3, 0.001), r(49.5e3, 0.001)})
	if v.Keep || !strings.HasPrefix(v.Why, "not judged") {
		t.Errorf("less loss at half the load kept: %q", v.Why)
	}
	// Twice the load and less loss: better whatever the load, noted.
	v = a.judge([]Round{r(200e3, 0.001), r(201e3, 0.001), r(199e3, 0.001)})
	if !v.Keep || !strings.Contains(v.Why, "offered loads differ") {
		t.Errorf("less loss at twice the load: keep %v, %q", v.Keep, v.Why)
	}
	// The same load within 5 %: judged as before, no note.
	v = a.judge([]Round{r(103e3, 0.001), r(102e3, 0.001), r(104e3, 0.001)})
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
