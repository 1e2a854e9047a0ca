package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"linerate/autotune"
	"linerate/diagnose"
	"linerate/history"
	"linerate/lab"
	reportpage "linerate/report/page"
	"linerate/tune"
)

// TestWriteTuning: the tune section of the report in the cases a real run
// can end in, made from the real report in testdata.
func TestWriteTuning(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Tuning)
		want   []string
		not    []string
	}{
		{"finished", func(*Tuning) {}, []string{
			"CHANGE             FROM → TO  TRIED FOR  WITHOUT     WITH        GAIN      INTERVAL  PAIRS  RESULT       WHY\n",
			"rps lan/rx-0       none → 1   seeds/002  98.8 kpps   211.2 kpps  +113.9 %  -         -      kept ",
			"rps-flow lan/rx-0  0 → 4096   rps-off    211.2 kpps  260.6 kpps  +23.4 %   -         -      rolled back  +23.4 % is within the noise (24.1 %); restored, read back\n",
			"before → after: 98.8 kpps → 211.2 kpps (+113.9 %), loss 0.00 % → 6.09 %",
			"the demo rolled back the kept change at the end: the router is as the demo found it, and its journal is empty and removed\n",
		}, []string{"interrupted"}},
		{"interrupted", func(tu *Tuning) {
			a := tu.Auto
			a.Interrupted = true
			a.Trials = a.Trials[:1]
			a.Trials[0].Outcome, a.Trials[0].Why, a.Trials[0].Rounds = autotune.Interrupted, "interrupted during the bench; rolled back", nil
			a.After, a.Records = a.Before, []string{}
			tu.Restored = []tune.RollbackResult{}
		}, []string{
			"rps lan/rx-0  none → 1   seeds/002  -        -     -     -         -      interrupted  interrupted during the bench; rolled back\n",
			"before → after: 98.8 kpps → 98.8 kpps (+0.0 %)",
			"interrupted: the change being tried was rolled back\n",
			"nothing was kept: the router is as the demo found it",
		}, nil},
		{"nothing tried", func(tu *Tuning) {
			tu.Auto.Trials, tu.Auto.Skipped, tu.Auto.After = nil, nil, tu.Auto.Before
			tu.Restored = nil
		}, []string{"nothing was tried: no candidate this system can take\n", "nothing was kept"}, []string{"CHANGE", "not tried", "the flood again"}},
		{"no baseline", func(tu *Tuning) {
			tu.Auto.Baseline, tu.Auto.Trials, tu.Restored = nil, nil, nil
		}, []string{"tune auto: stopped before its baseline was measured\n", "nothing was kept"}, []string{"before → after"}},
		{"not run", func(tu *Tuning) { tu.Auto = nil }, []string{"tune auto: did not run\n"}, []string{"CHANGE"}},
		{"journal kept", func(tu *Tuning) { tu.JournalRemoved = false }, []string{"the journal could not be emptied"}, []string{"is empty and removed"}},
		{"after", func(tu *Tuning) {
			tu.After = &Flood{SentPPS: 230000, ReceivedPPS: 211000, LossRatio: 0.0826}
		}, []string{
			"the flood again after tuning, with what was kept: lan→wan  211,000 pps received of 230,000 pps sent, 8.26 % lost; before tuning 97,536 pps (+116.3 %)\n",
		}, nil},
		{"two restored", func(tu *Tuning) {
			tu.Restored = append(tu.Restored, tune.RollbackResult{ID: "x", Restored: 1})
		}, []string{"the demo rolled back the 2 kept changes at the end"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, tu := testTuning(t)
			tc.change(tu)
			var b strings.Builder
			writeTuning(&b, tu, d)
			got := b.String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("has %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestDiagnosisLines(t *testing.T) {
	d, _ := testTuning(t)
	got := strings.Join(diagnosisLines(d), "\n")
	for _, w := range []string{
		"lan→wan  97,536 pps received of 97,536 pps sent, 0.00 % lost; 1 s of the router's counters",
		"CRITICAL rps-off: lan has one rx queue and RPS is off",
		"         fix: rps lan/rx-0 = 1  (steer receive processing to idle CPUs)",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("lacks %q:\n%s", w, got)
		}
	}
	d.Findings = []diagnose.Finding{}
	if got := diagnosisLines(d); len(got) != 2 || got[1] != "no findings: 14 rules found nothing to fix" {
		t.Errorf("no findings: %q", got)
	}
}

// TestReportJSON: --json carries the diagnosis and tune auto's whole
// report, and reads back.
func TestReportJSON(t *testing.T) {
	r := testReport(t, 1e9)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"experiments", "diagnosis", "tune"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("no %q in the JSON report", k)
		}
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	tu := back.Tuning
	if tu == nil || tu.Auto == nil || len(tu.Auto.Trials) != 2 || tu.Auto.Trials[0].Outcome != autotune.Kept ||
		tu.Seed != "rps:lan/rx-0=1" || len(tu.Restored) != 1 || !tu.JournalRemoved {
		t.Errorf("tune read back: %+v", tu)
	}
	if d := back.Diagnosis; d == nil || len(d.Findings) != 2 || d.Findings[1].Rule != "rps-off" || d.Samples != 1 {
		t.Errorf("diagnosis read back: %+v", d)
	}
	// Without the steps, the keys are left out.
	r.Diagnosis, r.Tuning = nil, nil
	b, _ = json.Marshal(r)
	if bytes.Contains(b, []byte(`"tune"`)) || bytes.Contains(b, []byte(`"diagnosis"`)) {
		t.Errorf("a report without the steps has their keys")
	}
}

func TestIndent(t *testing.T) {
	var b bytes.Buffer
	w := &indent{w: &b, prefix: "  "}
	for _, p := range []string{"one\ntw", "o\n", "", "three\nfour\n\nfive"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if got, want := b.String(), "  one\n  two\n  three\n  four\n  \n  five"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestAllowedCPUs(t *testing.T) {
	cpus, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) == 0 || len(cpus) > runtime.NumCPU() {
		t.Errorf("allowed CPUs %v on a machine of %d", cpus, runtime.NumCPU())
	}
	for i := 1; i < len(cpus); i++ {
		if cpus[i] <= cpus[i-1] {
			t.Errorf("CPUs not in order: %v", cpus)
		}
	}
}

// rpsCPUs reads rps_cpus of the router's lan queue as a process started in
// the router node sees it.
func rpsCPUs(s *Session) (string, error) {
	var out bytes.Buffer
	c := exec.Command("cat", "/sys/class/net/"+routerIn+"/queues/rx-0/rps_cpus")
	c.Stdout = &out
	if err := s.Lab.Run(routerNode, c); err != nil {
		return "", err
	}
	return strings.Trim(strings.TrimSpace(out.String()), "0,"), nil
}

// quickTune is a demo config that runs only the router's steps, fast.
func quickTune(t *testing.T, name string, dir lab.Dir, steps []Step, progress *syncBuffer) Config {
	return Config{Self: linerateBinary(t), Name: name, Dir: dir, Warmup: 300 * time.Millisecond,
		TuneRounds: 1, TuneDuration: 500 * time.Millisecond, StateDir: t.TempDir(), Progress: progress, Steps: steps}
}

// TestRunTune runs the diagnose and tune steps in a real router lab, then
// reads the router back: every change tune auto kept was rolled back, and
// the journal directory is gone.
func TestRunTune(t *testing.T) {
	name, dir := testLab(t)
	var before, after string
	steps := []Step{
		{Name: "look", Title: "read the router", Run: func(ctx context.Context, s *Session) (err error) {
			before, err = rpsCPUs(s)
			return err
		}},
		Diagnose(), Tune(),
		{Name: "look-again", Title: "read the router again", Run: func(ctx context.Context, s *Session) (err error) {
			after, err = rpsCPUs(s)
			return err
		}},
	}
	var progress syncBuffer
	cfg := quickTune(t, name, dir, steps, &progress)
	store := history.Open(t.TempDir())
	cfg.History = store
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	t.Logf("progress:\n%s", progress.String())
	if before != "" || after != before {
		t.Errorf("router lan rx-0 rps_cpus %q before, %q after the demo", before, after)
	}
	d := rep.Diagnosis
	if d == nil || d.ReceivedPPS <= 0 || d.Samples == 0 || d.Rules != len(diagnose.Rules()) || d.Findings == nil {
		t.Errorf("diagnosis: %+v", d)
	}
	tu := rep.Tuning
	if tu == nil || tu.Auto == nil {
		t.Fatalf("no tuning in the report:\n%s", progress.String())
	}
	a := tu.Auto
	if len(a.Baseline) != 1 || a.Before.ReceivedPPS <= 0 || a.Netns != lab.NetnsName(name, routerNode) {
		t.Errorf("tune auto baseline: %d rounds, %v pps, netns %q", len(a.Baseline), a.Before.ReceivedPPS, a.Netns)
	}
	if runtime.NumCPU() > 1 {
		if tu.Seed == "" || len(a.Trials) == 0 || a.Trials[0].Source != "--try" || a.Trials[0].Item.Kind != "rps" {
			t.Errorf("the seed's RPS change was not tried first: seed %q, trials %+v", tu.Seed, a.Trials)
		}
	}
	for _, tr := range a.Trials {
		if tr.Outcome != autotune.Kept && tr.Outcome != autotune.RolledBack && tr.Outcome != autotune.Undecided && tr.Outcome != autotune.Refused {
			t.Errorf("%s: outcome %s (%s)", tr.Item, tr.Outcome, tr.Why)
		}
	}
	if restored := len(tu.Restored); restored != len(a.Kept()) || !tu.JournalRemoved {
		t.Errorf("%d kept, %d restored, journal removed %v", len(a.Kept()), restored, tu.JournalRemoved)
	}
	if tu.After == nil || tu.After.ReceivedPPS <= 0 {
		t.Errorf("no flood after tuning: %+v", tu.After)
	}
	checkRuns(t, rep, store, RoleBefore, RoleTuneAuto, RoleAfter)
	checkPage(t, rep)
	emptyDir(t, cfg.StateDir)
	nothingLeft(t, name, dir)
	var text bytes.Buffer
	rep.Outcomes = []Outcome{{}} // WriteText wants an experiment
	if err := WriteText(&text, rep); err != nil || !strings.Contains(text.String(), "tune auto on router") {
		t.Errorf("text: %v\n%s", err, text.String())
	}
}

// TestRunTuneCancelled cancels the run (as Ctrl-C does) in the middle of
// tune auto's first trial: the trial is rolled back, the router reads as
// before, the journal directory and the lab are gone.
func TestRunTuneCancelled(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: no RPS change to try")
	}
	name, dir := testLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var progress syncBuffer
	var once sync.Once
	progress.onLine = func(l string) {
		if strings.HasPrefix(l, "  [1/") {
			// In the trial's first round: 300ms of warmup, then 2s.
			once.Do(func() { time.AfterFunc(800*time.Millisecond, cancel) })
		}
	}
	after := "not read"
	tuneStep := Tune()
	steps := []Step{{Name: "tune", Title: "tune, then read the router", Run: func(ctx context.Context, s *Session) error {
		err := tuneStep.Run(ctx, s)
		var rerr error
		if after, rerr = rpsCPUs(s); rerr != nil {
			t.Errorf("read the router after the tune step: %v", rerr)
		}
		return err
	}}}
	cfg := quickTune(t, name, dir, steps, &progress)
	cfg.TuneDuration = 2 * time.Second
	rep, err := Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "demo interrupted during tune") {
		t.Fatalf("cancelled run: %v\n%s", err, progress.String())
	}
	if after != "" {
		t.Errorf("router lan rx-0 rps_cpus %q after the interrupted tune step, want none", after)
	}
	a := rep.Tuning.Auto
	if a == nil || !a.Interrupted || len(a.Trials) != 1 || a.Trials[0].Outcome != autotune.Interrupted || !a.Trials[0].Restored {
		t.Errorf("tune auto report: %+v", a)
	}
	if !rep.Tuning.JournalRemoved {
		t.Error("the journal was not removed")
	}
	emptyDir(t, cfg.StateDir)
	nothingLeft(t, name, dir)
}

