//go:build !small

package main

import (
	"errors"
	"fmt"
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
	"linerate/wire"
)

// runPlan runs a checked plan: every round, each flow's sender agent runs
// its flow to the receiver's agent, all flows at once, while the hosts
// under sample: record their counters and this host samples itself.
func (o *runOptions) runPlan(cmd *cobra.Command, pl *plan.Plan, e *plan.Expectation, ab *abTune) error {
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
	if pl.Matrix == nil {
		res.Rounds, res.Errors = runRounds(cmd, planFleet(pl, ports, base, o.token), pl, "")
		if len(res.Rounds) == 0 && len(res.Errors) > 0 {
			return errors.New(res.Errors[0])
		}
	} else {
		res.Matrix, res.Tune = runMatrix(cmd, pl, ab, func(cp *plan.Plan) *fleet.Run { return planFleet(cp, ports, base, o.token) })
	}
	res.Interrupted = ctx.Err() != nil
	res.Controller = selfUsage()
	o.history.save(cmd, history.KindPlan, res)
	switch {
	case o.json:
		err = report.JSON(cmd.OutOrStdout(), res)
	case o.csv:
		err = report.PlanCSV(cmd.OutOrStdout(), pl, res)
	default:
		err = report.PlanResult(cmd.OutOrStdout(), pl, res)
		if err == nil && res.Matrix != nil {
			if err = report.Matrix(cmd.OutOrStdout(), res.Matrix); err == nil {
				fmt.Fprintln(cmd.OutOrStdout())
			}
		}
		if err == nil {
			err = report.PlanEnd(cmd.OutOrStdout(), res)
		}
	}
	if err != nil {
		return err
	}
	if res.Interrupted {
		return errInterrupted
	}
	if len(res.Errors) > 0 {
		err = fmt.Errorf("%s", res.Errors[0])
	}
	for _, r := range res.Rounds {
		if err == nil {
			err = fleet.Failed(&r)
		}
	}
	if t := res.Tune; t != nil && len(t.Errors) > 0 && err == nil {
		err = fmt.Errorf("tune plan %s: %s", t.File, t.Errors[0])
	}
	for _, c := range res.Matrix {
		if err == nil && len(c.Errors) > 0 {
			err = fmt.Errorf("cell %s: %s", c.Key, c.Errors[0])
		}
		for _, r := range c.Rounds {
			if err == nil {
				err = fleet.Failed(&r)
			}
		}
	}
	return failure(err, nil, !o.json && !o.csv)
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

// runMatrix runs every cell of pl's matrix, each for the matrix's rounds
// (a fleet run that fails goes in its cell's errors, and the next cell
// runs). With a tune plan (ab), the "tune on" half runs after ab applied
// it, and ab rolls it back when the last cell ends or the run is
// interrupted; if it cannot be applied, those cells say so and do not run.
func runMatrix(cmd *cobra.Command, pl *plan.Plan, ab *abTune, run func(*plan.Plan) *fleet.Run) ([]plan.CellResult, *plan.TuneRun) {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	var out []plan.CellResult
	var tuneErr error
	cells := pl.Matrix.Cells()
	for i, c := range cells {
		if ctx.Err() != nil {
			break
		}
		cp := pl.CellPlan(c)
		cr := plan.CellResult{Key: c.Key, Flows: c.Flows, Size: c.Size, MSS: c.MSS, Tune: c.Tune}
		if c.Rate != nil {
			cr.Rate = c.Rate.Text
		}
		if c.Tune == plan.TuneOn && ab.tx == nil && tuneErr == nil {
			if tuneErr = ab.apply(ctx, stderr); tuneErr != nil {
				ab.rec.Errors = append(ab.rec.Errors, tuneErr.Error())
				fmt.Fprintf(stderr, "tune: %s: not applied: %v\n", ab.rec.File, tuneErr)
			}
		}
		if c.Tune == plan.TuneOn && tuneErr != nil {
			cr.Errors = []string{"the tune plan was not applied: " + tuneErr.Error()}
		} else {
			cr.Rounds, cr.Errors = runRounds(cmd, run(cp), cp, fmt.Sprintf("cell %d of %d (%s): ", i+1, len(cells), c.Key))
		}
		cr.Summarize()
		out = append(out, cr)
	}
	if ab == nil {
		return out, nil
	}
	return out, ab.close(ctx, stderr)
}

// runRounds runs a plan's rounds, one after the other until one fails or
// the run is interrupted: the sets measured and the error that stopped
// it. what prefixes each round's line on stderr (the matrix's cell).
func runRounds(cmd *cobra.Command, run *fleet.Run, pl *plan.Plan, what string) ([]results.FlowSet, []string) {
	ctx := cmd.Context()
	var sets []results.FlowSet
	for round := 1; round <= pl.Rounds && ctx.Err() == nil; round++ {
		fmt.Fprintf(cmd.ErrOrStderr(), "%sround %d of %d: %d flows for %s after a %s warmup\n", what, round, pl.Rounds, len(pl.Flows), pl.Duration, pl.Warmup)
		set, err := run.Do(ctx)
		if set != nil {
			set.AddConntrack()
			sets = append(sets, *set)
		}
		if err != nil {
			return sets, []string{err.Error()}
		}
	}
	return sets, nil
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
