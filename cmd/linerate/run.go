//go:build !small

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"linerate/box"
	"linerate/ceiling"
	"linerate/fleet"
	"linerate/internal/usage"
	"linerate/plan"
	"linerate/remote"
	"linerate/report"
	"linerate/source"
	"linerate/tune"
)

// runOptions are the flags and argument of `linerate run`.
type runOptions struct {
	file      string
	check     bool
	reach     bool
	sshConfig string
	token     string
	tokenFile string
	// tokenGiven: --token was on the command line; warnings about the
	// secret go to stderr before anything runs.
	tokenGiven bool
	warnings   []string
	json       bool
	csv        bool
	history    historyFlags
	// promTargets is --prometheus-targets FILE.
	promTargets string
	// stateDir holds the journal of a matrix's tune plan.
	stateDir string
}

// runLong is the --help text of run.
const runLong = `run takes a plan: a YAML file naming the hosts of a test and how each is
reached (an agent already running, HOST[:PORT], or ssh://[user@]host[:port]
where linerate starts one over ssh, or many agents found through DNS:
dns://NAME[:PORT], every A and AAAA record, or dns+srv://_SERVICE._tcp.DOMAIN,
every SRV target), the flows between them (from, to,
address, proto, size, streams, rate, direction ...), the hosts to sample,
duration, warmup and rounds, and the ceiling to hold the total against (a
host's PCIe bus, given as a link or read from a capture). The format is in
docs/plans.md; examples/ holds the seeds' three setups.

--check reads the plan, reports the first mistake as file:line (exit 2),
looks up the hosts given through DNS (a name that gives nothing is one line
naming it, exit 1) and prints the plan as it will run: what each such name
gave (HOST-1, HOST-2 ...), each host and how it is reached, each
flow with the frame it sends, what each port and the whole plan can carry
at line rate, and what the ceiling leaves of it. Nothing is reached or
sent, unless --reach: then each host is reached as the run will reach it
(a TCP connection to its agent, or ssh starting 'linerate serve --stdio'
there, copied first with copy:) and says hello. A host that cannot be
reached is one line naming it and the cause (ssh's exit code and last line
of stderr), exit 1.

Without --check, run runs the plan: each round, every flow's sender agent
runs its flow to the receiver's agent (third-party flows, as bench --from),
all flows at once, while the hosts under sample: record their counters and
this host samples itself. It prints per round each flow, each port against
what it was expected to carry, the total against the plan's ceiling and
each host's CPUs; --json prints it all, and the run history keeps it. A
flow's receiver must be an agent the sender can reach (at: HOST[:PORT]);
senders and sampled hosts may be reached over ssh.

A plan with a matrix: runs cells instead: its flows alone, in every
combination of k, or in listed sets, across sizes, MSS and rates, each
cell for the matrix's rounds; it prints a table of the cells (the mean
total received over the rounds ± a Student-t 95 % interval) and a heat
map, a row per set and a column per size, MSS or rate. --csv prints one
row per cell, round and flow. With tune: FILE in the matrix (a 'tune plan
-o' file), every cell runs without it, then again with it applied as one
journalled transaction here (or in the namespace the file names), rolled
back at the end, on failure and on Ctrl-C; the output pairs each cell's
two halves.`

// runExample are the --help examples of run.
const runExample = `  linerate run plan.yaml                                # run it: every flow at once, every round
  linerate run plan.yaml --json > result.json
  linerate run examples/cm4-matrix.yaml --csv > cells.csv   # a matrix: each port alone, in pairs ..., all at once
  linerate run ab.yaml --state-dir /var/lib/linerate   # a matrix with tune: rps.json, without it and with it
  linerate lab exec s32 box -- linerate run examples/lab-star32.yaml   # 32 peers of 'lab up star --ports 32 --serve'
  linerate run examples/cm4-fan-in.yaml --check        # five hosts into a CM4's four-port NIC
  linerate run examples/routerpi-bidir.yaml --check     # a NAT router, both directions at once
  linerate run examples/apu4-mars-venus.yaml --check    # mars to four addresses of venus
  linerate run plan.yaml --check --reach                # and reach every host: ssh, keys, linerate there
  linerate run deploy/kubernetes/plan.yaml --check      # hosts: {nodes: dns://linerate-agents}: what the name gives
  linerate run plan.yaml --check --prometheus-targets /etc/prometheus/linerate.json   # the agents as scrape targets`

func newRunCmd() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:     "run PLAN.yaml [--check]",
		Short:   "Run a plan: flows between many hosts at once, the hosts to sample, the total against the ceiling",
		Long:    runLong,
		Example: runExample,
		Args:    argsWith(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file = args[0]
			o.tokenGiven = cmd.Flags().Changed("token")
			if err := o.validate(); err != nil {
				return err
			}
			warn(cmd.ErrOrStderr(), o.warnings)
			return o.run(cmd)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.check, "check", false, "read and check the plan and print it as it will run, without reaching any host")
	f.BoolVar(&o.reach, "reach", false, "with --check: also reach every host (its agent, or over ssh) and exchange hello with it")
	f.StringVar(&o.sshConfig, "ssh-config", "", "ssh client config file for ssh:// hosts (ssh -F; default: ssh's own, ~/.ssh/config)")
	f.StringVar(&o.token, "token", "", "shared secret the agents require; visible in ps, prefer --token-file or $LINERATE_TOKEN")
	f.StringVar(&o.tokenFile, "token-file", "", "read the shared secret from this file (first line)")
	f.BoolVar(&o.json, "json", false, "print the run's result as JSON: every round's flows, as bench --from prints them, and what the plan expected")
	f.StringVar(&o.promTargets, "prometheus-targets", "", "also write the plan's agents' /metrics addresses (serve --web; a host's web: key) to FILE as a Prometheus file_sd target list")
	f.BoolVar(&o.csv, "csv", false, "print the run's result as CSV: a header row, then one row per cell (of a matrix), round and flow")
	f.StringVar(&o.stateDir, "state-dir", defaultTuneStateDir(), "where the journal of a matrix's tune plan lives (its journal/ subdirectory); $"+tuneStateDirEnv+" sets the default")
	o.history.add(f, true)
	return cmd
}

