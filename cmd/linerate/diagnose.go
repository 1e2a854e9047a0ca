package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"linerate/box"
	"linerate/diagnose"
	"linerate/history"
	"linerate/internal/jsonbudget"
	"linerate/internal/usage"
	"linerate/report"
	"linerate/results"
	"linerate/sample"
	"linerate/source"
	"linerate/source/qstats"
	"linerate/source/tree"
)

// diagnoseOptions are the flags of diagnose.
type diagnoseOptions struct {
	root    string
	live    time.Duration
	json    bool
	rules   bool
	only    []string
	side    string
	history historyFlags
}

func newDiagnoseCmd() *cobra.Command {
	o := &diagnoseOptions{}
	c := &cobra.Command{
		Use:   "diagnose [RESULT.json | RUN-ID | --root CAPTURE | --live DURATION]",
		Short: "Name the bottleneck with evidence and say what would fix it",
		Long: `diagnose runs linerate's rules over the box's configuration and the counters
sampled while traffic ran: from a saved bench result (its samples), from a
capture taken with --samples, or by sampling this box for a while as your own
traffic runs. Each finding names the evidence (per CPU, queue, IRQ) and the
tuning that would fix it; feed those to 'linerate tune plan'.`,
		Example: `  linerate diagnose --live 10s              # sample this box while your traffic runs
  linerate diagnose --root routerpi.tar.gz   # a capture made with 'capture --samples 5'
  linerate diagnose result.json              # a saved 'bench --json' result
  linerate diagnose 20261125-1403            # a run of the history ('linerate runs'); a bench --from run: this host in the middle
  linerate diagnose --rules                  # list the rules
  linerate diagnose --live 5s --rule rps-off --json`,
		Args: argsWith(cobra.MaximumNArgs(1)),
		RunE: o.run,
	}
	f := c.Flags()
	f.StringVar(&o.root, "root", "", "diagnose a capture (directory or .tar.gz) instead of this box")
	f.DurationVar(&o.live, "live", 0, "sample this box for `DURATION` (e.g. 10s) while traffic runs")
	f.BoolVar(&o.json, "json", false, "print findings as JSON")
	f.BoolVar(&o.rules, "rules", false, "list the rules and exit")
	f.StringSliceVar(&o.only, "rule", nil, "run only these rules (repeatable, comma-separated)")
	f.StringVar(&o.side, "side", "server", "with a result: diagnose the `client` or the `server` end, or `dut`, the device in the middle (the default for a bench --from run)")
	o.history.add(f, true)
	return c
}

// diagnosis is the JSON form of diagnose's output.
type diagnosis struct {
	Source   string             `json:"source"`
	Seconds  float64            `json:"sampled_seconds"`
	Rules    int                `json:"rules"`
	Findings []diagnose.Finding `json:"findings"`
	// Origin is the machine the findings belong to: tune plan --findings
	// refuses them on another one.
	Origin diagnose.Origin `json:"origin"`
}

func (o *diagnoseOptions) run(cmd *cobra.Command, args []string) error {
	out := cmd.OutOrStdout()
	if o.rules {
		report.Rules(out, diagnose.Rules())
		return nil
	}
	modes := 0
	for _, on := range []bool{len(args) == 1, o.root != "", o.live != 0} {
		if on {
			modes++
		}
	}
	if modes != 1 {
		return usage.Errorf("diagnose needs exactly one of RESULT.json, --root CAPTURE or --live DURATION")
	}
	if o.live < 0 {
		return usage.Errorf("--live %s: the duration must be positive", o.live)
	}
	ev, name, err := o.evidence(cmd, args)
	if err != nil {
		return err
	}
	fs, err := diagnose.Run(ev, o.only...)
	if err != nil {
		return usage.Wrap(err)
	}
	var seconds float64
	for _, r := range ev.Rates {
		seconds += r.Seconds
	}
	nrules := len(diagnose.Rules())
	if len(o.only) > 0 {
		nrules = len(o.only)
	}
	if fs == nil {
		fs = []diagnose.Finding{}
	}
	d := diagnosis{Source: name, Seconds: seconds, Rules: nrules, Findings: fs, Origin: diagnose.OriginOf(ev.Box)}
	o.history.save(cmd, history.KindDiagnose, &d)
	if o.json {
		return report.JSON(out, d)
	}
	fmt.Fprintf(out, "diagnosis of %s\n", name)
	report.Findings(out, fs, nrules, seconds)
	return nil
}

// evidence builds the rules' input from the chosen source.
func (o *diagnoseOptions) evidence(cmd *cobra.Command, args []string) (*diagnose.Evidence, string, error) {
	ctx := cmd.Context()
	switch {
	case o.root != "":
		src, err := inspectSource(ctx, o.root, "")
		if err != nil {
			return nil, "", err
		}
		defer src.Close()
		b, rates, err := box.CollectSampled(ctx, src)
		switch {
		case b == nil:
			return nil, "", sourceErr(src, o.root, err)
		case err != nil:
			return nil, "", usage.Errorf("capture %s: %w", o.root, err)
		}
		return &diagnose.Evidence{Box: b, Rates: rates}, src.Name(), nil
	case o.live != 0:
		return liveEvidence(cmd, o.live)
	default:
		return o.resultEvidence(cmd, args[0])
	}
}

