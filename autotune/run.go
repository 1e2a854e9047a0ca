package autotune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"linerate/box"
	"linerate/diagnose"
	"linerate/internal/units"
	"linerate/internal/usage"
	"linerate/results"
	"linerate/tune"
	"linerate/wire"
)

// `tune auto` closes the loop: bench a baseline, diagnose the device
// under test with the counters sampled during it, and try each candidate
// change — diagnose's fixes and the user's --try items — one at a time,
// each inside a journalled transaction: apply it, bench again, keep it
// when the goal metric improved beyond the noise (it then stays applied
// and its rounds become the new baseline), roll it back otherwise.

// Defaults of an Config.
const (
	DefaultRounds = 3
	// DefaultMaxRounds bounds the pairs of rounds a trial adds while its
	// answer is unclear.
	DefaultMaxRounds = 8
	// minLook is the fewest pairs a trial is judged on: one pair has no
	// spread to judge by, and two give Student's t one degree of freedom,
	// whose interval is so wide (t is 12.7 at 95 %) that a look at two
	// pairs would only spend confidence.
	minLook       = 3
	DefaultPasses = 2
	// MinLook is minLook for callers that set MaxRounds.
	MinLook = minLook
	// autoLockWait bounds the wait for another linerate changing the
	// system, as tune apply waits.
	autoLockWait = 30 * time.Second
)

// Trial outcomes.
const (
	Kept       = "kept"
	RolledBack = "rolled-back"
	// Undecided: rolled back because its interval still straddled the
	// threshold when the bound on rounds came.
	Undecided   = "undecided"
	Refused     = "refused"     // the system refused the change; nothing is left changed
	Interrupted = "interrupted" // stopped by Ctrl-C; rolled back
	InPlace     = "in-place"    // a change kept earlier already made it
)

// Config says what `tune auto` does.
type Config struct {
	// Rig runs the traffic and holds the device under test.
	Rig *Rig
	// Store journals every trial; a kept change stays in it, as after
	// `tune apply`, for `tune rollback`.
	Store tune.Store
	Goal  Goal
	// Rounds is the number of bench rounds of the baseline, and the
	// pairs of rounds (one without the change, one with it) a trial
	// measures before it is first judged (DefaultRounds when 0; judged
	// on 3 pairs at the fewest).
	Rounds int
	// MaxRounds bounds the pairs of a trial: while its answer is unclear
	// it adds a pair and judges again, up to this many (DefaultMaxRounds,
	// or Rounds when that is more, when 0).
	MaxRounds int
	// MinGain is the smallest relative gain worth keeping
	// (DefaultMinGain when 0).
	MinGain float64
	// Try are explicit candidates, tried first, in order. Each must be
	// possible on the system (checked before the baseline runs).
	Try []tune.Item
	// NoFixes leaves diagnose's fixes out: only Try is tried.
	NoFixes bool
	// Passes bounds how often the loop diagnoses again after keeping a
	// change, to try the fixes of what the new baseline shows
	// (DefaultPasses when 0).
	Passes int
	// DryRun benches the baseline, diagnoses and lists the candidates
	// with their current and new values, changing nothing.
	DryRun bool
	// Progress gets one line per step (nil: discarded).
	Progress io.Writer
}

// Schema is the version of Report's JSON form.
const Schema = 1

// Report is what `tune auto` did and measured.
type Report struct {
	Schema int    `json:"schema"`
	Rig    string `json:"rig"`
	DUT    string `json:"dut"`
	// Netns is the namespace of the device under test, "" for the host.
	Netns  string `json:"netns,omitempty"`
	Goal   Goal   `json:"goal"`
	Metric Metric `json:"metric"`
	Rounds int    `json:"rounds"`
	// MaxRounds bounds each trial's pairs; Confidence is each look's
	// two-sided confidence (LookConfidence of the looks a trial may take).
	MaxRounds  int     `json:"max_rounds"`
	Confidence float64 `json:"confidence"`
	// MinGain is the smallest relative gain kept, 0.02 = 2 %.
	MinGain float64 `json:"min_gain"`
	DryRun  bool    `json:"dry_run,omitempty"`
	// Spec is the bench each round ran, FrameSize its UDP frames.
	Spec      *wire.Spec `json:"spec,omitempty"`
	FrameSize int        `json:"frame_size,omitempty"`
	Baseline  []Round    `json:"baseline"`
	// Diagnosed is set once diagnose ran (not with NoFixes). Findings are
	// its findings on the baseline (and on the baselines of later passes).
	Diagnosed  bool               `json:"diagnosed"`
	Findings   []diagnose.Finding `json:"findings"`
	Candidates []Candidate        `json:"candidates"`
	Skipped    []tune.Skip        `json:"skipped"`
	Trials     []Trial            `json:"trials"`
	// Before is the median of the first baseline's rounds, After of the
	// last (the rounds of the last change kept).
	Before Round `json:"before"`
	After  Round `json:"after"`
	// Records are the journal records of the kept changes: `tune
	// rollback` undoes them.
	Records     []string `json:"kept_records"`
	Notes       []string `json:"notes,omitempty"`
	Interrupted bool     `json:"interrupted"`
}

