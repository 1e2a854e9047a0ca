//go:build !small

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"linerate/fleet"
	"linerate/history"
	"linerate/internal/version"
	"linerate/plan"
	"linerate/remote"
	"linerate/report"
	"linerate/results"
	"linerate/source/procfs"
	"linerate/traffic"
	"linerate/tune"
	"linerate/wire"
)

// runPlan runs a checked plan: every round, each flow's sender agent runs
// its flow to the receiver's agent, all flows at once, while the hosts
// under sample: record their counters and this host samples itself.
func (o *runOptions) runPlan(cmd *cobra.Command, pl *plan.Plan, e *plan.Expectation, held *tune.Held) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	base := o.sshBase()
	base.Stderr = stderr
	ports, closeChannels, err := fleet.Listen(ctx, sshReceivers(pl, base), o.token)
	if err != nil {
		return err
	}
	defer closeChannels()
	if err := report.Expansions(stderr, pl); err != nil {
		return err
	}
	res := &plan.Result{Schema: results.ResultSchema, Linerate: version.Version, Plan: pl.File, Expansions: pl.Expansions, Expected: e}
	runner := &plan.Runner{
		Round: func(ctx context.Context, cp *plan.Plan) (*results.FlowSet, error) {
			return planFleet(cp, ports, base, o.token).Do(ctx)
		},
		Tune:     held,
		Bus:      e.BusOf(),
		Undo:     "'linerate tune rollback" + stateDirFlag(o.stateDir) + "'",
		Progress: stderr,
	}
	if err := runner.Run(ctx, pl, res); err != nil {
		return err
	}
	res.Interrupted = ctx.Err() != nil
	res.Controller = selfUsage()
	o.history.save(cmd, history.KindPlan, res)
	if err := o.print(cmd.OutOrStdout(), pl, res); err != nil {
		return err
	}
	if res.Interrupted {
		return errInterrupted
	}
	return failure(res.Err(), nil, !o.json && !o.csv)
}

// print writes a plan's result as --json, --csv or text asked.
func (o *runOptions) print(w io.Writer, pl *plan.Plan, res *plan.Result) error {
	switch {
	case o.json:
		return report.JSON(w, res)
	case o.csv:
		return report.PlanCSV(w, pl, res)
	}
	if err := report.PlanResult(w, pl, res); err != nil {
		return err
	}
	if res.Matrix != nil {
		if err := report.Matrix(w, res.Matrix); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return report.PlanEnd(w, res)
}

// selfUsage is what this process used so far: the cost of coordinating
// the plan; nil if the kernel would not say. CPU time is getrusage(2)'s;
// the peak memory is VmHWM, this process's own since its exec:
// ru_maxrss keeps the peak of the process this one was started from.
func selfUsage() *plan.Usage {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return nil
	}
	secs := func(tv unix.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
	peak, err := procfs.NewFS("/proc").SelfPeakRSS()
	if err != nil {
		peak = int64(ru.Maxrss) * 1024 // Linux gives ru_maxrss in KiB
	}
	return &plan.Usage{UserSeconds: secs(ru.Utime), SysSeconds: secs(ru.Stime), MaxRSSBytes: peak}
}

// sshReceivers are the plan's hosts reached over ssh that receive a flow:
// their agents must listen for the senders (fleet.Listen).
func sshReceivers(pl *plan.Plan, base remote.Options) []fleet.Host {
	var out []fleet.Host
	for _, h := range pl.Hosts {
		receives := false
		for _, f := range pl.Flows {
			receives = receives || f.To == h.Name
		}
		if receives && h.Reach.Kind == remote.SSH {
			out = append(out, fleet.Host{Name: h.Name, Reach: h.Reach, Options: h.Options(base)})
		}
	}
	return out
}

// planFleet is one round of the plan: every flow from its sender's agent
// to its receiver (on the port its agent listens on), the hosts whose only
// role is the device under test sampled.
func planFleet(pl *plan.Plan, ports map[string]int, base remote.Options, secret string) *fleet.Run {
	run := &fleet.Run{Secret: secret, Lead: pl.Warmup, Sampling: liveSampling()}
	if pl.OnlyRR() {
		run.Lead = 0 // a transaction test has no warmup: its window opens at once
	}
	for _, name := range pl.Sample {
		if roles := pl.Roles(name); len(roles) == 1 && roles[0] == plan.RoleDUT {
			h := pl.Host(name)
			run.Sample = append(run.Sample, fleet.Host{Name: name, Reach: h.Reach, Options: h.Options(base)})
		}
	}
	for i := range pl.Flows {
		f := &pl.Flows[i]
		port, ok := ports[f.To]
		if !ok {
			port = pl.Host(f.To).Reach.Port
		}
		if port == 0 {
			port = wire.DefaultPort
		}
		target := net.JoinHostPort(f.Address, strconv.Itoa(port))
		from := pl.Host(f.From)
		run.Flows = append(run.Flows, fleet.Flow{From: from.Reach, Options: from.Options(base), Name: f.From,
			Label: fmt.Sprintf("flow %d %s → %s", f.Index, f.From, target),
			Where: fmt.Sprintf("flow %d (%s:%d)", f.Index, pl.File, f.Line),
			Run: traffic.Flow{Targets: []string{target}, Spec: f.Spec(pl.Duration, pl.Warmup, f.IPv4()), FrameSize: f.Size,
				Engine: string(f.Engine)}})
	}
	return run
}