func (o *runOptions) validate() error {
	if o.json && o.csv {
		return usage.Errorf("--json and --csv: give one")
	}
	if o.reach && !o.check {
		return usage.Errorf("--reach goes with --check: a run reaches every host anyway")
	}
	if o.sshConfig != "" {
		if _, err := os.Stat(o.sshConfig); err != nil {
			return usage.Errorf("--ssh-config: %w", err)
		}
	}
	var err error
	o.token, o.warnings, err = readSecret(o.token, o.tokenGiven, o.tokenFile)
	return err
}

func (o *runOptions) run(cmd *cobra.Command) error {
	pl, e, err := o.load(cmd)
	if err != nil {
		return err
	}
	if o.promTargets != "" {
		if err := writeTargets(cmd.OutOrStdout(), o.promTargets, pl); err != nil {
			return err
		}
	}
	var held *tune.Held
	if pl.Matrix != nil && pl.Matrix.Tune != "" {
		if !o.check {
			if err := requireRootFor("matrix: tune", "--check"); err != nil {
				return err
			}
		}
		var sys tune.System
		if held, sys, err = openMatrixTune(pl, o.stateDir); err != nil {
			return err
		}
		defer sys.Close()
	}
	if !o.check {
		return o.runPlan(cmd, pl, e, held)
	}
	return o.printCheck(cmd, pl, e, held)
}

// load reads the plan, looks up its hosts given as dns:// or dns+srv://
// (once, here: the run and its result use what they gave) and works out
// what it should carry against its ceiling. A mistake in the plan is bad
// input.
func (o *runOptions) load(cmd *cobra.Command) (*plan.Plan, *plan.Expectation, error) {
	pl, err := plan.Load(o.file)
	if err == nil {
		pl, err = pl.Discover(cmd.Context(), net.DefaultResolver)
	}
	if err != nil {
		var pe *plan.Error
		if errors.As(err, &pe) {
			return nil, nil, usage.Wrap(err)
		}
		return nil, nil, err
	}
	var bus *ceiling.Bus
	if c := pl.Ceiling; c != nil {
		bus = c.Bus
		if c.Root != "" {
			if bus, err = captureBus(cmd.Context(), c.Root); err != nil {
				return nil, nil, usage.Errorf("%s:%d: ceiling: %w", pl.File, c.Line, err)
			}
		}
	}
	e, err := pl.Expect(bus)
	if err != nil {
		return nil, nil, usage.Errorf("%s: %w", pl.File, err)
	}
	return pl, e, nil
}

// printCheck is run --check: the plan as it will run, its matrix and tune
// plan, and with --reach what each host answered.
func (o *runOptions) printCheck(cmd *cobra.Command, pl *plan.Plan, e *plan.Expectation, held *tune.Held) error {
	out := cmd.OutOrStdout()
	if err := report.Plan(out, pl, e); err != nil {
		return err
	}
	if pl.Matrix != nil {
		if err := report.MatrixPlan(out, pl); err != nil {
			return err
		}
	}
	if held != nil {
		fmt.Fprintf(out, "\nthe tune plan %s, applied before the \"tune on\" half and rolled back after:\n", pl.Matrix.Tune)
		if err := report.TunePlan(out, held.Plan()); err != nil {
			return err
		}
	}
	if !o.reach {
		return nil
	}
	return o.reachHosts(cmd, pl)
}

// reachHosts reaches every host of the plan at once, as a run will, says
// hello to its agent and prints what answered; the first host that could
// not be reached is the error.
func (o *runOptions) reachHosts(cmd *cobra.Command, pl *plan.Plan) error {
	hosts := make([]fleet.Host, len(pl.Hosts))
	for i := range pl.Hosts {
		h := &pl.Hosts[i]
		hosts[i] = fleet.Host{Name: h.Name, Reach: h.Reach, Options: h.Options(o.sshBase())}
	}
	out := cmd.OutOrStdout()
	fmt.Fprintln(out)
	var first error
	for _, a := range fleet.Reach(cmd.Context(), hosts, o.token, reachTimeout) {
		if a.Err != nil {
			fmt.Fprintf(out, "%-8s NOT REACHED: %v\n", a.Name, a.Err)
			first = cmp.Or(first, a.Err)
			continue
		}
		fmt.Fprintf(out, "%-8s reached: linerate %s, protocol %d, agent %s\n", a.Name, a.Welcome.Linerate, a.Welcome.Version, a.Welcome.ServerID)
	}
	return first
}

// sshBase is what every ssh host of the plan is reached with: --ssh-config.
func (o *runOptions) sshBase() remote.Options {
	var base remote.Options
	if o.sshConfig != "" {
		base.SSHArgs = []string{"-F", o.sshConfig}
	}
	return base
}

// reachTimeout bounds ssh's login and the agent's start on a slow host.
const reachTimeout = 30 * time.Second

// captureBus reads the bus of the box a capture holds.
func captureBus(ctx context.Context, root string) (*ceiling.Bus, error) {
	src, err := source.OpenCapture(root)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	b, err := box.Collect(ctx, src)
	if err != nil {
		return nil, sourceErr(src, root, err)
	}
	bus, err := plan.BusFromReport(ceiling.ForBox(b))
	if err != nil {
		return nil, fmt.Errorf("capture %s: %w", root, err)
	}
	return bus, nil
}
