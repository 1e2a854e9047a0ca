//go:build !small

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"linerate/ceiling"
	"linerate/demo"
	"linerate/internal/usage"
	"linerate/lab"
	"linerate/report"
)

// demoOptions are the flags of demo.
type demoOptions struct {
	duration time.Duration
	rounds   int
	roundDur time.Duration
	quick    bool
	json     bool
	keep     bool
	vm       bool
	speed    string
	name     string
	report   string
	history  historyFlags
}

// demoLong is the --help text of demo.
var demoLong = `demo is the guided run of 'make demo': the story of the seeds' RouterPi, a
small NAT router whose CPU0 did all the receive work. On any Linux machine,
as root, it:

  1. builds a router lab (lan — router — wan, network namespaces; the router
     forwards and NATs out of wan) whose links are shaped like Ethernet
     ports of --speed, with an agent ('linerate serve', as 'lab up --serve'
     starts them) in every node, all pinned to one CPU (serve --cpus), so
     that the work of the traffic through the router piles up there;
  2. has the router run the seeds' experiments as third-party flows: it
     asks lan's agent to send to wan's agent through it ('linerate bench
     --from lan --to wan', run in the router) and samples its own counters:
     TCP in both directions at once, TCP with 88-byte segments, 64-byte
     UDP packets;
  3. prints each figure beside the ceiling of a --speed port for the same
     frames, and the CPU use per core while it ran;
  4. diagnoses the router from its own counters during a flood of 64-byte
     UDP packets from lan's agent to wan's (the run "before"), and prints
     the findings with their fixes;
  5. runs 'tune auto --from lan --to wan' as the router: a baseline of
     --rounds rounds of that flood, then each change — RPS on the router's
     lan queue (the seeds' fix) and the fixes of the findings — measured
     in pairs of adjacent rounds with and without it (each application a
     journalled transaction), kept when the interval of its gain clears
     2 %, rolled back when it falls short, undecided (rolled back) when the
     pairs still cannot tell after 8; prints the before/after table; then
     floods once more with what was kept (the run "after");
  6. rolls back every change it kept, in a journal of its own under $TMPDIR
     that it removes, and removes the lab and its agents, also on Ctrl-C or
     failure, and checks nothing is left;
  7. saves each experiment, the floods before and after and tune auto's
     report to the run history (unless --no-save; 'linerate runs' lists
     them) and ends by writing one HTML page — the floods before and after
     tuning side by side, then tune auto's trials — to --report, whose path
     is its last line.

The lab's nodes share this machine's CPUs: the CPU figures are the sender,
the router and the receiver together. With --speed 1G the links are capped
so that full-size frames pass at a gigabit port's rate (` + lab.FormatRate(demo.ShapeRate(demo.DefaultSpeed)) + `bit/s to
tbf, which does not count preamble, FCS and gap); small frames can pass a
little faster than on a real port. --speed 0 leaves the links uncapped.

It takes about a minute (5 s measured per experiment, 2 s per tuning
round); --quick about half that. Ctrl-C stops it at any point: the change
being tried is rolled back, the kept ones too, the lab removed (exit 130);
the page is written of what was measured.

With --vm the router is a QEMU guest (lab up --vm router) whose lan and wan
NICs are e1000e, driven by the kernel's own e1000e: the receive work lands
on the guest CPU its interrupts are on, and diagnose names those interrupts
by their driver's names. Diagnose and tune auto then run inside the guest,
as a user runs them on a real router. Under TCG (no KVM) the guest's CPUs
are emulated: its rates are the emulator's, which the report and the page
say.`

// demoExample are the --help examples of demo.
const demoExample = `  sudo linerate demo
  sudo linerate demo --quick               # 1 s per experiment and per tuning round, for CI
  sudo linerate demo --rounds 3 --round-duration 5s   # tune with more, longer rounds
  sudo linerate demo --duration 10s --json > demo.json
  sudo linerate demo --speed 2.5G --keep   # leave the lab up to explore
  sudo linerate demo --vm --quick          # the router a QEMU guest with e1000e NICs
  sudo linerate demo -o /tmp/demo.html --no-save   # the page elsewhere, nothing in the history`

