package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"linerate/autotune"
	"linerate/autotune/drive"
	"linerate/diagnose"
	"linerate/history"
	"linerate/internal/units"
	"linerate/results"
	"linerate/source/cpuset"
	"linerate/traffic"
	"linerate/tune"
	"linerate/wire"
)

// The demo ends by closing the loop on the router, as issue 5 asks, the
// way a real router would run it on itself (issue 8): the router asks
// lan's agent to flood wan's agent with 64-byte UDP packets through it,
// samples its own counters meanwhile and diagnoses itself from them (the
// "before" run), runs `tune auto --from lan --to wan` on itself (a
// baseline, then each candidate change in a journalled transaction of its
// own, kept when it beats the noise, rolled back otherwise), floods once
// more with what was kept (the "after" run), and finally rolls back what
// was kept, in a journal of its own that it removes: the demo leaves the
// machine as it found it.

// Defaults of the tune step.
const (
	DefaultTuneRounds = 2
	// DefaultTuneMaxRounds bounds the pairs of rounds tune auto adds to a
	// trial while its answer is unclear.
	DefaultTuneMaxRounds = 8
	DefaultTuneDuration  = 2 * time.Second
	QuickTuneDuration    = time.Second
	// QuickTuneMaxRounds bounds the pairs of a trial under --quick: the
	// fewest tune auto judges on, so that a smoke test stays short.
	QuickTuneMaxRounds = autotune.MinLook
	// MaxTuneRounds bounds Config.TuneRounds: each round of each change
	// costs its warmup and duration.
	MaxTuneRounds = 10
)

// minFlood is the shortest measured time of the floods before and after
// tuning: the router samples itself once a second from when it asks for
// the flood, so a window of one second may hold no whole second of load;
// two do (the diagnose rules judge whole seconds).
const minFlood = 2 * time.Second

// floodFrame is the Ethernet frame size of the flood, FCS included: the
// seeds' smallest packets (seeds/004 counts packets per second in them).
const floodFrame = 64

// seedSource names the change the demo asks tune auto to try first: what
// the RouterPi's author did (seeds/002) once CPU0 did all the receive work
// at 100 % while the other cores idled.
const seedSource = "seeds/002"

// routerIn is the router's interface toward the client node: a lab names
// each interface after the node at its other end (docs/lab.md).
const routerIn = clientNode

// Diagnosis is what the diagnose step found on the router.
type Diagnosis struct {
	// DUT names the router and its namespace.
	DUT string `json:"dut"`
	// FrameSize, Duration and Warmup describe the flood; CPU is the CPU its
	// sender and receiver were pinned to.
	FrameSize int     `json:"frame_size"`
	Duration  float64 `json:"duration"`
	Warmup    float64 `json:"warmup"`
	CPU       int     `json:"cpu"`
	// What the flood measured at the far end.
	SentPPS     float64 `json:"sent_pps"`
	ReceivedPPS float64 `json:"received_pps"`
	LossRatio   float64 `json:"loss_ratio"`
	// Samples is how many one-second samples of the router's counters
	// the rules looked at; Rules how many rules ran.
	Samples  int                `json:"samples"`
	Rules    int                `json:"rules"`
	Findings []diagnose.Finding `json:"findings"`
}

// Flood is what one flood through the router measured at the far end.
type Flood struct {
	SentPPS     float64 `json:"sent_pps"`
	ReceivedPPS float64 `json:"received_pps"`
	LossRatio   float64 `json:"loss_ratio"`
}

// Tuning is what the tune step did: tune auto's report, and the undoing of
// what it kept.
type Tuning struct {
	Auto *autotune.Report `json:"auto"`
	// Seed is the change tried first on the seeds' say-so ("" on a machine
	// with one CPU, where RPS has nowhere to steer to).
	Seed string `json:"seed_try,omitempty"`
	// Restored are the journal records of the kept changes the demo rolled
	// back at the end, newest first.
	Restored []tune.RollbackResult `json:"restored"`
	// After is one more flood once tune auto is done, with the changes it
	// kept still applied (nil when it did not finish).
	After *Flood `json:"after,omitempty"`
	// JournalRemoved says the demo's private journal was empty at the end
	// and was removed.
	JournalRemoved bool `json:"journal_removed"`
}

