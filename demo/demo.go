// Package demo owns linerate's guided run, the main job of `make demo`: the
// RouterPi's story (seeds/002) told on any Linux machine. It builds a router
// lab (lan — router — wan, network namespaces joined by veth links shaped
// like Ethernet ports) with an agent, `linerate serve`, in every node, all
// pinned to one CPU; the router — the device under test — then measures
// itself: it asks lan's agent to run the seeds' experiments to wan's agent
// through it (third-party flows, `linerate bench --from lan --to wan` run in
// the router) while it samples its own counters, sets each figure beside
// the ceiling of the port the links stand for and the CPU use per core,
// diagnoses itself from those samples and tunes itself the same way
// (autotune.Relay). It removes the lab at the end, on failure and on
// cancellation (Ctrl-C).
//
// The run is a list of Steps run in order once the lab is up: the three
// measurements (Measure of each of Experiments), then Diagnose (the
// router's own counters during a 64-byte UDP flood, through the diagnose
// rules: the "before" run) and Tune (`tune auto` on the router: each change
// measured before and after, kept or rolled back; then one more flood with
// what was kept, the "after" run; at the end whatever was kept is rolled
// back too, so the demo leaves the machine as it found it). Steps work
// through the Session (its Lab, Bench and Report). Each measurement and
// tune auto's report are saved to the run history (Config.History), and
// Report.WritePage sets the before and after runs side by side with tune
// auto's trials on one HTML page.
package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"time"

	"linerate/autotune"
	"linerate/autotune/drive"
	"linerate/ceiling"
	"linerate/history"
	"linerate/internal/units"
	"linerate/internal/usage"
	"linerate/lab"
	"linerate/source/cpuset"
	"linerate/wire"
)

// Defaults of a Config.
const (
	DefaultName     = "demo"
	DefaultSpeed    = 1_000_000_000 // a gigabit port, as on the seeds' boxes
	DefaultDuration = 5 * time.Second
	DefaultWarmup   = time.Second
	DefaultIdle     = 500 * time.Millisecond
	// Quick* are the durations of --quick, for smoke tests.
	QuickDuration = time.Second
	QuickWarmup   = 500 * time.Millisecond
	QuickIdle     = 200 * time.Millisecond
	// MaxDuration is the longest measured time per experiment: serve's
	// default --max-duration (5 minutes) less the warmup.
	MaxDuration = 4 * time.Minute
	// MinSpeed and MaxSpeed bound Config.Speed when it is not 0.
	MinSpeed = 10_000_000
	MaxSpeed = 100_000_000_000
)

// The nodes of the router lab the demo uses (lab.Router).
const (
	clientNode = "lan"
	routerNode = "router"
	serverNode = "wan"
)

// How long bench may overrun its own length, and take to stop when asked.
const (
	benchGrace   = 30 * time.Second
	benchStopped = 5 * time.Second
)

// Config says how to run the demo.
//
// TuneRounds, TuneDuration and StateDir are for the Tune step (and
// Diagnose, which floods for one round of TuneDuration).
type Config struct {
	// Self is the linerate binary run inside the nodes (the agents in
	// every node, bench in the router): the running one (os.Executable)
	// from the command line.
	Self string
	// Name names the lab; DefaultName when empty. A lab of that name must
	// not exist.
	Name string
	// Dir records the lab; lab.DefaultDir() when empty.
	Dir lab.Dir
	// Speed is the Ethernet port speed, bits/s, the lab's links stand for
	// (see ShapeRate) and the ceilings are worked out for. 0 leaves the
	// links uncapped and the figures without a ceiling.
	Speed int64
	// Duration, Warmup and Idle are bench's --duration, --warmup and --idle
	// for each experiment; zero Warmup and Idle take the defaults.
	Duration, Warmup, Idle time.Duration
	// TuneRounds is the number of rounds of tune auto's baseline and of
	// each change it tries (DefaultTuneRounds when 0); TuneDuration the
	// measured time of each round (DefaultTuneDuration when 0), after
	// Warmup.
	TuneRounds   int
	TuneDuration time.Duration
	// TuneMaxRounds bounds the pairs of rounds tune auto adds to a trial
	// while its answer is unclear; 0 takes DefaultTuneMaxRounds (under a
	// guest, TuneRounds).
	TuneMaxRounds int
	// StateDir is where the Tune step makes its own journal directory,
	// removed at the end; os.TempDir() when empty.
	StateDir string
	// Keep leaves the lab up at the end, with its agents.
	Keep bool
	// History is the run history the demo saves its runs to (each
	// experiment, the floods before and after tuning, tune auto's report);
	// nil saves nothing (the report page is written all the same).
	History *history.Store
	// Progress gets a line for each thing the demo does; nil discards.
	Progress io.Writer
	// Steps run in order once the lab and serve are up; nil runs Steps()
	// (VMSteps() with VM).
	Steps []Step
	// VM makes the router a QEMU guest with e1000e NICs (lab up --vm
	// router): the same story on a real driver.
	VM bool
}

