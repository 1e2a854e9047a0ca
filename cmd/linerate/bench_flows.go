//go:build !small

package main

import (
	"fmt"
	"sync"

	"github.com/spf13/cobra"

	"linerate/ceiling"
	"linerate/fleet"
	"linerate/history"
	"linerate/internal/usage"
	"linerate/remote"
	"linerate/report"
	"linerate/results"
	"linerate/traffic"
	"linerate/wire"
)

// runFlows runs bench --from: each agent named by --from runs a flow to
// its targets at once; this host samples itself meanwhile (the device in
// the middle, when it is neither end).
func (o *benchOptions) runFlows(cmd *cobra.Command, proto wire.Proto) error {
	if o.jsonStream {
		return usage.Errorf("--from and --json-stream: give one (--json prints every flow)")
	}
	run, err := o.fleetRun(cmd, proto)
	if err != nil {
		return err
	}
	// This host's drop counters over the measured window, for the ledger
	// of a single UDP flow through it: what it dropped is the path's.
	ends := openEndCounters()
	defer ends.close()
	run.PathDrops = ends.drops()
	set, err := run.Do(cmd.Context())
	if err != nil {
		return err
	}
	o.history.save(cmd, history.KindFlows, set)
	if o.out != "" {
		if err := saveJSON(o.out, set); err != nil {
			return err
		}
	}
	if o.json {
		err = report.JSON(cmd.OutOrStdout(), set)
	} else {
		report.FlowSetText(cmd.OutOrStdout(), set)
	}
	if err != nil {
		return err
	}
	if set.Interrupted {
		return errInterrupted
	}
	return failure(set.Err(), nil, !o.json)
}

// fleetRun is the run bench --from asks for: a flow per --from (pairFlows),
// the hosts of --sample, a zero-loss search per flow with --search, and
// each flow's interval lines shown as they come.
func (o *benchOptions) fleetRun(cmd *cobra.Command, proto wire.Proto) (*fleet.Run, error) {
	var search *traffic.SearchConfig
	if o.search.asked() {
		sc, err := o.searchConfig(cmd, proto)
		if err != nil {
			return nil, err
		}
		search = &sc
	}
	pairs, err := fleet.PairFlows(o.from, o.to)
	if err != nil {
		return nil, usage.Flags(err, benchFlags)
	}
	cfg, err := o.config(proto, cmd.Flags().Changed)
	if err != nil {
		return nil, err
	}
	var mix *ceiling.Mix
	if len(cfg.Mix.Parts) > 1 {
		mix = &cfg.Mix
	}
	if search != nil {
		search.Latency = cfg.Spec.ProbeInterval > 0
		cfg.Spec.Warmup = 0
	}
	stderr := cmd.ErrOrStderr()
	warn(stderr, o.warnings)
	run := &fleet.Run{Secret: cfg.Token, Lead: fleet.Lead(cfg.Spec, cfg.Idle), Sampling: liveSampling()}
	if run.Sample, err = fleet.ParseSample(o.sample, stderr); err != nil {
		return nil, usage.Flags(err, benchFlags)
	}
	var mu sync.Mutex // one flow's line at a time
	for _, p := range pairs {
		f := fleet.Flow{From: p.From, Options: remote.Options{Stderr: stderr}, Name: p.From.String(), Label: p.From.String(),
			Run: traffic.Flow{Targets: withPort(p.To, o.port), Spec: cfg.Spec, FrameSize: cfg.FrameSize, Engine: cfg.Engine, Mix: mix,
				Idle: wire.Seconds(cfg.Idle)}}
		label := fmt.Sprintf("%s → %s", f.Name, joinTargets(p.To))
		if search != nil {
			f.Run.Search = search
			f.Run.Progress = func(line string) {
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprintf(stderr, "search [%s]: %s\n", label, line)
			}
		} else if o.interval > 0 && !o.json {
			f.OnInterval = results.GroupIntervals(o.interval, func(iv results.IntervalStats) {
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprintf(cmd.OutOrStdout(), "[%s] ", label)
				report.BenchInterval(cmd.OutOrStdout(), iv, false)
			})
		}
		run.Flows = append(run.Flows, f)
	}
	return run, nil
}

func joinTargets(ts []string) string {
	if len(ts) == 1 {
		return ts[0]
	}
	return fmt.Sprintf("%s +%d", ts[0], len(ts)-1)
}
