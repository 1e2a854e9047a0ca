//go:build !small

package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"linerate/autotune"
	"linerate/autotune/drive"
	"linerate/history"
	"linerate/internal/usage"
	"linerate/lab"
	"linerate/remote"
	"linerate/report"
	"linerate/traffic"
	"linerate/tune"
	"linerate/wire"
)

// tuneAutoOptions are the flags of tune auto.
type tuneAutoOptions struct {
	lab      string
	client   string
	server   string
	dut      string
	to       string
	token    string
	reverse  bool
	proto    string
	size     int
	rate     string
	duration time.Duration
	warmup   time.Duration
	threads  int
	ports    int
	streams  int
	cpus     string
	goal     string
	rounds   int
	maxRound int
	minGain  float64
	try      []string
	noFixes  bool
	passes   int
	dryRun   bool
	json     bool
	from     string
	history  historyFlags
	stateDir string
}

// tuneAutoFlags are the flags of tune auto that set each field of
// autotune's Config (and the bench's Targets). MinGain is not among them:
// the flag is in percent, the field a fraction, and the flag is checked
// here.
var tuneAutoFlags = map[string]string{"Goal": "--goal", "Rounds": "--rounds", "MaxRounds": "--max-rounds", "Passes": "--passes", "Targets": "--to"}