// Check fills in defaults and reports a bad Config as a usage error.
func (c *Config) Check() error {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if err := lab.CheckName(c.Name); err != nil {
		return usage.Errorf("--name: %w", err)
	}
	if c.Dir == "" {
		c.Dir = lab.DefaultDir()
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Warmup == 0 {
		c.Warmup = DefaultWarmup
	}
	if c.Idle == 0 {
		c.Idle = DefaultIdle
	}
	if c.TuneRounds == 0 {
		c.TuneRounds = DefaultTuneRounds
	}
	if c.TuneDuration == 0 {
		c.TuneDuration = DefaultTuneDuration
	}
	switch {
	case c.Self == "":
		return fmt.Errorf("demo: no linerate binary to run in the nodes")
	case c.Duration < 100*time.Millisecond || c.Duration > MaxDuration:
		return usage.Errorf("--duration %s: want 100ms to %s per experiment", c.Duration, MaxDuration)
	case c.Warmup < 0 || c.Idle < 0:
		return usage.Errorf("demo: negative warmup or idle time")
	case c.TuneRounds < 1 || c.TuneRounds > MaxTuneRounds:
		return usage.Errorf("--rounds %d: want 1 to %d", c.TuneRounds, MaxTuneRounds)
	case c.TuneDuration < 100*time.Millisecond || c.TuneDuration > MaxDuration:
		return usage.Errorf("--round-duration %s: want 100ms to %s per round", c.TuneDuration, MaxDuration)
	case c.Speed != 0 && (c.Speed < MinSpeed || c.Speed > MaxSpeed):
		return usage.Errorf("--speed %s: want 0 (uncapped) or %s to %s", units.Speed(c.Speed),
			units.Speed(MinSpeed), units.Speed(MaxSpeed))
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Steps == nil {
		c.Steps = Steps()
		if c.VM {
			c.Steps = VMSteps()
		}
	}
	return nil
}

// ShapeRate is the rate the lab's links are capped at so that they carry
// what an Ethernet port of speedBps carries.
//
// A port spends on each frame its bytes, FCS included, plus 20 bytes of
// preamble, start delimiter and gap (ceiling.WireExtraBytes), while the
// lab's tbf counts only the frame as the kernel sees it, without the FCS
// (docs/lab.md). The cap is chosen so that full-size frames (MTU 1500,
// 1514 bytes to tbf, 1538 on the wire) pass at exactly the port's rate: a
// bulk TCP stream then gets the 941.5 Mb/s a real gigabit port gives,
// not the 956 of a plain 1G cap. Smaller frames pass a little faster than
// on a real port (64-byte ones up to 2.05 Mpps where a port carries
// 1.49), which only shows when a machine forwards that fast; the ceilings
// printed are the real port's.
func ShapeRate(speedBps int64) uint64 {
	if speedBps <= 0 {
		return 0
	}
	const mtu = 1500
	seen := float64(mtu + ceiling.HeaderBytes)                                             // 1514
	wire := float64(mtu + ceiling.HeaderBytes + ceiling.FCSBytes + ceiling.WireExtraBytes) // 1538
	r := float64(speedBps) * seen / wire
	return uint64(r/1000+0.5) * 1000 // whole kbit/s, as lab.FormatRate prints
}

// Report is what the demo did and measured.
type Report struct {
	Lab      string `json:"lab"`
	Topology string `json:"topology"`
	// SpeedBps is the port speed the links stand for; ShapeBps the cap of
	// each link in each direction (0 and 0 when uncapped).
	SpeedBps int64  `json:"speed_bps"`
	ShapeBps uint64 `json:"shape_bps"`
	// Duration and Warmup are per experiment, seconds.
	Duration float64 `json:"duration"`
	Warmup   float64 `json:"warmup"`
	// Nodes are the client, router and server: the client's agent sends
	// to the server's, through the router, which runs the test.
	Client     string     `json:"client"`
	Router     string     `json:"router"`
	Server     string     `json:"server"`
	ServerAddr netip.Addr `json:"server_addr"`
	// AgentCPUs are the CPUs every agent's sender and receiver threads are
	// pinned to (serve --cpus).
	AgentCPUs []int     `json:"agent_cpus"`
	Outcomes  []Outcome `json:"experiments"`
	// Diagnosis and Tuning are what the Diagnose and Tune steps found and
	// did; nil when they did not run.
	Diagnosis *Diagnosis `json:"diagnosis,omitempty"`
	Tuning    *Tuning    `json:"tune,omitempty"`
	// Runs are the runs the demo saved to the history (or would have, with
	// --no-save: then without an id), in the order it made them.
	Runs []SavedRun `json:"runs"`
	// Kept says the lab was left up (--keep).
	Kept bool `json:"kept"`
	// Guest says what the router was when it was a virtual machine
	// (Config.VM): QEMU, KVM or TCG, its NICs, its kernel.
	Guest string `json:"guest,omitempty"`
	// Page is the file the report page was written to ("" when none was),
	// set by the caller that writes it (WritePage).
	Page string `json:"page,omitempty"`

	// page are the runs of the report page: before, after, tune auto.
	page []pageRun
}

// Step is one stage of the demo.
type Step struct {
	// Name is kebab-case; Title is shown in the progress lines.
	Name  string
	Title string
	// Run does the step's work. It returns ctx's error when ctx ends.
	Run func(ctx context.Context, s *Session) error
}

// Steps are the demo's steps: a Measure of each of Experiments, then
// Diagnose and Tune on the router.
func Steps() []Step {
	steps := make([]Step, 0, len(Experiments)+2)
	for _, e := range Experiments {
		steps = append(steps, Measure(e))
	}
	return append(steps, Diagnose(), Tune())
}

// VMSteps are Steps for a router that is a guest: the same experiments,
// then DiagnoseVM and TuneVM, run in the guest.
func VMSteps() []Step {
	steps := make([]Step, 0, len(Experiments)+2)
	for _, e := range Experiments {
		steps = append(steps, Measure(e))
	}
	return append(steps, DiagnoseVM(), TuneVM())
}

// Session is a demo under way: what steps work with.
type Session struct {
	Config Config
	// Lab is the router lab, up while steps run.
	Lab *lab.Lab
	// Report is filled in by the steps.
	Report *Report

	// rig floods lan → wan through the router (its driver, an
	// autotune.Relay, asks lan's agent from inside the router) and reads,
	// samples and changes the router (Diagnose and Tune); flood is that
	// driver with the floods' length, for the runs before and after
	// tuning; floodCPU is the CPU the agents'
	// senders and receivers run on, spareCPUs the others this process may
	// use.
	rig       *autotune.Rig
	flood     *drive.Relay
	floodCPU  int
	spareCPUs []int
}

// Logf writes one progress line.
func (s *Session) Logf(format string, args ...any) {
	fmt.Fprintf(s.Config.Progress, format+"\n", args...)
}

// Run builds the lab with its agents, runs the steps and removes the lab (also
// when a step fails or ctx ends, as on Ctrl-C), then checks nothing of it
// is left. It returns the report of what was measured, also when it
// fails part way. It needs root, and refuses (as bad input) a name a lab
// already has: that lab is not the demo's to remove.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if err := lab.RequireRoot("linerate demo"); err != nil {
		return nil, err
	}
	if old, err := cfg.Dir.Load(cfg.Name); err == nil {
		return nil, usage.Errorf("a lab named %s exists already (%s, made by process %d): remove it with `linerate lab down %s` or give the demo another --name",
			cfg.Name, old.Status(), old.Pid, cfg.Name)
	} else if !usage.Is(err) {
		return nil, err
	}
	cpus, err := allowedCPUs()
	if err != nil {
		return nil, err
	}
	s := &Session{Config: cfg, floodCPU: cpus[0], spareCPUs: cpus[1:]}
	s.Report = &Report{Lab: cfg.Name, Topology: lab.Router, SpeedBps: cfg.Speed, ShapeBps: ShapeRate(cfg.Speed),
		Duration: cfg.Duration.Seconds(), Warmup: cfg.Warmup.Seconds(),
		Client: clientNode, Router: routerNode, Server: serverNode, AgentCPUs: cpus[:1], Runs: []SavedRun{}}
	rep = s.Report

	// The agents, as `lab up --serve --cpus N` starts them: all pinned to
	// one CPU, so that a flow's sender and receiver — and the router's
	// forwarding, which a veth runs on the CPU that sends — pile up there,
	// as all the receive work did on CPU0 of the seeds' RouterPi.
	pin := cpuset.FormatList(rep.AgentCPUs)
	spec := lab.Spec{Name: cfg.Name, Topology: lab.Router, Rate: rep.ShapeBps,
		Serve: &lab.Serve{Port: wire.DefaultPort, CPUs: rep.AgentCPUs, Command: func(_, secretFile string) *exec.Cmd {
			return exec.Command(cfg.Self, "serve", "--token-file", secretFile, "--cpus", pin)
		}},
		VM: vmSpec(&cfg)}
	if cfg.Speed > 0 {
		s.Logf("building lab %s: %s — %s (forwards, NAT) — %s, links shaped like %s Ethernet ports (tbf at %sbit/s each way)",
			cfg.Name, clientNode, routerNode, serverNode, units.Speed(cfg.Speed), lab.FormatRate(rep.ShapeBps))
	} else {
		s.Logf("building lab %s: %s — %s (forwards, NAT) — %s, links uncapped", cfg.Name, clientNode, routerNode, serverNode)
	}
	l, err := cfg.Dir.Up(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			return rep, &interrupted{what: "while building lab " + cfg.Name + " (what it made is removed)", err: ctx.Err()}
		}
		return rep, fmt.Errorf("build lab %s: %w", cfg.Name, err)
	}
	s.Lab = l
	if cfg.VM {
		rep.Guest = s.guestNote()
		s.Logf("%s", rep.Guest)
	}
	defer func() {
		// One line even when both fail; both stay in the chain (%w twice).
		err = joinErrors([]error{err, s.teardown()})
	}()

	addr, ok := l.Addr(clientNode, serverNode)
	if !ok {
		return rep, fmt.Errorf("lab %s: %s does not reach %s", cfg.Name, clientNode, serverNode)
	}
	rep.ServerAddr = addr
	router, _ := l.Addr(clientNode, routerNode)
	s.Logf("lab %s is up: %s %s → %s %s (NAT) → %s %s", cfg.Name, clientNode, firstAddr(l, clientNode),
		routerNode, router, serverNode, addr)
	s.Logf("agents: linerate serve --cpus %s in %s, %s and %s (port %d, the lab's secret): the router asks %s's to send to %s's through it, and samples itself",
		pin, clientNode, routerNode, serverNode, wire.DefaultPort, clientNode, serverNode)
	for i, st := range cfg.Steps {
		s.Logf("[%d/%d] %s", i+1, len(cfg.Steps), st.Title)
		if err := st.Run(ctx, s); err != nil {
			return rep, s.stopped(ctx, st.Name, err)
		}
	}
	return rep, nil
}

