//go:build !small

package main

import (
	"fmt"
	"io"
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

// flowPlan is one third-party flow of bench --from: the agent that sends
// and the targets it sends to.
type flowPlan struct {
	from remote.Host
	to   []string
}

// pairFlows pairs --from with --to: the i-th with the i-th, one --from
// with every --to (fan-out), or every --from with one --to (fan-in).
func pairFlows(from, to []string) ([]flowPlan, error) {
	hosts := make([]remote.Host, len(from))
	for i, f := range from {
		h, err := remote.Parse(f)
		if err != nil {
			return nil, usage.Errorf("--from %q: %w", f, err)
		}
		hosts[i] = h
	}
	for _, t := range to {
		if h, err := remote.Parse(t); err == nil && h.Kind == remote.SSH {
			return nil, usage.Errorf("--to %q: a flow's target must be an agent the sender can reach (HOST[:PORT] running 'linerate serve'); an agent started over ssh serves only its controller", t)
		}
	}
	switch {
	case len(from) == len(to):
		out := make([]flowPlan, len(from))
		for i := range from {
			out[i] = flowPlan{from: hosts[i], to: to[i : i+1]}
		}
		return out, nil
	case len(from) == 1:
		return []flowPlan{{from: hosts[0], to: to}}, nil
	case len(to) == 1:
		out := make([]flowPlan, len(from))
		for i := range from {
			out[i] = flowPlan{from: hosts[i], to: to}
		}
		return out, nil
	}
	return nil, usage.Errorf("%d --from and %d --to: give as many of each (the i-th --from sends to the i-th --to), one --from with several --to, or several --from with one --to", len(from), len(to))
}

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
		err = report.TuneJSON(cmd.OutOrStdout(), set)
	} else {
		report.FlowSetText(cmd.OutOrStdout(), set)
	}
	if err != nil {
		return err
	}
	if set.Interrupted {
		return errInterrupted
	}
	return failure(fleet.Failed(set), nil, !o.json)
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
	plans, err := pairFlows(o.from, o.to)
	if err != nil {
		return nil, err
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
	if run.Sample, err = sampleHosts(o.sample, stderr); err != nil {
		return nil, err
	}
	var mu sync.Mutex // one flow's line at a time
	for _, p := range plans {
		f := fleet.Flow{From: p.from, Options: remote.Options{Stderr: stderr}, Name: p.from.String(), Label: p.from.String(),
			Run: traffic.Flow{Targets: withPort(p.to, o.port), Spec: cfg.Spec, FrameSize: cfg.FrameSize, Engine: cfg.Engine, Mix: mix,
				Idle: wire.Seconds(cfg.Idle)}}
		label := fmt.Sprintf("%s → %s", f.Name, joinTargets(p.to))
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

// sampleHosts are the hosts of --sample: agents (HOST[:PORT]) or ssh://,
// each named by its address.
func sampleHosts(specs []string, stderr io.Writer) ([]fleet.Host, error) {
	var hosts []fleet.Host
	for _, spec := range specs {
		h, err := remote.Parse(spec)
		if err != nil {
			return nil, usage.Errorf("--sample %q: %w", spec, err)
		}
		hosts = append(hosts, fleet.Host{Name: h.String(), Reach: h, Options: remote.Options{Stderr: stderr}})
	}
	return hosts, nil
}