func newTuneAutoCmd() *cobra.Command {
	o := &tuneAutoOptions{}
	cmd := &cobra.Command{
		Use:   "auto (--lab NAME | --to HOST[:PORT])",
		Short: "Bench, diagnose, try each fix, keep what measurably helps, roll back the rest",
		Long: `auto closes the loop. It benches a baseline, diagnoses the device under test
with the counters sampled during it, and tries each candidate change — the
--try items first, then the fixes of the findings — one at a time, each as
a journalled transaction: it measures the change in pairs of adjacent
rounds, one with it and one without it (applied and rolled back in turn,
the order alternating so that a drift of the machine cancels), and judges
the --goal metric on the pairs' ratios. Then it prints a before/after
table with each change's measured gain, its interval, the pairs it took
and why it was kept or not.

After --rounds pairs, and after each pair it adds up to --max-rounds, the
gain's interval (Student's t on the pairs' log ratios, at a confidence
that covers every look: 1 − 0.10/looks) decides: a change is kept when the
whole interval lies above --min-gain, rolled back when it lies below it
(worse, or not worth it), and, still straddling it at --max-rounds pairs,
rolled back and reported as undecided.

--lab NAME runs the traffic between two nodes of a lab built with 'linerate
lab up' (--client lan to --server wan, through the router) and tunes the
--dut node (router) inside its namespace, sampling its counters during each
round. In a lab up with --serve the far end is the --server node's agent,
reached as a real host's is (with the lab's secret); otherwise tune auto
starts a server of its own inside that node. --to HOST benches against
'linerate serve' on another host and tunes this host. --from A --to B, run
on the router between them, has the agent at A send to the agent at B
through this host and tunes this host from its own counters.

Ctrl-C rolls back the change being tried, prints what was kept and exits
130. If auto is killed, 'linerate tune rollback --last' restores the trial
it was in; 'linerate tune rollback' also undoes the kept changes.`,
		Example: `  linerate lab up router --name demo && linerate tune auto --lab demo
  linerate tune auto --lab demo --goal cpu --rate 200kpps --rounds 5
  linerate tune auto --lab demo --try rps:lan/rx-0=1 --try feature:lan/generic-receive-offload=on --no-fixes
  linerate tune auto --lab demo --dry-run                  # bench, diagnose and list the candidates only
  linerate tune auto --to 192.168.1.10 --reverse --json    # tune this host's receive path
  linerate tune auto --from 192.168.1.10 --to 10.0.0.2      # on a router: tune it while lan sends to wan through it`,
		Args: argsWith(cobra.NoArgs),
		RunE: o.run,
	}
	f := cmd.Flags()
	f.StringVar(&o.lab, "lab", "", "run in this lab (made by 'linerate lab up') and tune its --dut node")
	f.StringVar(&o.client, "client", drive.DefaultLabNodes.Client, "with --lab: the node the load is sent from")
	f.StringVar(&o.server, "server", drive.DefaultLabNodes.Server, "with --lab: the node it is sent to")
	f.StringVar(&o.dut, "dut", drive.DefaultLabNodes.DUT, "with --lab: the node to tune (the device under test)")
	f.StringVar(&o.to, "to", "", "bench against 'linerate serve' at HOST[:PORT] and tune this host")
	f.StringVar(&o.from, "from", "", "with --to: this agent (HOST[:PORT] or ssh://) sends to --to through this host, which is tuned (the router as device under test)")
	f.StringVar(&o.token, "token", "", "with --to: the shared secret the server requires (serve --token)")
	f.BoolVar(&o.reverse, "reverse", false, "with --to: the server sends and this host receives")
	f.StringVar(&o.proto, "proto", "udp", "the load: udp (packets) or tcp (streams)")
	f.IntVar(&o.size, "size", 64, "udp: Ethernet frame size in bytes, FCS included")
	f.StringVar(&o.rate, "rate", "0", "rate per direction: \"200kpps\", \"500Mbps\"; 0 is as fast as possible")
	f.DurationVar(&o.duration, "duration", 5*time.Second, "measured time of each round")
	f.DurationVar(&o.warmup, "warmup", time.Second, "time sent before each round's measured window, not counted")
	f.IntVar(&o.threads, "threads", 1, "sender threads, and receiver threads at the far end")
	f.IntVar(&o.ports, "ports", 0, "udp: destination ports the flows are spread over (default: --threads)")
	f.IntVar(&o.streams, "streams", 1, "flows per port (udp) or connections (tcp)")
	f.StringVar(&o.cpus, "cpus", "", "pin the load generator's threads to these CPUs (\"0\", \"2-3\"); in a lab without agents the far end's too")
	f.StringVar(&o.goal, "goal", string(autotune.GoalThroughput), "what to improve: throughput (received pps, or bit/s for tcp), loss (udp), or cpu (CPU seconds per million packets)")
	f.IntVar(&o.rounds, "rounds", autotune.DefaultRounds, "bench rounds of the baseline, and pairs of rounds (without and with) each change is measured in before it is first judged")
	f.IntVar(&o.maxRound, "max-rounds", autotune.DefaultMaxRounds, "while a change's answer is unclear, add pairs of rounds up to this many")
	f.Float64Var(&o.minGain, "min-gain", autotune.DefaultMinGain*100, "smallest gain in percent worth keeping a change for")
	f.StringArrayVar(&o.try, "try", nil, "also try this change, KIND:TARGET=VALUE as for 'tune plan --set' (repeatable; tried first)")
	f.BoolVar(&o.noFixes, "no-fixes", false, "try only the --try changes, not diagnose's fixes")
	f.IntVar(&o.passes, "passes", autotune.DefaultPasses, "after keeping a change, diagnose again and try new fixes, up to this many passes")
	f.BoolVar(&o.dryRun, "dry-run", false, "bench the baseline, diagnose and list the candidates; change nothing")
	f.BoolVar(&o.json, "json", false, "print the report as JSON (progress lines still go to stderr)")
	o.history.add(f, true)
	f.StringVar(&o.stateDir, "state-dir", defaultTuneStateDir(), "where the journal lives (its journal/ subdirectory); $"+tuneStateDirEnv+" sets the default")
	return cmd
}