func newDemoCmd() *cobra.Command {
	o := &demoOptions{}
	c := &cobra.Command{
		Use:     "demo",
		Short:   "Tell the RouterPi story: a NAT router lab measures, diagnoses and tunes itself through agents, then writes a report",
		Long:    demoLong,
		Example: demoExample,
		Args:    argsWith(cobra.NoArgs),
		RunE:    o.run,
	}
	f := c.Flags()
	f.DurationVar(&o.duration, "duration", demo.DefaultDuration, "measured time of each experiment (after a 1 s warmup)")
	f.IntVar(&o.rounds, "rounds", demo.DefaultTuneRounds, fmt.Sprintf("rounds of tune auto's baseline, and the pairs of rounds each change is measured in before it is first judged (1 to %d; 3 pairs at the fewest)", demo.MaxTuneRounds))
	f.DurationVar(&o.roundDur, "round-duration", demo.DefaultTuneDuration, "measured time of each round of the diagnosis flood and of tune auto (after the warmup)")
	f.BoolVar(&o.quick, "quick", false, fmt.Sprintf("measure %s per experiment and %s per tuning round after a %s warmup (a smoke test)",
		demo.QuickDuration, demo.QuickTuneDuration, demo.QuickWarmup))
	f.BoolVar(&o.json, "json", false, "print the report as JSON on stdout (each bench result, the diagnosis, tune auto's report); progress goes to stderr")
	f.BoolVar(&o.keep, "keep", false, "leave the lab up at the end (remove it with linerate lab down NAME); the tuning is rolled back all the same")
	f.BoolVar(&o.vm, "vm", false, "make the router a QEMU guest with e1000e NICs (lab up --vm router): the same story on a real driver, whose IRQs have names; diagnose and tune auto run inside the guest (docs/lab.md)")
	f.StringVar(&o.speed, "speed", "1G", "Ethernet port speed the lab's links stand for and the ceilings are for (100M, 1G, 2.5G; 0: uncapped)")
	f.StringVar(&o.name, "name", demo.DefaultName, "name of the lab to build; no lab of that name may exist")
	f.StringVarP(&o.report, "report", "o", demoReport, "write the report page (HTML: before and after tuning side by side, tune auto's trials) to `FILE`")
	o.history.add(f, true)
	return c
}

// config turns the flags into a demo.Config.
func (o *demoOptions) config(cmd *cobra.Command) (demo.Config, error) {
	c := demo.Config{Name: o.name, Duration: o.duration, Keep: o.keep, VM: o.vm,
		TuneRounds: o.rounds, TuneDuration: o.roundDur}
	if o.duration <= 0 {
		return c, usage.Errorf("--duration %s: want 100ms to %s per experiment", o.duration, demo.MaxDuration)
	}
	if o.roundDur <= 0 {
		return c, usage.Errorf("--round-duration %s: want 100ms to %s per round", o.roundDur, demo.MaxDuration)
	}
	if o.rounds < 1 || o.rounds > demo.MaxTuneRounds {
		return c, usage.Errorf("--rounds %d: want 1 to %d", o.rounds, demo.MaxTuneRounds)
	}
	if o.quick {
		for _, f := range []string{"duration", "round-duration"} {
			if cmd.Flags().Changed(f) {
				return c, usage.Errorf("--quick and --%s: give one", f)
			}
		}
		c.Duration, c.Warmup, c.Idle = demo.QuickDuration, demo.QuickWarmup, demo.QuickIdle
		c.TuneDuration, c.TuneMaxRounds = demo.QuickTuneDuration, demo.QuickTuneMaxRounds
	}
	if s := strings.TrimSpace(o.speed); s != "0" {
		v, err := ceiling.ParseSpeed(s)
		if err != nil {
			return c, usage.Errorf("--speed: %w", err)
		}
		c.Speed = v
	}
	return c, nil
}

// demoReport is where the demo writes its report page by default: here.
const demoReport = "linerate-demo-report.html"

func (o *demoOptions) run(cmd *cobra.Command, _ []string) error {
	cfg, err := o.config(cmd)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the linerate binary to run in the lab: %w", err)
	}
	cfg.Self = self
	if strings.TrimSpace(o.report) == "" || o.report == "-" {
		return usage.Errorf("--report %q: give a file to write the page to", o.report)
	}
	if st, err := os.Stat(filepath.Dir(o.report)); err != nil || !st.IsDir() {
		return usage.Errorf("--report %s: no directory %s to write the page in", o.report, filepath.Dir(o.report))
	}
	if !o.history.noSave {
		cfg.History = o.history.store(cmd)
	}
	stdout := cmd.OutOrStdout()
	cfg.Progress = stdout
	if o.json {
		cfg.Progress = cmd.ErrOrStderr()
	}
	if err := cfg.Check(); err != nil {
		return err
	}
	if err := lab.RequireRoot("linerate demo"); err != nil {
		return err
	}
	if cfg.History != nil {
		fmt.Fprintf(cfg.Progress, "runs are saved to the history in %s ('linerate runs' lists them; --no-save keeps none)\n", cfg.History.Dir)
	}
	rep, runErr := demo.Run(cmd.Context(), cfg)
	var page error
	if rep != nil && rep.HasPage() {
		page = writeOutput(stdout, "--report", o.report, rep.WritePage)
		if page == nil {
			rep.Page = o.report
		}
	}
	if rep != nil && (len(rep.Outcomes) > 0 || runErr == nil) {
		if err := o.write(stdout, rep); err != nil && runErr == nil {
			runErr = err
		}
	}
	switch {
	case page != nil && runErr == nil:
		runErr = fmt.Errorf("the report page: %w", page)
	case page == nil && rep != nil && rep.Page != "" && !o.json:
		// The last line: where the page is.
		fmt.Fprintf(stdout, "\nthe report, one HTML page (before and after tuning side by side, tune auto's trials):\n%s\n", rep.Page)
	case page == nil && rep != nil && rep.Page != "":
		fmt.Fprintf(cmd.ErrOrStderr(), "the report page: %s\n", rep.Page)
	}
	return runErr
}

func (o *demoOptions) write(w io.Writer, rep *demo.Report) error {
	if o.json {
		return report.JSON(w, rep)
	}
	return demo.WriteText(w, rep)
}
