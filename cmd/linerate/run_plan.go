package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"linerate/box"
	"linerate/results"
	"linerate/wire"

	"linerate/history"
	"linerate/internal/version"
	"linerate/plan"
	"linerate/remote"
	"linerate/report"
	"linerate/traffic"
)

// runPlan runs a checked plan: every round, each flow's sender agent runs
// its flow to the receiver's agent, all flows at once, while the hosts
// under sample: record their counters and this host samples itself.
func (o *runOptions) runPlan(cmd *cobra.Command, pl *plan.Plan, e *plan.Expectation) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	var base remote.Options
	if o.sshConfig != "" {
		base.SSHArgs = []string{"-F", o.sshConfig}
	}
	base.Stderr = stderr
	ports, closeChannels, err := listenOverSSH(ctx, pl, base, o.token)
	if err != nil {
		return err
	}
	defer closeChannels()
	targets := make([]string, len(pl.Flows))
	for i := range pl.Flows {
		f := &pl.Flows[i]
		port, ok := ports[f.To]
		if !ok {
			port = pl.Host(f.To).Reach.Port
		}
		if port == 0 {
			port = wire.DefaultPort
		}
		targets[i] = net.JoinHostPort(f.Address, strconv.Itoa(port))
	}
	var sampled []sampleTarget
	for _, name := range pl.Sample {
		if len(pl.Roles(name)) == 1 && pl.Roles(name)[0] == plan.RoleDUT {
			h := pl.Host(name)
			sampled = append(sampled, sampleTarget{name: name, host: h.Reach, opts: h.Options(base)})
		}
	}
	res := &plan.Result{Schema: results.ResultSchema, Linerate: version.Version, Plan: pl.File, Expected: e}
	for round := 1; round <= pl.Rounds && ctx.Err() == nil; round++ {
		fmt.Fprintf(stderr, "round %d of %d: %d flows for %s after a %s warmup\n", round, pl.Rounds, len(pl.Flows), pl.Duration, pl.Warmup)
		set, err := o.planRound(ctx, pl, targets, sampled, base)
		if set != nil {
			res.Rounds = append(res.Rounds, *set)
		}
		if err != nil {
			if len(res.Rounds) == 0 {
				return err
			}
			res.Errors = append(res.Errors, err.Error())
			break
		}
	}
	res.Interrupted = ctx.Err() != nil
	o.history.save(cmd, history.KindPlan, res)
	err = nil
	if o.json {
		err = report.TuneJSON(cmd.OutOrStdout(), res)
	} else {
		err = report.PlanResult(cmd.OutOrStdout(), pl, res)
	}
	if err != nil {
		return err
	}
	if res.Interrupted {
		return errInterrupted
	}
	if len(res.Errors) > 0 {
		return fmt.Errorf("%s", res.Errors[0])
	}
	for _, r := range res.Rounds {
		for _, f := range r.Flows {
			if f.Error != "" {
				return fmt.Errorf("a flow failed: %s", f.Error)
			}
		}
	}
	return nil
}

// sampleTarget is a host whose agent samples its counters for a round.
type sampleTarget struct {
	name string
	host remote.Host
	opts remote.Options
}

// planRound runs every flow of the plan once, at once.
func (o *runOptions) planRound(ctx context.Context, pl *plan.Plan, targets []string, sampled []sampleTarget, base remote.Options) (*results.FlowSet, error) {
	set := &results.FlowSet{Schema: results.ResultSchema, Linerate: version.Version, Time: time.Now().UTC(),
		Flows: make([]results.FlowRun, len(pl.Flows))}
	conns := make([]net.Conn, len(pl.Flows))
	closeAll := func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}
	for i := range pl.Flows {
		f := &pl.Flows[i]
		from := pl.Host(f.From)
		c, err := remote.Dial(ctx, from.Reach, from.Options(base))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("flow %d (%s:%d): %w", f.Index, pl.File, f.Line, err)
		}
		conns[i] = c
		set.Flows[i] = results.FlowRun{From: f.From, To: []string{targets[i]}}
	}
	mid, err := startMiddle(ctx, sampled, o.token, pl.Warmup)
	if err != nil {
		closeAll()
		return nil, err
	}
	var wg sync.WaitGroup
	for i := range pl.Flows {
		f := &pl.Flows[i]
		fl := traffic.Flow{Targets: []string{targets[i]}, Spec: f.Spec(pl.Duration, pl.Warmup, f.IPv4()), FrameSize: f.Size, Engine: f.Engine}
		if pl.Host(f.From).Reach.Kind == remote.SSH {
			fl.Secret = o.token // the agent ssh started has none of its own
		}
		if set.Spec.Proto == "" {
			set.Spec = fl.Spec
		}
		wg.Go(func() {
			r, err := traffic.RunFlow(ctx, conns[i], o.token, fl, nil)
			set.Flows[i].Result = r
			if err != nil {
				set.Flows[i].Error = fmt.Sprintf("flow %d %s → %s: %v", f.Index, f.From, targets[i], err)
			}
		})
	}
	wg.Wait()
	mid.finish(ctx, set)
	return set, nil
}