// bench builds the traffic of one round from the flags.
func (o *tuneAutoOptions) bench(cmd *cobra.Command) (traffic.Config, error) {
	var cfg traffic.Config
	rate, err := wire.ParseRate(o.rate)
	if err != nil {
		return cfg, usage.Errorf("--rate: %w", err)
	}
	proto, err := wire.ParseProto(o.proto)
	if err != nil {
		return cfg, usage.Errorf("--proto %q: want udp or tcp", o.proto)
	}
	if err := checkLoadFlags(o.duration, o.warmup, o.threads, o.streams); err != nil {
		return cfg, err
	}
	switch {
	case o.ports < 0:
		return cfg, usage.Errorf("--ports %d: must be at least 1", o.ports)
	case proto == wire.TCP && cmd.Flags().Changed("size"):
		return cfg, usage.Errorf("--size is for udp; tcp sends streams")
	case proto == wire.UDP && o.size < wire.MinFrameSize:
		return cfg, usage.Errorf("--size %d: a frame is at least 64 bytes", o.size)
	}
	cpus, err := parseCPUs(o.cpus)
	if err != nil {
		return cfg, err
	}
	dir := wire.Forward
	if o.reverse {
		dir = wire.Reverse
	}
	cfg.Spec = wire.Spec{Proto: proto, Direction: dir, Duration: wire.Seconds(o.duration),
		Warmup: wire.Seconds(o.warmup), Rate: rate, Streams: o.streams, Ports: 1, Threads: o.threads}
	if proto == wire.UDP {
		cfg.FrameSize = o.size
		cfg.Spec.Ports = defaultPorts(o.ports, o.threads)
	}
	cfg.CPUs, cfg.Token = cpus, o.token
	return cfg, nil
}

// rig makes the rig the flags name: a lab's nodes, or this host
// against a server.
func (o *tuneAutoOptions) rig(cmd *cobra.Command, bench traffic.Config) (*autotune.Rig, error) {
	labOnly := []string{"client", "server", "dut"}
	toOnly := []string{"token", "reverse", "from"}
	switch {
	case o.lab == "" && o.to == "":
		return nil, usage.Errorf("give --lab NAME (a lab made by 'linerate lab up') or --to HOST (a machine running 'linerate serve')")
	case o.lab != "" && o.to != "":
		return nil, usage.Errorf("--lab and --to: give one")
	}
	if o.lab != "" {
		for _, n := range toOnly {
			if cmd.Flags().Changed(n) {
				return nil, usage.Errorf("--%s goes with --to, not --lab", n)
			}
		}
		if err := lab.RequireRoot("tune auto --lab"); err != nil {
			return nil, err
		}
		l, err := lab.Load(o.lab)
		if err != nil {
			return nil, err
		}
		return drive.LabRig(l, drive.LabNodes{Client: o.client, Server: o.server, DUT: o.dut}, bench)
	}
	for _, n := range labOnly {
		if cmd.Flags().Changed(n) {
			return nil, usage.Errorf("--%s goes with --lab, not --to", n)
		}
	}
	if !o.dryRun {
		if err := requireRootFor("tune auto", "--dry-run"); err != nil {
			return nil, err
		}
	}
	if o.from != "" {
		return o.relayRig(cmd, bench)
	}
	bench.Targets = []string{o.to}
	d, err := drive.BenchFromHere(bench)
	if err != nil {
		return nil, usage.Flags(err, tuneAutoFlags)
	}
	return drive.HostRig(d, true)
}

// relayRig is the rig of --from A --to B: A's agent sends to B's through
// this host, which is tuned.
func (o *tuneAutoOptions) relayRig(cmd *cobra.Command, bench traffic.Config) (*autotune.Rig, error) {
	h, err := remote.Parse(o.from)
	if err != nil {
		return nil, usage.Errorf("--from %q: %w", o.from, err)
	}
	secret, warnings, err := readSecret(o.token, cmd.Flags().Changed("token"), "")
	if err != nil {
		return nil, err
	}
	warn(cmd.ErrOrStderr(), warnings)
	bench.Token = secret
	bench.Targets = withPort([]string{o.to}, wire.DefaultPort)
	d := &drive.Relay{From: h.String(), Config: bench, Channel: h.Kind == remote.SSH, Dial: func(ctx context.Context) (net.Conn, error) {
		return remote.Dial(ctx, h, remote.Options{Stderr: cmd.ErrOrStderr()})
	}}
	return drive.HostRig(d, false)
}