// Diagnose is the step that floods the router with 64-byte UDP packets
// from lan to wan for one round, samples the router's own counters (its
// namespace's /proc and ethtool) over the measured window, and runs the
// diagnose rules over them and the router's configuration.
func Diagnose() Step {
	return Step{
		Name:  "diagnose",
		Title: fmt.Sprintf("Diagnose the router during a flood of %d-byte UDP packets", floodFrame),
		Run: func(ctx context.Context, s *Session) error {
			if err := s.rigUp(); err != nil {
				return err
			}
			c := &s.Config
			s.Logf("  %s", s.floodLine())
			m, err := s.flood.Measure(ctx, s.rig.Sample)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				return fmt.Errorf("flood %s → %s: %w", clientNode, serverNode, err)
			}
			if m.Result == nil {
				return fmt.Errorf("flood %s → %s: no result", clientNode, serverNode)
			}
			if m.DUTErr != nil {
				// The rules that need counters then stay quiet; the rest
				// still read the router's configuration.
				s.Logf("  could not sample %s: %v", s.rig.DUT, m.DUTErr)
			}
			ev, err := s.rig.Evidence(ctx, m)
			if err != nil {
				return err
			}
			fs, err := diagnose.Run(ev)
			if err != nil {
				return err
			}
			sum := m.Result.Summary
			d := &Diagnosis{DUT: s.rig.DUT, FrameSize: floodFrame, Duration: s.floodDuration().Seconds(),
				Warmup: c.Warmup.Seconds(), CPU: s.floodCPU,
				SentPPS: sum.SentPPS, ReceivedPPS: sum.ReceivedPPS, LossRatio: sum.LossRatio,
				Samples: len(ev.Rates), Rules: len(diagnose.Rules()), Findings: fs}
			if d.Findings == nil {
				d.Findings = []diagnose.Finding{}
			}
			s.Report.Diagnosis = d
			for _, l := range diagnosisLines(d) {
				s.Logf("  %s", l)
			}
			s.save(RoleBefore, history.KindBench, s.floodCommand(), floodResult(m))
			return nil
		},
	}
}

// Tune is the step that runs tune auto on the router: the seed's RPS
// change first (when there is a CPU to steer to), then the fixes of what
// diagnose finds on its baseline, each judged on packets per second
// received in wan. At the end, also when interrupted or failing, it rolls
// back every change it kept and removes its journal.
func Tune() Step {
	return Step{
		Name:  "tune",
		Title: "Tune the router: try each change, keep what measurably helps, then undo it all",
		Run: func(ctx context.Context, s *Session) (err error) {
			if err := s.rigUp(); err != nil {
				return err
			}
			c := &s.Config
			dir, err := os.MkdirTemp(c.StateDir, "linerate-demo-tune-")
			if err != nil {
				return fmt.Errorf("make the demo's journal directory: %w", err)
			}
			store := tune.NewStore(dir)
			t := &Tuning{Restored: []tune.RollbackResult{}}
			s.Report.Tuning = t
			s.Logf("  journal: %s (this run's own, removed at the end)", store.Dir)
			defer func() {
				err = joinErrors([]error{err, s.undoTuning(ctx, store, dir, t)})
			}()

			var try []tune.Item
			if len(s.spareCPUs) > 0 {
				it := tune.Item{Kind: "rps", Target: routerIn + "/rx-0", Value: cpuset.FormatList(s.spareCPUs)}
				// tune auto refuses to start over a --try item the system
				// cannot take; the demo goes on with diagnose's fixes.
				if _, perr := tune.NewPlan(s.rig.System, []tune.Item{it}); perr != nil {
					s.Logf("  not tried (%s): %s: %v", seedSource, it, perr)
				} else {
					try = append(try, it)
					t.Seed = it.String()
					s.Logf("  tried first (%s, --try): %s — the RouterPi's fix: steer the receive work off the busy CPU", seedSource, it)
				}
			}
			rep, err := autotune.Run(ctx, autotune.Config{Rig: s.rig, Store: store, Goal: autotune.GoalThroughput,
				Rounds: c.TuneRounds, MaxRounds: s.maxRounds(), Try: try, Progress: &indent{w: c.Progress, prefix: "  "}})
			t.Auto = rep
			if rep != nil && len(rep.Baseline) > 0 {
				s.save(RoleTuneAuto, history.KindTuneAuto, s.tuneCommand(try), rep)
			}
			if err != nil {
				return oneLine{err}
			}
			return s.floodAfter(ctx, t)
		},
	}
}

// floodAfter floods once more with the changes tune auto kept still
// applied: the "after" run beside the diagnose step's "before".
func (s *Session) floodAfter(ctx context.Context, t *Tuning) error {
	kept := "nothing kept: as before"
	if n := len(t.Auto.Kept()); n > 0 {
		kept = fmt.Sprintf("with the %d change%s kept", n, plural(n))
	}
	s.Logf("  after tuning (%s): the same flood once more, %s measured", kept, s.floodDuration())
	m, err := s.flood.Measure(ctx, s.rig.Sample)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err == nil && m.Result == nil {
		err = errors.New("no result")
	}
	if err != nil {
		return fmt.Errorf("flood %s → %s after tuning: %w", clientNode, serverNode, err)
	}
	sum := m.Result.Summary
	t.After = &Flood{SentPPS: sum.SentPPS, ReceivedPPS: sum.ReceivedPPS, LossRatio: sum.LossRatio}
	s.Logf("  %s", afterLine(s.Report.Diagnosis, t.After))
	s.save(RoleAfter, history.KindBench, s.floodCommand(), floodResult(m))
	return nil
}

