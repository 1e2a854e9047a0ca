package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"linerate/history"
	"linerate/internal/usage"
	"linerate/internal/version"
	"linerate/remote"
	"linerate/report"
	"linerate/traffic"
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
func (o *benchOptions) runFlows(cmd *cobra.Command, proto string) error {
	if o.jsonStream {
		return usage.Errorf("--from and --json-stream: give one (--json prints every flow)")
	}
	if o.search.asked() {
		return usage.Errorf("--from and --search: the zero-loss search runs from this host only, for now")
	}
	plans, err := pairFlows(o.from, o.to)
	if err != nil {
		return err
	}
	cfg, err := o.config(proto, cmd.Flags().Changed)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	warn(stderr, o.warnings)
	ctx := cmd.Context()

	set := &traffic.FlowSet{Schema: traffic.ResultSchema, Linerate: version.Version, Time: time.Now().UTC(), Spec: cfg.Spec,
		Flows: make([]traffic.FlowRun, len(plans))}
	// Reach every agent first: a host that cannot be reached stops the
	// test before anything is sent.
	conns := make([]net.Conn, len(plans))
	for i, p := range plans {
		c, err := remote.Dial(ctx, p.from, remote.Options{Stderr: stderr})
		if err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			return err
		}
		conns[i] = c
		set.Flows[i] = traffic.FlowRun{From: p.from.String(), To: withPort(p.to, o.port)}
	}
	stopSampling := liveSampling()(nil)
	stopSamplers, err := startSamplers(ctx, o.sample, cfg.Token, stderr)
	if err != nil {
		stopSampling()
		for _, c := range conns {
			c.Close()
		}
		return err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	live := o.interval > 0 && !o.json
	for i, p := range plans {
		f := traffic.Flow{Targets: set.Flows[i].To, Spec: cfg.Spec, FrameSize: cfg.FrameSize, Engine: cfg.Engine,
			Idle: traffic.Seconds(cfg.Idle)}
		label := fmt.Sprintf("%s → %s", set.Flows[i].From, joinTargets(p.to))
		var show func(traffic.IntervalStats)
		if live {
			show = traffic.GroupIntervals(o.interval, func(iv traffic.IntervalStats) {
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprintf(cmd.OutOrStdout(), "[%s] ", label)
				report.BenchInterval(cmd.OutOrStdout(), iv, false)
			})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := traffic.RunFlow(ctx, conns[i], cfg.Token, f, show)
			set.Flows[i].Result = res
			if err != nil {
				set.Flows[i].Error = fmt.Sprintf("%s: %v", set.Flows[i].From, err)
			}
		}()
	}
	wg.Wait()
	rates, serr := stopSampling()
	for _, r := range rates {
		set.Samples = append(set.Samples, traffic.Sample{Side: "dut", Target: -1, Rates: r})
	}
	if serr != nil {
		set.Notes = append(set.Notes, "this host's counters: "+serr.Error())
	}
	sampled, notes := stopSamplers()
	set.Samples, set.Notes = append(set.Samples, sampled...), append(set.Notes, notes...)
	set.Sum()
	set.Interrupted = set.Interrupted || ctx.Err() != nil
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
	var failed []error
	for _, f := range set.Flows {
		if f.Error != "" {
			failed = append(failed, fmt.Errorf("%s", f.Error))
		}
	}
	if len(failed) == len(set.Flows) {
		return fmt.Errorf("every flow failed: %s", set.Flows[0].Error)
	} else if len(failed) > 0 {
		return fmt.Errorf("%d of %d flows failed: %s", len(failed), len(set.Flows), failed[0])
	}
	return nil
}

func joinTargets(ts []string) string {
	if len(ts) == 1 {
		return ts[0]
	}
	return fmt.Sprintf("%s +%d", ts[0], len(ts)-1)
}

// saveJSON writes v as indented JSON to path (--out).
func saveJSON(path string, v any) error {
	f, err := os.Create(path)
	if err != nil {
		return usage.Errorf("--out: %w", err)
	}
	if err := report.TuneJSON(f, v); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// startSamplers asks the agent of each host to sample its counters until
// the returned stop, which gives their samples (side "dut", Host set) and
// a note for each host whose samples could not be had.
func startSamplers(ctx context.Context, hosts []string, secret string, stderr io.Writer) (stop func() ([]traffic.Sample, []string), err error) {
	type agent struct {
		name string
		s    *traffic.AgentSampler
	}
	var agents []agent
	stop = func() ([]traffic.Sample, []string) {
		var out []traffic.Sample
		var notes []string
		for _, a := range agents {
			rates, err := a.s.Stop()
			for _, r := range rates {
				out = append(out, traffic.Sample{Side: "dut", Target: -1, Host: a.name, Rates: r})
			}
			if err != nil {
				notes = append(notes, fmt.Sprintf("--sample %s: %v", a.name, err))
			}
		}
		return out, notes
	}
	for _, spec := range hosts {
		h, err := remote.Parse(spec)
		if err != nil {
			stop()
			return nil, usage.Errorf("--sample %q: %w", spec, err)
		}
		c, err := remote.Dial(ctx, h, remote.Options{Stderr: stderr})
		if err != nil {
			stop()
			return nil, err
		}
		s, err := traffic.StartSampling(c, secret)
		if err != nil {
			stop()
			return nil, fmt.Errorf("--sample %s: %w", h, err)
		}
		agents = append(agents, agent{h.String(), s})
	}
	return stop, nil
}