// emptyDir fails the test when dir holds anything.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("%s is left in %s", e.Name(), dir)
	}
}

// syncBuffer is a progress writer safe for the test to read while the demo
// writes, calling onLine with each line.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	part   string
	onLine func(string)
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(p)
	s.part += string(p)
	for {
		i := strings.IndexByte(s.part, '\n')
		if i < 0 {
			break
		}
		if s.onLine != nil {
			s.onLine(s.part[:i])
		}
		s.part = s.part[i+1:]
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestOneLine(t *testing.T) {
	inner := errors.New("rps lan/rx-0: write failed")
	err := oneLine{errors.Join(inner, errors.New("journal: disk full"))}
	if got := err.Error(); got != "rps lan/rx-0: write failed; journal: disk full" {
		t.Errorf("%q", got)
	}
	if !errors.Is(err, inner) {
		t.Error("the parts left the chain")
	}
}

// checkRuns checks the report lists the runs of roles, in that order, each
// saved in store under its id with its kind.
func checkRuns(t *testing.T, rep *Report, store *history.Store, roles ...string) {
	t.Helper()
	var got []string
	for _, r := range rep.Runs {
		got = append(got, r.Role)
		saved, err := store.Load(r.ID)
		if err != nil {
			t.Errorf("run %s (%s) is not in the history: %v", r.ID, r.Role, err)
			continue
		}
		if saved.Kind != r.Kind || saved.Headline != r.Headline || r.Headline == "" || len(saved.Command) < 3 {
			t.Errorf("run %s: saved %s %q %q, reported %s %q", r.ID, saved.Kind, saved.Headline, saved.Command, r.Kind, r.Headline)
		}
		want := map[string]string{RoleBefore: history.KindBench, RoleAfter: history.KindBench, RoleTuneAuto: history.KindTuneAuto}[r.Role]
		if r.Kind != want {
			t.Errorf("run %s (%s) of kind %s, want %s", r.ID, r.Role, r.Kind, want)
		}
	}
	if strings.Join(got, ",") != strings.Join(roles, ",") {
		t.Errorf("runs %v, want %v", got, roles)
	}
	if all, err := store.List(); err != nil || len(all) != len(roles) {
		t.Errorf("the history holds %d runs (%v), want %d", len(all), err, len(roles))
	}
}

// checkPage writes the report page and checks it is HTML with the floods
// before and after tuning side by side (their received pps as the page
// writes them) and tune auto's before and after.
func checkPage(t *testing.T, rep *Report) {
	t.Helper()
	var b bytes.Buffer
	if err := rep.WritePage(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.HasSuffix(strings.TrimSpace(page), "</html>") {
		t.Errorf("the page is not an HTML document: %.200q", page)
	}
	a := rep.Tuning.Auto
	bv, _ := a.Before.Value(a.Metric)
	av, _ := a.After.Value(a.Metric)
	wants := []string{
		a.Metric.Format(bv) + " → " + a.Metric.Format(av),
		"demo, before tuning: ", "demo, after tuning: ", "dut",
		reportpage.SI(rep.Diagnosis.ReceivedPPS) + " pps",
		reportpage.SI(rep.Tuning.After.ReceivedPPS) + " pps",
	}
	for _, w := range wants {
		if !strings.Contains(page, w) {
			t.Errorf("the page lacks %q", w)
		}
	}
}