// afterLine sets the flood after tuning beside the one before it.
func afterLine(before *Diagnosis, after *Flood) string {
	l := fmt.Sprintf("%s→%s  %s received of %s sent, %s lost", clientNode, serverNode, pps(after.ReceivedPPS),
		pps(after.SentPPS), units.Percent(after.LossRatio, 2))
	if before != nil && before.ReceivedPPS > 0 {
		l += fmt.Sprintf("; before tuning %s (%s)", pps(before.ReceivedPPS),
			units.SignedPercent((after.ReceivedPPS-before.ReceivedPPS)/before.ReceivedPPS, 1))
	}
	return l
}

// floodResult is a flood through the router as the history keeps it: lan's
// flow as its agent measured it (its own and wan's samples), with the
// router's samples added (side "dut", host router), as the report page
// shows a flow of `bench --from`. It is kept as a bench run rather than a
// set of flows so that its headline — before or after tuning — stays on
// the page.
func floodResult(m autotune.Measurement) *results.Result {
	res := *m.Result
	res.Samples = slices.Clone(res.Samples)
	for _, r := range m.DUT {
		res.Samples = append(res.Samples, results.Sample{Side: "dut", Target: -1, Host: routerNode, Rates: r})
	}
	return &res
}

// floodCommand is the flood as a command the router could run itself.
func (s *Session) floodCommand() []string {
	c := &s.Config
	return []string{"linerate", "bench", "udp", "--size", strconv.Itoa(floodFrame), "--from", clientNode, "--to", serverNode,
		"--duration", s.floodDuration().String(), "--warmup", c.Warmup.String()}
}

// floodDuration is the measured time of the floods before and after
// tuning: a tuning round's, and at least minFlood.
func (s *Session) floodDuration() time.Duration { return max(s.Config.TuneDuration, minFlood) }

// maxRounds bounds the pairs of each trial of the tune step.
func (s *Session) maxRounds() int {
	if s.Config.TuneMaxRounds > 0 {
		return max(s.Config.TuneMaxRounds, s.Config.TuneRounds, autotune.MinLook)
	}
	if s.Config.VM {
		// Under a guest's emulated CPUs the rounds spread so widely that
		// more pairs rarely settle a change, and each costs seconds of
		// TCG: tune auto judges on the rounds asked for (and on as few
		// pairs as it judges on).
		return max(s.Config.TuneRounds, autotune.MinLook)
	}
	return max(DefaultTuneMaxRounds, s.Config.TuneRounds)
}

// tuneCommand is the tune step as a command the router could run itself.
func (s *Session) tuneCommand(try []tune.Item) []string {
	c := &s.Config
	cmd := []string{"linerate", "tune", "auto", "--from", clientNode, "--to", serverNode, "--size", strconv.Itoa(floodFrame),
		"--duration", c.TuneDuration.String(), "--warmup", c.Warmup.String(), "--rounds", strconv.Itoa(c.TuneRounds), "--max-rounds", strconv.Itoa(s.maxRounds())}
	for _, it := range try {
		cmd = append(cmd, "--try", it.String())
	}
	return cmd
}

// undoTuning rolls back what tune auto kept (whatever ctx says: Ctrl-C
// must not leave a change behind), checks the journal is empty and
// removes it.
func (s *Session) undoTuning(ctx context.Context, store tune.Store, dir string, t *Tuning) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	res, rerr := store.RollbackAll(ctx, tune.Open, false, false)
	if rerr != nil {
		rerr = oneLine{rerr}
	}
	t.Restored = append(t.Restored, res...)
	for _, r := range res {
		switch {
		case r.Err != nil:
		case r.Dropped != "":
			s.Logf("  undo: %s: %s", r.ID, r.Dropped)
		default:
			s.Logf("  undo: rolled back kept change %s (%d value%s restored)", r.ID, r.Restored, plural(r.Restored))
		}
	}
	left, lerr := store.List()
	switch {
	case rerr != nil || lerr != nil || len(left) > 0:
		err := joinErrors([]error{rerr, lerr})
		if err == nil {
			err = fmt.Errorf("%d record(s) left", len(left))
		}
		if s.Config.Keep {
			return fmt.Errorf("undo the tuning: %w; the journal stays in %s: linerate tune rollback --state-dir %s", err, dir, dir)
		}
		// The lab's namespaces, and the changes in them, are about to go.
		os.RemoveAll(dir)
		return fmt.Errorf("undo the tuning: %w (the lab's removal takes the changes with it)", err)
	case len(res) == 0:
		s.Logf("  undo: nothing was kept, nothing to roll back")
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the demo's journal: %w", err)
	}
	t.JournalRemoved = true
	s.Logf("  the router is as the demo found it; the journal was empty and is removed")
	return nil
}