// liveEvidence samples this box once a second for d while the user's own
// traffic runs.
func liveEvidence(cmd *cobra.Command, d time.Duration) (*diagnose.Evidence, string, error) {
	src, b, err := liveBox(cmd)
	if err != nil {
		return nil, "", err
	}
	defer src.Close()
	fmt.Fprintf(cmd.ErrOrStderr(), "sampling this box for %s ...\n", d)
	loop := sample.Start(sample.Live(src.Proc(), src.Ethtool(), nil).WithQueues(qstats.ByName, nil), time.Second, nil)
	select {
	case <-time.After(d):
	case <-cmd.Context().Done():
	}
	rates, err := loop.Stop()
	if err != nil {
		return nil, "", err
	}
	return &diagnose.Evidence{Box: b, Rates: rates}, src.Name(), nil
}

// resultEvidence reads a saved `bench --json` result. The result holds the
// counters of both ends and, of their configuration, their CPUs and their
// interfaces on the test's path. When the end diagnosed ran here (this
// machine and network namespace, as the result records them), its
// configuration is read now; when it ran elsewhere, the findings rest on
// what the run saved of it; when the result does not say, this machine's
// is used, and the label says so.
func (o *diagnoseOptions) resultEvidence(cmd *cobra.Command, path string) (*diagnose.Evidence, string, error) {
	side := results.Side(o.side)
	if side != results.SideClient && side != results.SideServer && side != results.SideDUT {
		return nil, "", usage.Errorf("--side %q: want client, server or dut", side)
	}
	var r results.Result
	if _, err := os.Stat(path); err == nil || strings.ContainsRune(path, os.PathSeparator) {
		// A result someone sent: a regular file of at most 64 MiB (an
		// hour of samples is a few MiB), read without blocking
		// (docs/security.md).
		data, err := tree.ReadNamed(path, 64<<20)
		if err != nil {
			return nil, "", usage.Wrap(err)
		}
		if err := jsonbudget.Unmarshal(data, &r); err != nil {
			return nil, "", usage.Errorf("%s: not a bench result: %w", path, err)
		}
	} else {
		// A run of the history: a bench, or third-party flows whose
		// device in the middle (this host, side dut) is diagnosed.
		run, err := o.history.store(cmd).Load(path)
		if err != nil {
			return nil, "", usage.Wrap(err)
		}
		switch run.Kind {
		case history.KindBench:
			err = jsonbudget.Unmarshal(run.Result, &r)
		case history.KindFlows:
			var set results.FlowSet
			err = jsonbudget.Unmarshal(run.Result, &set)
			r = results.Result{Schema: set.Schema, Spec: set.Spec, Samples: set.Samples}
			r.Summary.Totals = set.Total
			if !cmd.Flags().Changed("side") {
				side = results.SideDUT
			}
		default:
			return nil, "", usage.Errorf("run %s: a %s run; diagnose reads bench and flows runs (and captures, with --root)", run.ID, run.Kind)
		}
		if err != nil {
			return nil, "", usage.Errorf("run %s: %w", run.ID, err)
		}
		path = "run " + run.ID
	}
	if r.Schema == 0 || len(r.Samples) == 0 {
		return nil, "", usage.Errorf("%s: a bench result with samples is needed (linerate bench ... --json)", path)
	}
	src, b, err := liveBox(cmd)
	if err != nil {
		return nil, "", err
	}
	here, hereOK := livePlace(src)
	src.Close()
	what := string(side) + " end"
	if side == results.SideDUT {
		what = "the device in the middle"
	}
	target := diagnose.EndTarget(&r, side)
	end, endOK := diagnose.EndPlace(&r, side, target)
	config := "configuration of this machine, read now: the run does not say where that end ran"
	switch {
	case side == results.SideDUT:
		config = "this host's configuration, read now"
	case endOK && hereOK && end == here:
		config = "its configuration read now: it ran on this machine, in this network namespace"
	case endOK:
		b = diagnose.SavedBox(&r, side, target)
		config = "it ran on another machine or in another network namespace: of its configuration only what the run saved " +
			"(its CPUs, its interfaces on the path); run diagnose there for its queues, IRQs and settings"
	}
	ev := diagnose.FromResult(&r, side, b)
	if len(ev.Rates) == 0 {
		return nil, "", usage.Errorf("%s: no %s samples in the result", path, side)
	}
	return ev, fmt.Sprintf("%s (%s; %s)", path, what, config), nil
}

// livePlace is where this process reads src: its machine's boot id and
// its network namespace; ok is false when either cannot be read.
func livePlace(src source.Source) (diagnose.Place, bool) {
	boot, err := src.Proc().BootID()
	if err != nil {
		return diagnose.Place{}, false
	}
	f, inode, err := source.OpenNetns(src)
	if err != nil {
		return diagnose.Place{}, false
	}
	f.Close()
	return diagnose.Place{Machine: boot, Netns: inode}, true
}

// liveBox opens this machine and collects its model; the caller closes src.
func liveBox(cmd *cobra.Command) (source.Source, *box.Box, error) {
	src, err := source.NewLive()
	if err != nil {
		return nil, nil, err
	}
	b, err := box.Collect(cmd.Context(), src)
	if err != nil {
		src.Close()
		return nil, nil, err
	}
	return src, b, nil
}