// middle samples the hosts in the middle of a set of flows while they run:
// this host, and the agents of the hosts named to sample.
type middle struct {
	self   func() ([]box.Rates, error)
	others func() ([]results.Sample, []string)
}

// startMiddle starts sampling the hosts in the middle after lead (the
// flows' idle probes and warmup), so that their seconds are the measured
// window's: this host, and the agents of the others (reached now, asked to
// sample when the window opens).
func startMiddle(ctx context.Context, hosts []sampleTarget, secret string, lead time.Duration) (*middle, error) {
	others, err := startSampling(ctx, hosts, secret, lead)
	if err != nil {
		return nil, err
	}
	return &middle{self: sampleAfter(lead), others: others}, nil
}

// sampleAfter samples this host once a second from lead on; the returned
// stop gives what was sampled (nothing, when it stops before lead).
func sampleAfter(lead time.Duration) func() ([]box.Rates, error) {
	var mu sync.Mutex
	var stop func() ([]box.Rates, error)
	over := false
	t := time.AfterFunc(lead, func() {
		mu.Lock()
		defer mu.Unlock()
		if !over {
			stop = liveSampling()(nil)
		}
	})
	return func() ([]box.Rates, error) {
		t.Stop()
		mu.Lock()
		defer mu.Unlock()
		over = true
		if stop == nil {
			return nil, nil
		}
		return stop()
	}
}

// flowLead is how long after a flow's request its measured window opens:
// the idle latency probes (with probes) and the warmup.
func flowLead(sp wire.Spec, idle time.Duration) time.Duration {
	if sp.ProbeInterval > 0 {
		return idle + sp.Warmup.D()
	}
	return sp.Warmup.D()
}

// finish stops the sampling and completes set: the samples (side dut),
// notes on what could not be sampled, the total.
func (m *middle) finish(ctx context.Context, set *results.FlowSet) {
	rates, err := m.self()
	for _, r := range rates {
		set.Samples = append(set.Samples, results.Sample{Side: "dut", Target: -1, Rates: r})
	}
	if err != nil {
		set.Notes = append(set.Notes, "this host's counters: "+err.Error())
	}
	got, notes := m.others()
	set.Samples, set.Notes = append(set.Samples, got...), append(set.Notes, notes...)
	set.Sum()
	set.Interrupted = set.Interrupted || ctx.Err() != nil
}

// startSampling asks each host's agent to sample its counters until the
// returned stop, which gives their samples (side "dut", Host its name) and
// a note for each host whose samples could not be had.
func startSampling(ctx context.Context, hosts []sampleTarget, secret string, lead time.Duration) (stop func() ([]results.Sample, []string), err error) {
	type agent struct {
		name string
		s    *traffic.AgentSampler
	}
	var agents []agent
	stop = func() ([]results.Sample, []string) {
		var out []results.Sample
		var notes []string
		for _, a := range agents {
			rates, err := a.s.Stop()
			for _, r := range rates {
				out = append(out, results.Sample{Side: "dut", Target: -1, Host: a.name, Rates: r})
			}
			if err != nil {
				notes = append(notes, fmt.Sprintf("samples of %s: %v", a.name, err))
			}
		}
		return out, notes
	}
	for _, h := range hosts {
		c, err := remote.Dial(ctx, h.host, h.opts)
		if err != nil {
			stop()
			return nil, err
		}
		s, err := traffic.StartSampling(c, secret, lead)
		if err != nil {
			stop()
			return nil, fmt.Errorf("sample %s: %w", h.name, err)
		}
		agents = append(agents, agent{h.name, s})
	}
	return stop, nil
}

// listenOverSSH starts the agent of each flow receiver reached over ssh
// and has it listen, on a free port of every address, for the senders'
// control connections while the run lasts (an agent ssh starts serves only
// its controller otherwise). It returns each such host's port and what
// ends the channels.
func listenOverSSH(ctx context.Context, pl *plan.Plan, base remote.Options, secret string) (map[string]int, func(), error) {
	ports := map[string]int{}
	var conns []net.Conn
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for _, h := range pl.Hosts {
		receives := false
		for _, f := range pl.Flows {
			receives = receives || f.To == h.Name
		}
		if !receives || h.Reach.Kind != remote.SSH {
			continue
		}
		c, err := remote.Dial(ctx, h.Reach, h.Options(base))
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		conns = append(conns, c)
		addrs, err := traffic.ListenOn(c, traffic.Listen{Addresses: []string{":0"}, Secret: secret})
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%s: listen for the senders: %w", h.Reach, err)
		}
		ap, err := netip.ParseAddrPort(addrs[0])
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%s: listens at %q: %w", h.Reach, addrs[0], err)
		}
		ports[h.Name] = int(ap.Port())
	}
	return ports, closeAll, nil
}