// undoTimeout bounds rolling back the kept changes: a few file writes.
const undoTimeout = 30 * time.Second

// rigUp makes the rig the diagnose and tune steps measure with, once: the
// router is the device under test and runs the test, as `tune auto --from
// lan --to wan` run on it does (autotune.Relay). Its control connection to
// lan's agent is made inside the router's namespace, the agent sends
// 64-byte UDP packets to wan's agent through the router, and the router's
// namespace is read, sampled and changed. The agents run pinned to one
// CPU, which then also does the router's forwarding (a veth delivers on
// the CPU that sends), as CPU0 did all the work on the seeds' RouterPi;
// RPS on the router's lan queue can move that work to the other CPUs.
func (s *Session) rigUp() (err error) {
	if s.rig != nil {
		return nil
	}
	l, c := s.Lab, &s.Config
	rig, err := drive.LabRig(l, drive.LabNodes{Client: clientNode, Server: serverNode, DUT: routerNode}, traffic.Config{
		FrameSize: floodFrame,
		Spec: wire.Spec{Proto: "udp", Direction: wire.Forward, Duration: wire.Seconds(c.TuneDuration),
			Warmup: wire.Seconds(c.Warmup), Streams: 1, Ports: 1, Threads: 1}})
	if err != nil {
		return err
	}
	relay, ok := rig.Driver.(*drive.Relay)
	if !ok {
		rig.Close()
		return fmt.Errorf("lab %s: no agents in %s and %s for the router to run the test with", c.Name, clientNode, serverNode)
	}
	flood := *relay
	flood.Config.Spec.Duration = wire.Seconds(s.floodDuration())
	s.flood, s.rig = &flood, rig
	return nil
}

// floodLine says what the flood is, for the progress lines.
func (s *Session) floodLine() string {
	c := &s.Config
	return fmt.Sprintf("flood: %s asks %s's agent to send udp to %s's agent through it in %d-byte frames, as fast as one sender goes, "+
		"%s measured after %s of warmup; the agents on CPU%d, so that one CPU does all the work as on the seeds' RouterPi; %s's own counters sampled each second",
		routerNode, clientNode, serverNode, floodFrame, s.floodDuration(), c.Warmup, s.floodCPU, routerNode)
}

// allowedCPUs are the CPUs this process may run on, in order.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read this process's CPU affinity: %w", err)
	}
	var cpus []int
	// CPU_SETSIZE is 1024 (sched.h); IsSet is false past the set's end.
	for i, n := 0, set.Count(); i < 1024 && len(cpus) < n; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) == 0 {
		return nil, errors.New("this process may run on no CPU")
	}
	return cpus, nil
}

// closeRig frees the rig: its handles on the router's namespace.
func (s *Session) closeRig() error {
	if s.rig == nil {
		return nil
	}
	err := s.rig.Close()
	s.rig = nil
	if err != nil {
		return fmt.Errorf("close the flood's rig: %w", err)
	}
	return nil
}

// oneLine keeps an error on one line, and in the chain: errors.Join, which
// a failed restore gives, puts its parts on several.
type oneLine struct{ err error }

func (e oneLine) Error() string { return strings.ReplaceAll(e.err.Error(), "\n", "; ") }
func (e oneLine) Unwrap() error { return e.err }

// indent is an io.Writer that starts every line with prefix.
type indent struct {
	w      io.Writer
	prefix string
	mid    bool // in the middle of a line
}

func (p *indent) Write(b []byte) (int, error) {
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if !p.mid {
			out.WriteString(p.prefix)
		}
		out.Write(line)
		p.mid = line[len(line)-1] != '\n'
	}
	if _, err := p.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// diagnosisLines are the diagnose step's findings, briefly: the flood's
// figures, then per finding its severity, rule and summary, and its fixes.
func diagnosisLines(d *Diagnosis) []string {
	lines := []string{fmt.Sprintf("%s→%s  %s received of %s sent, %s lost; %d s of the %s's counters",
		clientNode, serverNode, pps(d.ReceivedPPS), pps(d.SentPPS), units.Percent(d.LossRatio, 2), d.Samples, routerNode)}
	if len(d.Findings) == 0 {
		return append(lines, fmt.Sprintf("no findings: %d rules found nothing to fix", d.Rules))
	}
	for _, f := range d.Findings {
		lines = append(lines, fmt.Sprintf("%-8s %s: %s", strings.ToUpper(string(f.Severity)), f.Rule, f.Summary))
		for _, fx := range f.Fixes {
			lines = append(lines, "         fix: "+fx.String())
		}
	}
	return lines
}
