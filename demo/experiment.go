package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"linerate/box"
	"linerate/history"
)

// Experiment is one of the seeds' measurements: the router runs it with
// `linerate bench --from lan --to wan`, lan's agent sending to wan's
// through the router.
type Experiment struct {
	// Name is kebab-case: "tcp-bidir".
	Name  string `json:"name"`
	Title string `json:"title"`
	// Bench is the protocol and options of `linerate bench`; the demo adds
	// --from, --to, --duration, --warmup, --idle, --json and --no-save.
	Bench []string `json:"bench"`
	// Seed is what the seeds measured on real hardware, for comparison.
	Seed string `json:"seed"`
}

// Experiments are the seeds' experiments, in the order the demo runs them.
var Experiments = []Experiment{
	{
		Name:  "tcp-bidir",
		Title: "TCP both directions at once",
		Bench: []string{"tcp", "--bidir"},
		Seed: "RouterPi, a CM4 NAT router (seeds/002): 247 Mb/s in and 887 out with CPU0 at 100 %; " +
			"937 and 923 once IRQ affinity and RPS spread the work over its cores",
	},
	{
		Name:  "tcp-mss88",
		Title: "TCP with 88-byte segments",
		Bench: []string{"tcp", "--mss", "88"},
		Seed: "RouterPi (seeds/002, iperf3 -M 88): 154k packets/s out and 225k in, " +
			"of the 753,012 a gigabit port carries in 166-byte slots",
	},
	{
		Name:  "udp-64",
		Title: "64-byte UDP packets per second",
		// One sender, as the flood of the diagnose and tune steps: on the
		// agents' one CPU, more threads only contend.
		Bench: []string{"udp", "--size", "64", "--threads", "1"},
		Seed: "APU4 with i211 NICs (seeds/004): 105k packets/s received as it came, about 250k once " +
			"spread over queues and cores, of the 1,488,095 a gigabit port carries",
	},
}

// Outcome is what one experiment measured.
type Outcome struct {
	Experiment Experiment `json:"experiment"`
	// Command is the bench command line as run in the router node.
	Command []string `json:"command"`
	// Flows holds each direction that carried traffic.
	Flows []Flow `json:"flows"`
	// CPU is each CPU's use over the measured window, averaged. The lab's
	// nodes are namespaces of one machine, so this is the sender, the
	// router and the receiver together.
	CPU []box.CPUUse `json:"cpu"`
	// LimitedBy and LimitedWhy are bench's verdict (docs/bench.md).
	LimitedBy  string `json:"limited_by,omitempty"`
	LimitedWhy string `json:"limited_why,omitempty"`
	// Errors are those bench reported with its result.
	Errors []string `json:"errors,omitempty"`
	// Bench is bench's whole JSON result, for diagnosis: the set of flows
	// (lan's flow as its agent measured it, samples included) and the
	// router's own samples (side "dut").
	Bench json.RawMessage `json:"bench"`
}

// Measure is the step that runs experiment e and adds its Outcome to the
// report.
func Measure(e Experiment) Step {
	return Step{
		Name:  e.Name,
		Title: e.Title,
		Run: func(ctx context.Context, s *Session) error {
			s.Logf("  seeds: %s", e.Seed)
			o, err := s.Bench(ctx, e)
			if o != nil {
				s.Report.Outcomes = append(s.Report.Outcomes, *o)
				for _, line := range outcomeLines(o, s.Config.Speed) {
					s.Logf("  %s", line)
				}
				s.save(e.Name, history.KindFlows, append([]string{"linerate"}, o.Command...), o.Bench)
			}
			return err
		},
	}
}

// outcome builds an Outcome from the output of `linerate bench --json`.
func outcome(e Experiment, cmd []string, out []byte, from, to string, speedBps int64) (*Outcome, error) {
	r, err := parseBench(out)
	if err != nil {
		return nil, err
	}
	return outcomeOf(e, cmd, r, out, from, to, speedBps)
}

// flowOutcome builds an Outcome from the output of `linerate bench --from
// --json`: one flow's result, and the router's samples for the CPU use.
func flowOutcome(e Experiment, cmd []string, out []byte, from, to string, speedBps int64) (*Outcome, error) {
	r, err := parseFlowSet(out)
	if err != nil {
		return nil, err
	}
	return outcomeOf(e, cmd, r, out, from, to, speedBps)
}

// outcomeOf builds an Outcome from a bench result and its JSON, out.
func outcomeOf(e Experiment, cmd []string, r *benchResult, out []byte, from, to string, speedBps int64) (*Outcome, error) {
	flows, cpu, err := summarise(r, from, to, speedBps)
	if err != nil {
		return nil, err
	}
	o := &Outcome{Experiment: e, Command: cmd, Flows: flows, CPU: cpu,
		LimitedBy: r.Summary.LimitedBy, LimitedWhy: r.Summary.LimitedWhy,
		Errors: r.Errors, Bench: json.RawMessage(append([]byte(nil), out...))}
	for _, t := range r.Targets {
		o.Errors = append(o.Errors, t.Errors...)
	}
	return o, nil
}

// commandLine quotes nothing: the demo's arguments never hold spaces.
func commandLine(args []string) string { return strings.Join(args, " ") }

// benchArgs is the bench command line of e as the router runs it: lan's
// agent sends to wan's (the nodes' names resolve in the lab; the secret
// comes in $LINERATE_TOKEN). The demo saves the result itself.
func benchArgs(e Experiment, c *Config) []string {
	args := append([]string{"bench"}, e.Bench...)
	return append(args, "--from", clientNode, "--to", serverNode,
		"--duration", c.Duration.String(), "--warmup", c.Warmup.String(), "--idle", c.Idle.String(), "--json", "--no-save")
}

func errorsLine(errs []string) string {
	return fmt.Sprintf("%d error(s): %s", len(errs), strings.Join(errs, "; "))
}