// Candidate is one change the loop tries.
type Candidate struct {
	Item tune.Item `json:"item"`
	// Source is "--try" or "diagnose RULE".
	Source string `json:"source"`
	// Changes are what it changes, from what, to what, when planned.
	Changes []tune.Change `json:"changes"`
}

// Trial is one candidate tried.
type Trial struct {
	Candidate
	// Rounds are the rounds with the change, Without those without it,
	// pair by pair (Rounds[i] and Without[i] are pair i, measured one
	// right after the other: with first in odd pairs, without first in
	// even ones).
	Rounds  []Round `json:"rounds"`
	Without []Round `json:"rounds_without"`
	Verdict Verdict `json:"verdict"`
	// Outcome is Kept, RolledBack, Undecided, Refused, Interrupted or
	// InPlace; Why says why.
	Outcome string `json:"outcome"`
	Why     string `json:"why"`
	// Record is the journal record of a kept change.
	Record string `json:"record,omitempty"`
	// Restored is set for a change put back: every value read back as it
	// was before the trial.
	Restored bool `json:"restored,omitempty"`
}

// AfterRounds are the rounds After is the median of: those with the last
// change kept, or the baseline's when nothing was kept.
func (r *Report) AfterRounds() []Round {
	for i := len(r.Trials) - 1; i >= 0; i-- {
		if t := r.Trials[i]; t.Outcome == Kept && len(t.Rounds) > 0 {
			return t.Rounds
		}
	}
	return r.Baseline
}

// Kept lists the trials whose change stays applied.
func (r *Report) Kept() []Trial {
	var out []Trial
	for _, t := range r.Trials {
		if t.Outcome == Kept {
			out = append(out, t)
		}
	}
	return out
}

// auto is one run of the loop.
type auto struct {
	cfg    Config
	rig    *Rig
	sys    tune.System
	rep    *Report
	metric Metric
	// base is the current baseline: its measurements and rounds.
	base   []Measurement
	rounds []Round
	// refusedIRQs are the IRQs whose affinity write the system refused in
	// a trial, with why: the next diagnosis knows they cannot move.
	refusedIRQs map[int]string
}

func (a *auto) logf(format string, args ...any) {
	fmt.Fprintf(a.cfg.Progress, format+"\n", args...)
}

// Run runs the loop and returns its report, also when it fails or is
// interrupted part way (then with what was kept so far). Every trial is a
// journalled transaction: a trial that does not help, fails, or is
// interrupted (ctx ends) is rolled back and read back; a process killed
// during a trial leaves a journal record that `tune rollback` restores.
// Interrupted, the error wraps ctx's.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	a := &auto{cfg: cfg, rig: cfg.Rig, sys: cfg.Rig.System}
	a.rep = &Report{Schema: Schema, Rig: a.rig.Name, DUT: a.rig.DUT, Netns: a.sys.Netns(), Goal: cfg.Goal,
		Rounds: cfg.Rounds, MaxRounds: cfg.MaxRounds, MinGain: cfg.MinGain, DryRun: cfg.DryRun,
		Baseline: []Round{}, Findings: []diagnose.Finding{}, Candidates: []Candidate{}, Skipped: []tune.Skip{},
		Trials: []Trial{}, Records: []string{}}
	err := a.run(ctx)
	if len(a.rounds) > 0 {
		a.rep.After = medianRound(a.rounds)
	}
	if err != nil && ctx.Err() != nil {
		a.rep.Interrupted = true
		if !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
	}
	return a.rep, err
}