// stopped words the error of a step, as an interruption when ctx ended.
func (s *Session) stopped(ctx context.Context, step string, err error) error {
	if ctx.Err() != nil {
		return &interrupted{what: "during " + step, err: ctx.Err()}
	}
	return fmt.Errorf("demo step %s: %w", step, err)
}

// interrupted is the error of a demo whose context ended: it unwraps to
// the context's error, which the command line turns into exit code 130.
type interrupted struct {
	what string
	err  error
}

func (e *interrupted) Error() string { return "demo interrupted " + e.what }
func (e *interrupted) Unwrap() error { return e.err }

// firstAddr is a node's first address, for progress lines.
func firstAddr(l *lab.Lab, node string) string {
	n, err := l.Node(node)
	if err != nil || len(n.Addrs()) == 0 {
		return "?"
	}
	return n.Addrs()[0].String()
}

// teardown removes the lab and its agents (unless Keep), then checks
// nothing of it is left.
func (s *Session) teardown() error {
	var errs []error
	if err := s.closeRig(); err != nil {
		errs = append(errs, err)
	}
	name := s.Config.Name
	if s.Config.Keep {
		s.Report.Kept = true
		s.Logf("lab %s stays up with its agents (--keep). Try: linerate lab exec %s %s -- linerate bench udp --from %s --to %s",
			name, name, routerNode, clientNode, serverNode)
		s.Logf("remove it: linerate lab down %s", name)
		return joinErrors(errs)
	}
	s.Logf("removing lab %s", name)
	if err := s.Config.Dir.Down(name); err != nil {
		errs = append(errs, fmt.Errorf("remove lab %s: %w", name, err))
	}
	if left := s.leftovers(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("lab %s: left behind: %s (linerate lab down %s removes what is recorded)",
			name, strings.Join(left, ", "), name))
	} else {
		s.Logf("lab %s is gone: no state file, no namespace, no agent left", name)
	}
	return joinErrors(errs)
}

