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
	var search *traffic.SearchConfig
	if o.search.asked() {
		sc, err := o.searchConfig(cmd, proto)
		if err != nil {
			return err
		}
		search = &sc
	}
	plans, err := pairFlows(o.from, o.to)
	if err != nil {
		return err
	}
	cfg, err := o.config(proto, cmd.Flags().Changed)
	if err != nil {
		return err
	}
	if search != nil {
		search.Latency = cfg.Spec.ProbeInterval > 0
		cfg.Spec.Warmup = 0
	}
	stderr := cmd.ErrOrStderr()
	warn(stderr, o.warnings)
	ctx := cmd.Context()

	set := &traffic.FlowSet{Schema: traffic.ResultSchema, Linerate: version.Version, Time: time.Now().UTC(), Spec: cfg.Spec,
		Flows: make([]traffic.FlowRun, len(plans))}
	sampled, err := sampleTargets(o.sample, stderr)
	if err != nil {
		return err
	}
	conns, err := reachAgents(ctx, plans, stderr)
	if err != nil {
		return err
	}
	for i, p := range plans {
		set.Flows[i] = traffic.FlowRun{From: p.from.String(), To: withPort(p.to, o.port)}
	}
	mid, err := startMiddle(ctx, sampled, cfg.Token, flowLead(cfg.Spec, cfg.Idle))
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		return err
	}
	// This host's drop counters over the measured window, for the ledger
	// of a single UDP flow through it: what it dropped is the path's.
	ends := openEndCounters()
	defer ends.close()
	var path *pathWindow
	if dc := ends.drops(); dc != nil && proto == "udp" && search == nil && len(plans) == 1 {
		path = watchPath(dc, flowLead(cfg.Spec, cfg.Idle))
		defer path.stop()
	}
	o.runEach(ctx, cmd.OutOrStdout(), stderr, plans, conns, set, cfg, search)
	if d := path.drops(); d != nil && set.Flows[0].Result != nil {
		set.Flows[0].Result.AddPathDrops(*d)
	}
	mid.finish(ctx, set)
	return o.reportFlows(cmd, set)
}

// reportFlows saves the flows' results (history, --out), prints them and
// returns the error of the run: interrupted, or flows that failed.
func (o *benchOptions) reportFlows(cmd *cobra.Command, set *traffic.FlowSet) error {
	o.history.save(cmd, history.KindFlows, set)
	if o.out != "" {
		if err := saveJSON(o.out, set); err != nil {
			return err
		}
	}
	var err error
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
	return flowsErr(set)
}

// runEach runs every flow at once, each through its agent's connection,
// into set, and waits for them all; interval lines (or a search's
// progress) go to out (stderr), one flow's at a time.
func (o *benchOptions) runEach(ctx context.Context, out, stderr io.Writer, plans []flowPlan, conns []net.Conn,
	set *traffic.FlowSet, cfg traffic.Config, search *traffic.SearchConfig) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	live := o.interval > 0 && !o.json
	for i, p := range plans {
		f := traffic.Flow{Targets: set.Flows[i].To, Spec: cfg.Spec, FrameSize: cfg.FrameSize, Engine: cfg.Engine,
			Idle: traffic.Seconds(cfg.Idle)}
		if p.from.Kind == remote.SSH {
			f.Secret = cfg.Token // the agent ssh started has none of its own
		}
		label := fmt.Sprintf("%s → %s", set.Flows[i].From, joinTargets(p.to))
		var show func(traffic.IntervalStats)
		if search != nil {
			f.Search = search
			f.Progress = func(line string) {
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprintf(stderr, "search [%s]: %s\n", label, line)
			}
		} else if live {
			show = traffic.GroupIntervals(o.interval, func(iv traffic.IntervalStats) {
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprintf(out, "[%s] ", label)
				report.BenchInterval(out, iv, false)
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
}

// flowsErr is the error of a flow set whose flows failed, all or some.
func flowsErr(set *traffic.FlowSet) error {
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

// sampleTargets reads --sample: the hosts to sample beside the flows.
func sampleTargets(specs []string, stderr io.Writer) ([]sampleTarget, error) {
	var sampled []sampleTarget
	for _, spec := range specs {
		h, err := remote.Parse(spec)
		if err != nil {
			return nil, usage.Errorf("--sample %q: %w", spec, err)
		}
		sampled = append(sampled, sampleTarget{name: h.String(), host: h, opts: remote.Options{Stderr: stderr}})
	}
	return sampled, nil
}

// reachAgents dials every --from agent first: a host that cannot be
// reached stops the test before anything is sent.
func reachAgents(ctx context.Context, plans []flowPlan, stderr io.Writer) ([]net.Conn, error) {
	conns := make([]net.Conn, len(plans))
	for i, p := range plans {
		c, err := remote.Dial(ctx, p.from, remote.Options{Stderr: stderr})
		if err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			return nil, err
		}
		conns[i] = c
	}
	return conns, nil
}

// pathWindow is this host's drop counters over a flow's measured window,
// for the ledger of a single UDP flow through it: what it dropped is the
// path's.
type pathWindow struct {
	mu    sync.Mutex
	end   func() traffic.EndDrops
	timer *time.Timer
}

// watchPath takes the snapshot a little before the agent's window opens,
// lead after now: a wider window only adds what the ledger calls excess.
func watchPath(dc traffic.DropCounters, lead time.Duration) *pathWindow {
	w := &pathWindow{}
	w.timer = time.AfterFunc(max(lead-100*time.Millisecond, 0), func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.end = traffic.PathDrops(dc)
	})
	return w
}

func (w *pathWindow) stop() { w.timer.Stop() }

// drops are the drops since the snapshot; nil without one (no window, or
// the run ended before it opened).
func (w *pathWindow) drops() *traffic.EndDrops {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.end == nil {
		return nil
	}
	d := w.end()
	return &d
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