func (o *tuneAutoOptions) run(cmd *cobra.Command, _ []string) error {
	goal, err := autotune.ParseGoal(o.goal)
	if err != nil {
		return usage.Flags(err, tuneAutoFlags)
	}
	if goal == autotune.GoalLoss && o.proto == string(wire.TCP) {
		return usage.Errorf("--goal loss is for udp: tcp retransmits what it loses")
	}
	if o.minGain <= 0 || o.minGain >= 100 {
		return usage.Errorf("--min-gain %g: want a percentage above 0 and below 100", o.minGain)
	}
	if o.rounds < 1 || o.rounds > 100 {
		return usage.Errorf("--rounds %d: want 1 to 100", o.rounds)
	}
	if !cmd.Flags().Changed("max-rounds") {
		o.maxRound = max(o.maxRound, o.rounds)
	}
	if low := max(o.rounds, 3); o.maxRound < low || o.maxRound > 100 {
		return usage.Errorf("--max-rounds %d: want %d to 100 (no fewer than --rounds, and a change is judged on 3 pairs at the fewest)", o.maxRound, low)
	}
	if o.passes < 1 {
		return usage.Errorf("--passes %d: want 1 or more", o.passes)
	}
	var try []tune.Item
	for _, s := range o.try {
		it, err := tune.ParseItem(s)
		if err != nil {
			return usage.Flags(err, map[string]string{"Item": "--try"})
		}
		try = append(try, it)
	}
	if o.noFixes && len(try) == 0 {
		return usage.Errorf("--no-fixes leaves nothing to try: add --try KIND:TARGET=VALUE")
	}
	bench, err := o.bench(cmd)
	if err != nil {
		return err
	}
	rig, err := o.rig(cmd, bench)
	if err != nil {
		return err
	}
	defer rig.Close()

	rep, err := autotune.Run(cmd.Context(), autotune.Config{Rig: rig, Store: tune.NewStore(o.stateDir), Goal: goal,
		Rounds: o.rounds, MaxRounds: o.maxRound, MinGain: o.minGain / 100, Try: try, NoFixes: o.noFixes, Passes: o.passes,
		DryRun: o.dryRun, Progress: cmd.ErrOrStderr()})
	err = usage.Flags(err, tuneAutoFlags)
	if rep != nil && (err == nil || len(rep.Baseline) > 0) {
		o.history.save(cmd, history.KindTuneAuto, rep)
		var perr error
		if o.json {
			perr = report.JSON(cmd.OutOrStdout(), rep)
		} else {
			fmt.Fprintln(cmd.ErrOrStderr())
			perr = report.TuneAuto(cmd.OutOrStdout(), rep)
		}
		if err == nil {
			err = perr
		}
	}
	if err != nil && rep != nil && rep.Interrupted {
		kept := "nothing was kept"
		switch n := len(rep.Kept()); n {
		case 0:
		case 1:
			kept = "1 kept change stays applied ('linerate tune rollback" + stateDirFlag(o.stateDir) + "' undoes it)"
		default:
			kept = fmt.Sprintf("%d kept changes stay applied ('linerate tune rollback%s' undoes them)", n, stateDirFlag(o.stateDir))
		}
		return fmt.Errorf("tune auto interrupted; the change being tried, if any, was rolled back; %s: %w", kept, err)
	}
	if err != nil && !usage.Is(err) && cmd.Context().Err() == nil {
		return fmt.Errorf("tune auto: %w", autoLine{err})
	}
	return err
}

// autoLine keeps an error on one line: errors.Join, which a failed
// restore gives, puts its parts on several.
type autoLine struct{ err error }

func (e autoLine) Error() string { return strings.ReplaceAll(e.err.Error(), "\n", "; ") }
func (e autoLine) Unwrap() error { return e.err }
