package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"linerate/box"
	"linerate/ceiling"
	"linerate/internal/usage"
	"linerate/plan"
	"linerate/report"
	"linerate/source"
)

// runOptions are the flags and argument of `linerate run`.
type runOptions struct {
	file  string
	check bool
}

func newRunCmd() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run PLAN.yaml --check",
		Short: "Check a plan: flows between many hosts at once, the hosts to sample, the ceiling to reach",
		Long: `run takes a plan: a YAML file naming the hosts of a test and how each is
reached (an agent already running, HOST[:PORT], or ssh://[user@]host[:port]
where linerate starts one over ssh), the flows between them (from, to,
address, proto, size, streams, rate, direction ...), the hosts to sample,
duration, warmup and rounds, and the ceiling to hold the total against (a
host's PCIe bus, given as a link or read from a capture). The format is in
docs/plans.md; examples/ holds the seeds' three setups.

--check reads the plan, reports the first mistake as file:line (exit 2),
and prints the plan as it will run: each host and how it is reached, each
flow with the frame it sends, what each port and the whole plan can carry
at line rate, and what the ceiling leaves of it. Nothing is reached or
sent. Running a plan comes with the agents' third-party flows; until then
run needs --check.`,
		Example: `  linerate run examples/cm4-fan-in.yaml --check        # five hosts into a CM4's four-port NIC
  linerate run examples/routerpi-bidir.yaml --check     # a NAT router, both directions at once
  linerate run examples/apu4-mars-venus.yaml --check    # mars to four addresses of venus`,
		Args: argsWith(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file = args[0]
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd)
		},
	}
	cmd.Flags().BoolVar(&o.check, "check", false, "read and check the plan and print it as it will run, without reaching any host")
	return cmd
}

func init() { rootCmd.AddCommand(newRunCmd()) }

func (o *runOptions) validate() error {
	if !o.check {
		return usage.Errorf("run %s: give --check: running a plan comes with the agents' third-party flows; --check reads it and prints what will run", o.file)
	}
	return nil
}

func (o *runOptions) run(cmd *cobra.Command) error {
	pl, err := plan.Load(o.file)
	if err != nil {
		var pe *plan.Error
		if errors.As(err, &pe) {
			return usage.Wrap(err)
		}
		return err
	}
	var bus *ceiling.Bus
	if c := pl.Ceiling; c != nil {
		bus = c.Bus
		if c.Root != "" {
			if bus, err = captureBus(cmd.Context(), c.Root); err != nil {
				return usage.Errorf("%s:%d: ceiling: %w", pl.File, c.Line, err)
			}
		}
	}
	e, err := pl.Expect(bus)
	if err != nil {
		return usage.Errorf("%s: %w", pl.File, err)
	}
	return report.Plan(cmd.OutOrStdout(), pl, e)
}

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