// joinErrors joins the errors that are not nil on one line, each kept in
// the chain (errors.Join would put them on separate lines).
func joinErrors(errs []error) error {
	var out error
	for _, e := range errs {
		switch {
		case e == nil:
		case out == nil:
			out = e
		default:
			out = fmt.Errorf("%w; %w", out, e)
		}
	}
	return out
}

// leftovers lists what remains of the lab: its state file, its namespaces,
// its agents.
func (s *Session) leftovers() []string {
	var left []string
	labs, err := s.Config.Dir.List()
	if err != nil {
		left = append(left, fmt.Sprintf("lab list failed (%v)", err))
	}
	for _, l := range labs {
		if l.Spec.Name == s.Config.Name {
			left = append(left, "its state file in "+string(s.Config.Dir))
		}
	}
	for _, n := range s.Lab.Nodes {
		if ok, err := lab.NetnsExists(n.Netns); ok || err != nil {
			left = append(left, "network namespace "+n.Netns)
		}
	}
	if n := s.Lab.AgentsRunning(); n > 0 {
		left = append(left, fmt.Sprintf("%d agent(s) still running", n))
	}
	return left
}

// Bench runs experiment e as the router: `linerate bench --from lan --to
// wan` in the router node asks lan's agent to send to wan's agent through
// it and samples the router meanwhile. It returns the experiment's
// Outcome; when bench fails after printing a result, the Outcome comes
// with the error.
func (s *Session) Bench(ctx context.Context, e Experiment) (*Outcome, error) {
	c := &s.Config
	args := benchArgs(e, c)
	shown := "linerate " + commandLine(args)
	s.Logf("  %s: %s", routerNode, shown)

	limit := c.Idle + c.Warmup + c.Duration + benchGrace
	bctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(bctx, c.Self, args...)
	// Stopped like Ctrl-C would: bench tells serve to stop and prints what
	// it has.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = benchStopped
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := s.Lab.Run(routerNode, cmd)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case bctx.Err() != nil:
		return nil, fmt.Errorf("%s (in %s): no result after %s", shown, routerNode, limit)
	}
	o, perr := flowOutcome(e, args, out.Bytes(), clientNode, serverNode, c.Speed)
	if runErr != nil {
		why := lastLine(errb.String())
		if why == "" && o != nil && len(o.Errors) > 0 {
			why = errorsLine(o.Errors)
		}
		return o, fmt.Errorf("%s (in %s): %w: %s", shown, routerNode, runErr, why)
	}
	if perr != nil {
		return nil, fmt.Errorf("%s (in %s): %w", shown, routerNode, perr)
	}
	return o, nil
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