func (c *Config) check() error {
	if c.Rig == nil || c.Rig.System == nil || c.Rig.Driver == nil || c.Rig.Inspect == nil {
		return errors.New("tune auto: the rig lacks a system, a driver of the traffic or a reader of the device under test")
	}
	if !c.DryRun && c.Store.Dir == "" {
		return errors.New("tune auto: no journal to record the trials in")
	}
	if c.Goal == "" {
		c.Goal = GoalThroughput
	}
	if _, err := ParseGoal(string(c.Goal)); err != nil {
		return err
	}
	if c.Rounds == 0 {
		c.Rounds = DefaultRounds
	}
	if c.Rounds < 1 || c.Rounds > 100 {
		return usage.Field("Rounds", "%d: want 1 to 100", c.Rounds)
	}
	if c.MaxRounds == 0 {
		c.MaxRounds = max(DefaultMaxRounds, c.Rounds, minLook)
	}
	if c.MaxRounds < max(c.Rounds, minLook) || c.MaxRounds > 100 {
		return usage.Field("MaxRounds", "%d: want %d to 100 (no fewer than Rounds, and a trial is judged on %d pairs at the fewest)",
			c.MaxRounds, max(c.Rounds, minLook), minLook)
	}
	if c.MinGain == 0 {
		c.MinGain = DefaultMinGain
	}
	if c.MinGain < 0 || c.MinGain >= 1 {
		return usage.Field("MinGain", "%g: want more than 0 and less than 1", c.MinGain)
	}
	if c.Passes == 0 {
		c.Passes = DefaultPasses
	}
	if c.Passes < 1 {
		return usage.Field("Passes", "%d: want 1 or more", c.Passes)
	}
	if c.NoFixes && len(c.Try) == 0 {
		return usage.Field("Try", "is empty and NoFixes is set: nothing to try")
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return nil
}

func (a *auto) run(ctx context.Context) error {
	cfg := a.cfg
	// Explicit candidates are checked before anything runs: a typo is bad
	// input, not a trial.
	if len(cfg.Try) > 0 {
		if _, err := tune.NewPlan(a.sys, cfg.Try); err != nil {
			return err
		}
	}
	if !cfg.DryRun {
		unlock, err := cfg.Store.Lock(autoLockWait)
		if err != nil {
			return err
		}
		defer unlock()
		if _, err := cfg.Store.DropStale(a.sys); err != nil {
			return err
		}
	}
	a.rep.Confidence = a.confidence()
	a.logf("tune auto: %s; tuning %s; goal %s; a baseline of %d round%s, then each change in pairs of rounds without and with it, judged from %d pairs on, %d at the most",
		a.rig.Name, a.rig.DUT, cfg.Goal, cfg.Rounds, plural(cfg.Rounds), a.firstLook(), cfg.MaxRounds)
	ms, rounds, err := a.bench(ctx, "baseline")
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	a.setBase(ms, rounds)
	a.rep.Baseline = rounds
	a.rep.Before = medianRound(rounds)
	if res := ms[0].Result; res != nil {
		sp := res.Spec
		a.rep.Spec, a.rep.FrameSize = &sp, res.FrameSize
	}
	a.metric = cfg.Goal.Metric(rounds[0].Proto)
	a.rep.Metric = a.metric
	if _, ok := rounds[0].Value(a.metric); !ok {
		why := "nothing was received"
		if ms[0].DUTErr != nil {
			why = "the device under test could not be sampled: " + ms[0].DUTErr.Error()
		}
		return fmt.Errorf("goal %s: the baseline has no %s: %s", cfg.Goal, a.metric, why)
	}
	a.notes()
	a.logf("baseline: %s", a.describeRounds(rounds))

	tried := map[string]bool{}
	for pass := 1; pass <= cfg.Passes; pass++ {
		var fixes []tune.Item
		var sources map[string]string
		if !cfg.NoFixes {
			var err error
			fixes, sources, err = a.diagnose(ctx, pass)
			if err != nil {
				return err
			}
		}
		var explicit []tune.Item
		if pass == 1 {
			explicit = cfg.Try
		}
		cands, err := a.candidates(explicit, fixes, sources, tried)
		if err != nil {
			return err
		}
		if len(cands) == 0 {
			if pass == 1 {
				a.logf("nothing to try")
			}
			break
		}
		a.rep.Candidates = append(a.rep.Candidates, cands...)
		if cfg.DryRun {
			a.logf("dry run: nothing applied")
			return nil
		}
		kept := false
		for i, c := range cands {
			a.logf("[%d/%d] %s (%s)", i+1, len(cands), describeChanges(c.Changes), c.Source)
			tr, err := a.trial(ctx, c)
			a.rep.Trials = append(a.rep.Trials, tr)
			if tr.Outcome == Kept {
				kept = true
				a.rep.Records = append(a.rep.Records, tr.Record)
			}
			if err != nil {
				return err
			}
		}
		if !kept {
			break
		}
	}
	a.logf("done: %s", a.summaryLine())
	return nil
}

func (a *auto) setBase(ms []Measurement, rounds []Round) { a.base, a.rounds = ms, rounds }

// bench runs the baseline's rounds. When ctx ends it returns ctx's
// error.
func (a *auto) bench(ctx context.Context, what string) ([]Measurement, []Round, error) {
	n := a.cfg.Rounds
	var ms []Measurement
	var rounds []Round
	for i := range n {
		m, r, err := a.measure(ctx, fmt.Sprintf("  %s round %d/%d", what, i+1, n))
		if err != nil {
			return ms, rounds, err
		}
		ms, rounds = append(ms, m), append(rounds, r)
	}
	return ms, rounds, nil
}

// measure runs one round and logs it after label. When ctx ends it
// returns ctx's error.
func (a *auto) measure(ctx context.Context, label string) (Measurement, Round, error) {
	m, err := a.rig.Measure(ctx)
	if ctx.Err() != nil {
		return m, Round{}, ctx.Err()
	}
	if err != nil {
		return m, Round{}, fmt.Errorf("%s: %w", strings.TrimSpace(label), err)
	}
	r, err := m.round()
	if err != nil {
		return m, r, fmt.Errorf("%s: %w", strings.TrimSpace(label), err)
	}
	a.logf("%s: %s", label, describeRound(r))
	return m, r, nil
}

// firstLook is the pairs a trial measures before it is first judged.
func (a *auto) firstLook() int { return max(a.cfg.Rounds, minLook) }

// confidence is each look's two-sided confidence: a trial looks after
// each pair from firstLook to MaxRounds.
func (a *auto) confidence() float64 {
	return LookConfidence(a.cfg.MaxRounds - a.firstLook() + 1)
}

// notes adds what the reader of the results should know about them.
func (a *auto) notes() {
	b := a.rep.Before
	if a.cfg.Goal == GoalThroughput && b.LimitedBy == results.LimitAskedRate {
		a.rep.Notes = append(a.rep.Notes, "the baseline met the asked rate: throughput cannot rise; --goal cpu or --goal loss can still show a gain")
	}
	if a.cfg.Goal == GoalCPU && a.rep.Spec != nil && a.rep.Spec.Rate.PPS == 0 && a.rep.Spec.Rate.BPS == 0 {
		a.rep.Notes = append(a.rep.Notes, "--goal cpu compares CPU per packet; with an unlimited --rate the load itself changes with each change: a fixed --rate compares like with like")
	}
	if a.sys.Netns() != "" {
		a.rep.Notes = append(a.rep.Notes, "CPU figures are the whole machine's: a network namespace shares the CPUs with the load generator and the far end")
	}
}

// evidence builds diagnose's input from the current baseline.
func (a *auto) evidence(b *box.Box) *diagnose.Evidence {
	ev := &diagnose.Evidence{Box: b}
	l := &diagnose.Load{Local: a.rig.Local}
	n := 0.0
	for _, m := range a.base {
		ev.Rates = append(ev.Rates, m.window()...)
		if m.Result == nil {
			continue
		}
		s := m.Result.Summary
		l.AskedPPS = m.Result.Spec.Rate.PPS
		l.SentPPS += s.SentPPS
		l.ReceivedPPS += s.ReceivedPPS
		l.LossRatio += s.LossRatio
		if s.LimitedBy == results.LimitSender {
			l.SenderLimited = true
		}
		if s.SenderThreadBusy != nil {
			l.SenderBusy = max(l.SenderBusy, *s.SenderThreadBusy*100)
		}
		n++
	}
	if n > 0 {
		l.SentPPS, l.ReceivedPPS, l.LossRatio = l.SentPPS/n, l.ReceivedPPS/n, l.LossRatio/n
		ev.Load = l
	}
	return ev
}

// diagnose reads the device under test and runs the rules over the
// current baseline; it returns the fixes as items, with the rule each
// came from.
func (a *auto) diagnose(ctx context.Context, pass int) ([]tune.Item, map[string]string, error) {
	b, err := a.rig.Inspect(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", a.rig.DUT, err)
	}
	for n, why := range a.refusedIRQs {
		if q, ok := b.IRQ(n); ok {
			if q.Unsupported == nil {
				q.Unsupported = map[string]string{}
			}
			q.Unsupported["smp_affinity_write"] = why
		}
	}
	ev := a.evidence(b)
	if a.rig.Path != nil {
		if p, err := a.rig.Path(ctx); err != nil {
			a.logf("  no path probe: %v", err)
		} else {
			ev.Path = p
		}
	}
	fs, err := diagnose.Run(ev)
	if err != nil {
		return nil, nil, err
	}
	a.rep.Diagnosed = true
	seen := map[string]bool{}
	for _, f := range a.rep.Findings {
		seen[f.Rule+" "+f.Subject] = true
	}
	var names []string
	for _, f := range fs {
		names = append(names, fmt.Sprintf("%s %s (%s)", f.Rule, f.Subject, f.Severity))
		if !seen[f.Rule+" "+f.Subject] {
			a.rep.Findings = append(a.rep.Findings, f)
		}
	}
	what := "diagnosis"
	if pass > 1 {
		what = fmt.Sprintf("diagnosis, pass %d", pass)
	}
	if len(fs) == 0 {
		a.logf("%s: no findings", what)
	} else {
		a.logf("%s: %s", what, strings.Join(names, "; "))
	}
	sources := map[string]string{}
	for _, f := range fs {
		for _, fx := range f.Fixes {
			k := fx.Kind.String() + ":" + fx.Target
			if _, ok := sources[k]; !ok {
				sources[k] = "diagnose " + f.Rule
			}
		}
	}
	return tune.ItemsFromFindings(fs), sources, nil
}

// candidates plans each item on its own: explicit ones must be possible
// (they were checked before the baseline); fixes this system cannot
// take, advice (boot items, bench advice), changes already in place and
// targets already tried are skipped, with the reason.
func (a *auto) candidates(explicit, fixes []tune.Item, sources map[string]string, tried map[string]bool) ([]Candidate, error) {
	var out []Candidate
	have := map[string]bool{}
	add := func(it tune.Item, src string, strict bool) error {
		k := itemKey(it)
		if have[k] {
			return nil // an explicit item wins over a fix for the same thing
		}
		have[k] = true
		if tried[k] {
			a.skip(it, "already tried")
			return nil
		}
		var p *tune.Plan
		var err error
		if strict {
			p, err = tune.NewPlan(a.sys, []tune.Item{it})
		} else {
			p, err = tune.PlanFixes(a.sys, []tune.Item{it})
		}
		if err != nil {
			return err
		}
		for _, s := range p.Skipped {
			a.skip(s.Item, s.Reason)
		}
		if len(p.Items) == 0 {
			return nil
		}
		c := Candidate{Item: it, Source: src}
		var manual []string
		same := 0
		for _, ch := range p.Changes() {
			switch {
			case ch.Manual:
				manual = append(manual, ch.Advice)
			case ch.Unchanged:
				same++
			default:
				c.Changes = append(c.Changes, ch)
			}
		}
		switch {
		case len(manual) > 0:
			a.skip(it, "advice, never applied: "+strings.Join(manual, "; "))
		case len(c.Changes) == 0:
			a.skip(it, "already in place")
		default:
			tried[k] = true
			out = append(out, c)
		}
		return nil
	}
	for _, it := range explicit {
		if err := add(it, "--try", true); err != nil {
			return nil, err
		}
	}
	for _, it := range fixes {
		src := sources[itemKey(it)]
		if src == "" {
			src = "diagnose"
		}
		if err := add(it, src, false); err != nil {
			return nil, err
		}
	}
	for _, c := range out {
		a.logf("candidate: %s (%s)", describeChanges(c.Changes), c.Source)
	}
	return out, nil
}

func (a *auto) skip(it tune.Item, why string) {
	a.rep.Skipped = append(a.rep.Skipped, tune.Skip{Item: it, Reason: why})
	a.logf("skipped: %s: %s", it, why)
}

// trial measures one candidate in interleaved pairs of rounds, one with
// the change applied (B) and one without it (A), in the order B A, A B,
// B A, ...: each pair's rounds are adjacent, so what drifts slower than a
// pair cancels in its ratio, and the order alternates, so a drift within
// a pair cancels over two pairs (and the change is applied and rolled
// back every second round only). From the first look on (Config.Rounds
// pairs) it judges after each pair, and stops once the interval is clear
// of the threshold either way, or at MaxRounds pairs (undecided). The
// change ends applied when kept, rolled back otherwise. Every application
// is a journalled transaction. The error is for what must stop the loop:
// ctx ended, a restore failed, the journal could not be written.
func (a *auto) trial(ctx context.Context, c Candidate) (Trial, error) {
	tr := Trial{Candidate: c, Rounds: []Round{}, Without: []Round{}}
	tx, err := a.apply(ctx, &tr, true)
	if tx == nil || err != nil {
		return tr, err
	}
	var ms []Measurement
	var pairs []roundPair
	var v Verdict
	for n := 1; n <= a.cfg.MaxRounds; n++ {
		var p roundPair
		var m Measurement
		for _, with := range []bool{n%2 == 1, n%2 == 0} {
			switch {
			case with && tx == nil:
				if tx, err = a.apply(ctx, &tr, false); tx == nil || err != nil {
					return tr, err
				}
			case !with && tx != nil:
				if err := a.rollback(ctx, tx, &tr); err != nil {
					return tr, err
				}
				tx = nil
			}
			what := "without"
			if with {
				what = "with"
			}
			mm, r, err := a.measure(ctx, fmt.Sprintf("  pair %d, %s it", n, what))
			if ctx.Err() != nil || err != nil {
				return tr, a.stopTrial(ctx, tx, &tr, err)
			}
			if with {
				p.with, m = r, mm
				tr.Rounds = append(tr.Rounds, r)
			} else {
				p.without = r
				tr.Without = append(tr.Without, r)
			}
		}
		pairs, ms = append(pairs, p), append(ms, m)
		if n < a.firstLook() {
			continue
		}
		v = a.judge(pairs)
		a.logf("  after %d pairs: %s", n, v.Why)
		if v.Decision != Unclear {
			break
		}
	}
	tr.Verdict = v
	switch {
	case v.Keep:
		if tx == nil {
			if tx, err = a.apply(ctx, &tr, false); tx == nil || err != nil {
				return tr, err
			}
		}
		tr.Outcome, tr.Why, tr.Record = Kept, v.Why, tx.Record().ID
		a.setBase(ms, tr.Rounds)
		a.logf("  kept: %s → %s, %s", a.metric.Format(v.Before), a.metric.Format(v.After), tr.Why)
		return tr, nil
	case v.Decision == Unclear:
		tr.Outcome = Undecided
		tr.Why = fmt.Sprintf("undecided after %d pairs (%d rounds, the most --max-rounds allows): %s", v.Pairs, 2*v.Pairs, v.Why)
	default:
		tr.Outcome, tr.Why = RolledBack, v.Why
	}
	if tx != nil {
		if err := a.rollback(ctx, tx, &tr); err != nil {
			return tr, err
		}
	} else {
		tr.Restored = a.holdsBefore(tr.Changes)
	}
	a.logf("  %s: %s → %s, %s", TrialOutcomeWord(tr.Outcome), a.metric.Format(v.Before), a.metric.Format(v.After), tr.Why)
	return tr, nil
}

// apply plans the trial's change again (a change kept before may have
// moved the values) and applies it in a transaction of its own. A nil
// transaction and a nil error mean the trial is over (refused, already
// in place), with tr saying why. The first application fills tr.Changes.
func (a *auto) apply(ctx context.Context, tr *Trial, first bool) (*tune.Transaction, error) {
	again := ""
	if !first {
		again = " when applied again"
	}
	p, err := tune.NewPlan(a.sys, []tune.Item{tr.Item})
	if err != nil {
		tr.Outcome, tr.Why = Refused, err.Error()+again
		a.logf("  refused: %s", tr.Why)
		return nil, nil
	}
	tx, err := a.cfg.Store.Begin(a.sys, p)
	if err != nil {
		return nil, err
	}
	if first {
		tr.Changes = nil
		for _, e := range tx.Record().Entries {
			tr.Changes = append(tr.Changes, e.Change)
		}
	}
	if len(tx.Record().Entries) == 0 {
		tr.Outcome, tr.Why = InPlace, "already in place"+again
		a.logf("  %s", tr.Why)
		return nil, nil
	}
	if err := tx.Apply(ctx); err != nil {
		var ae *tune.ApplyError
		if errors.As(err, &ae) && len(ae.Unrestored) > 0 {
			tr.Outcome, tr.Why = Refused, err.Error()
			return nil, err
		}
		tr.Restored = a.holdsBefore(tr.Changes)
		if ctx.Err() != nil {
			tr.Outcome, tr.Why = Interrupted, "interrupted while applying; restored"
			return nil, ctx.Err()
		}
		tr.Outcome, tr.Why = Refused, "the system refused it"+again+": "+err.Error()
		a.logf("  %s", tr.Why)
		if tr.Item.Kind == diagnose.FixIRQAffinity {
			a.refuseIRQs(tr.Item.Target, tr.Changes, err)
		}
		return nil, a.mustHold(*tr)
	}
	return tx, nil
}

// stopTrial ends a trial whose round failed or was interrupted: the
// change, if applied, is rolled back.
func (a *auto) stopTrial(ctx context.Context, tx *tune.Transaction, tr *Trial, err error) error {
	if ctx.Err() != nil {
		tr.Outcome, tr.Why = Interrupted, "interrupted during the bench; rolled back"
	} else {
		tr.Outcome, tr.Why = RolledBack, "a round failed: "+err.Error()
	}
	if tx != nil {
		if rerr := a.rollback(ctx, tx, tr); rerr != nil {
			return rerr
		}
	} else {
		tr.Restored = a.holdsBefore(tr.Changes)
	}
	a.logf("  %s: %s", TrialOutcomeWord(tr.Outcome), tr.Why)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

// roundPair is one pair of a trial's rounds, without and with the change.
type roundPair struct{ without, with Round }

// metricPairs are the pairs' figures of a metric (pairs where either
// round lacks it are left out).
func metricPairs(ps []roundPair, m Metric) []Pair {
	out := make([]Pair, 0, len(ps))
	for _, p := range ps {
		b, ok1 := p.without.Value(m)
		f, ok2 := p.with.Value(m)
		if ok1 && ok2 {
			out = append(out, Pair{Before: b, After: f})
		}
	}
	return out
}

// judge judges a trial's pairs on the goal; for the loss and CPU goals a
// change must not cost throughput either (its interval clear below
// zero).
func (a *auto) judge(pairs []roundPair) Verdict {
	conf := a.confidence()
	v := Judge(a.metric, metricPairs(pairs, a.metric), a.cfg.MinGain, conf)
	if a.metric == MetricLoss {
		without, with := make([]Round, len(pairs)), make([]Round, len(pairs))
		for i, p := range pairs {
			without[i], with[i] = p.without, p.with
		}
		atLoad(&v, without, with)
	}
	if !v.Keep || a.cfg.Goal == GoalThroughput {
		return v
	}
	tm := GoalThroughput.Metric(pairs[0].with.Proto)
	t := Judge(tm, metricPairs(pairs, tm), a.cfg.MinGain, conf)
	if t.GainHigh < 0 {
		v.Keep, v.Decision = false, NotBetter
		v.Why = fmt.Sprintf("%s, but throughput fell %s %s", v.Why, pctAbs(-t.Gain), t.intervalText())
	}
	return v
}

// atLoad qualifies a loss verdict by the load each set of rounds offered
// (their median sent rate). Loss is judged at equal offered load: when
// the loads are more than results.LoadsApart apart, a loss that moved
// with the load (more lost at more sent, less at less) says nothing of
// the change, which is then not kept; one that moved against it (less
// lost at more sent) stands. Either way the verdict notes the loads.
func atLoad(v *Verdict, base, trial []Round) {
	sent := func(rs []Round) float64 {
		xs := make([]float64, 0, len(rs))
		for _, r := range rs {
			xs = append(xs, r.SentPPS)
		}
		return median(xs)
	}
	if len(base) == 0 || len(trial) == 0 {
		return
	}
	b, t := sent(base), sent(trial)
	if !results.LoadsDiffer(b, t) {
		return
	}
	v.Note = fmt.Sprintf("offered loads differ: the baseline sent %s, the trial %s; loss is judged at equal offered load: a fixed --rate below both compares like with like",
		units.Rate(b, "pps"), units.Rate(t, "pps"))
	if (t > b) == (v.Gain < 0) && v.Gain != 0 {
		v.Keep, v.Decision = false, NotBetter
		v.Why = "not judged: " + v.Note
		return
	}
	v.Why += "; " + v.Note
}

// rollback restores a trial's transaction (also when ctx has ended:
// Ctrl-C must leave nothing of the trial behind) and checks every value
// reads back as before.
func (a *auto) rollback(ctx context.Context, tx *tune.Transaction, tr *Trial) error {
	if err := tx.Rollback(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("roll back %s: %w; the journal keeps it for 'linerate tune rollback'", tr.Item, err)
	}
	tr.Restored = a.holdsBefore(tr.Changes)
	return a.mustHold(*tr)
}

func (a *auto) mustHold(tr Trial) error {
	if !tr.Restored {
		return fmt.Errorf("%s: after restoring, %s does not hold its old value", tr.Item, a.sys.Name())
	}
	return nil
}

// holdsBefore reports whether the system holds every change's old value.
func (a *auto) holdsBefore(cs []tune.Change) bool {
	for _, c := range cs {
		if c.Restore == nil {
			return false
		}
		acts, err := tune.Build(a.sys, *c.Restore)
		if err != nil || len(acts) == 0 {
			return false
		}
		for _, act := range acts {
			if !act.Describe().Unchanged {
				return false
			}
		}
	}
	return true
}

func values(rs []Round, metric Metric) []float64 {
	out := make([]float64, 0, len(rs))
	for _, r := range rs {
		if v, ok := r.Value(metric); ok {
			out = append(out, v)
		}
	}
	return out
}

// medianRound is the median of each figure of a set of rounds.
func medianRound(rs []Round) Round {
	if len(rs) == 0 {
		return Round{}
	}
	m := Round{Proto: rs[0].Proto, LimitedBy: rs[len(rs)/2].LimitedBy, CPUSampled: true}
	f := func(get func(Round) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		return median(v)
	}
	m.Seconds = f(func(r Round) float64 { return r.Seconds })
	m.SentPPS = f(func(r Round) float64 { return r.SentPPS })
	m.ReceivedPPS = f(func(r Round) float64 { return r.ReceivedPPS })
	m.ReceivedBPS = f(func(r Round) float64 { return r.ReceivedBPS })
	m.ReceivedPackets = uint64(f(func(r Round) float64 { return float64(r.ReceivedPackets) }))
	m.LossRatio = f(func(r Round) float64 { return r.LossRatio })
	m.CPUSeconds = f(func(r Round) float64 { return r.CPUSeconds })
	m.CPUPerMpkt = f(func(r Round) float64 { return r.CPUPerMpkt })
	for _, r := range rs {
		m.CPUSampled = m.CPUSampled && r.CPUSampled
	}
	return m
}

// describeRound is one round in a progress line.
func describeRound(r Round) string {
	s := fmt.Sprintf("%s received (%s sent), loss %s", units.Rate(r.ReceivedPPS, "pps"), units.Rate(r.SentPPS, "pps"), MetricLoss.Format(r.LossRatio))
	if r.Proto == wire.TCP {
		s = units.Rate(r.ReceivedBPS, "bit/s") + " received"
	}
	if r.CPUSampled && r.ReceivedPackets > 0 {
		s += fmt.Sprintf(", CPU %s", MetricCPUPerMpkt.Format(r.CPUPerMpkt))
	}
	return s
}

// describeRounds is the median and spread of a baseline.
func (a *auto) describeRounds(rs []Round) string {
	v := values(rs, a.metric)
	if len(v) == 0 {
		return "no " + a.metric.String()
	}
	return fmt.Sprintf("median %s over %d round%s (spread %s)", a.metric.Format(median(v)), len(v), plural(len(v)), pctAbs(spread(v, median(v))))
}

func (a *auto) summaryLine() string {
	kept := a.rep.Kept()
	b, _ := a.rep.Before.Value(a.metric)
	af := b
	if len(a.rounds) > 0 {
		af = median(values(a.rounds, a.metric))
	}
	s := fmt.Sprintf("%s %s → %s", a.metric, a.metric.Format(b), a.metric.Format(af))
	if b != 0 {
		s += fmt.Sprintf(" (%s)", signedPct((af-b)/b))
	}
	return fmt.Sprintf("%s; %d of %d changes kept", s, len(kept), len(a.rep.Trials))
}

// describeChanges is "rps lan/rx-0 none → 1, ..." for a progress line.
func describeChanges(cs []tune.Change) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s %s %s → %s", c.Kind, c.Target, c.From, c.To))
	}
	return strings.Join(parts, ", ")
}

// TrialOutcomeWord words a trial's outcome ("kept", "rolled back",
// "undecided (rolled back)", ...).
func TrialOutcomeWord(o string) string {
	switch o {
	case RolledBack:
		return "rolled back"
	case Undecided:
		return "undecided (rolled back)"
	}
	return o
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// itemKey names what an item changes (its kind and target), so a fix and
// a --try for the same thing count once.
func itemKey(it tune.Item) string { return it.Kind.String() + ":" + it.Target }

// refuseIRQs remembers the interrupts an irq-affinity change was refused
// for, so that later passes do not propose them again: the number a
// target names, or, for a target named by what it serves (eth0/rx-0), the
// numbers its changes resolved it to.
func (a *auto) refuseIRQs(target string, changes []tune.Change, err error) {
	if a.refusedIRQs == nil {
		a.refusedIRQs = map[int]string{}
	}
	if n, perr := strconv.Atoi(target); perr == nil {
		a.refusedIRQs[n] = err.Error()
	}
	for _, c := range changes {
		if c.IRQ > 0 {
			a.refusedIRQs[c.IRQ] = err.Error()
		}
	}
}
