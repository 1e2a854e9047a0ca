package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"linerate/autotune"
	"linerate/diagnose"
	"linerate/history"
	"linerate/lab"
	"linerate/lab/vm"
	"linerate/results"
	"linerate/tune"
)

// With Config.VM the router is a QEMU guest (lab up --vm router) whose
// lan and wan NICs are e1000e, driven by the kernel's own driver: the
// seeds' story told on a real driver, whose interrupts have names and
// numbers and land on the guest's CPU0 as the RouterPi's did. The
// experiments run as always (bench --from in the router, now in the
// guest). Diagnose and Tune cannot reach into a guest from this process,
// so they run there the commands a user would run on the router itself:
// the flood as `bench --from lan --to wan --json`, `diagnose` of that
// result, `tune auto --from lan --to wan --json` with its own journal,
// and `tune rollback` of it at the end. Under TCG the guest's CPUs are
// emulated: every rate is the emulator's, which the report and the page
// say.

// guestState is where the demo keeps its files in the router guest: the
// floods' results and tune auto's journal, removed at the end.
const guestState = "/run/linerate-demo"

// guestNote says what the router was, for the page and the text.
func (s *Session) guestNote() string {
	v := s.Lab.Spec.VM
	if v == nil {
		return ""
	}
	kernel := "?"
	if g, ok := s.Lab.Guest(routerNode); ok {
		kernel = g.Kernel
	}
	n := fmt.Sprintf("the router was a QEMU guest under %s with %s NICs (kernel %s, %d CPUs)", strings.ToUpper(string(v.Accel)), v.NIC, kernel, v.CPUs)
	if v.Accel == vm.TCG {
		n += ": its CPUs were emulated, so absolute rates are the emulator's, not the driver's; what it shows is where the work lands and what the driver takes"
	}
	return n
}

// inGuest runs linerate with args in the router guest and returns what it
// printed on stdout; its stderr (progress lines) goes to the demo's
// progress, indented, and stdin is fed when not nil.
func (s *Session) inGuest(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return s.guestCmd(ctx, stdin, append([]string{s.Config.Self}, args...)...)
}

// guestCmd runs argv in the router guest (a path of the host's linerate
// is its own copy there).
func (s *Session) guestCmd(ctx context.Context, stdin []byte, argv ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = benchStopped
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = io.MultiWriter(&errb, &indent{w: s.Config.Progress, prefix: "  "})
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := s.Lab.Run(routerNode, cmd)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return out.Bytes(), fmt.Errorf("%s in %s: %w: %s", strings.Join(argv, " "), routerNode, err, lastLine(errb.String()))
	}
	return out.Bytes(), nil
}

// floodInGuest floods lan → wan through the guest router, as the router
// runs it (bench --from), and returns the flow's result with the router's
// own samples, and the whole JSON as bench printed it.
func (s *Session) floodInGuest(ctx context.Context) (*results.Result, []byte, error) {
	args := append(s.floodCommand()[1:], "--json", "--no-save")
	out, err := s.inGuest(ctx, nil, args...)
	if err != nil {
		return nil, nil, err
	}
	var fs results.FlowSet
	if err := json.Unmarshal(out, &fs); err != nil {
		return nil, nil, fmt.Errorf("the flood's JSON: %w", err)
	}
	if len(fs.Flows) != 1 || fs.Flows[0].Result == nil {
		return nil, nil, fmt.Errorf("the flood has %d flows and no result", len(fs.Flows))
	}
	res := *fs.Flows[0].Result
	res.Samples = append(res.Samples, fs.Samples...)
	res.Notes = append(res.Notes, s.guestNote())
	return &res, out, nil
}

// DiagnoseVM is Diagnose for a guest router: the flood in the guest, then
// the guest's diagnose of that result, which reads the router's own
// configuration and the samples the flood took of it.
func DiagnoseVM() Step {
	return Step{
		Name:  "diagnose",
		Title: fmt.Sprintf("Diagnose the router (a guest) during a flood of %d-byte UDP packets", floodFrame),
		Run: func(ctx context.Context, s *Session) error {
			c := &s.Config
			s.Logf("  %s", s.floodLine())
			res, raw, err := s.floodInGuest(ctx)
			if err != nil {
				return err
			}
			file := guestState + "/before.json"
			if _, err := s.guestCmd(ctx, raw, "sh", "-c", "mkdir -p "+guestState+" && cat > "+file); err != nil {
				return err
			}
			out, err := s.inGuest(ctx, nil, "diagnose", file, "--side", "dut", "--json", "--no-save")
			if err != nil {
				return err
			}
			var rep struct {
				Seconds  float64            `json:"sampled_seconds"`
				Rules    int                `json:"rules"`
				Findings []diagnose.Finding `json:"findings"`
			}
			if err := json.Unmarshal(out, &rep); err != nil {
				return fmt.Errorf("diagnose's JSON: %w", err)
			}
			sum := res.Summary
			d := &Diagnosis{DUT: routerNode + " (guest)", FrameSize: floodFrame, Duration: s.floodDuration().Seconds(),
				Warmup: c.Warmup.Seconds(), CPU: s.floodCPU,
				SentPPS: sum.SentPPS, ReceivedPPS: sum.ReceivedPPS, LossRatio: sum.LossRatio,
				Samples: int(rep.Seconds), Rules: rep.Rules, Findings: rep.Findings}
			if d.Findings == nil {
				d.Findings = []diagnose.Finding{}
			}
			s.Report.Diagnosis = d
			for _, l := range diagnosisLines(d) {
				s.Logf("  %s", l)
			}
			s.save(RoleBefore, history.KindBench, s.floodCommand(), res)
			return nil
		},
	}
}

// TuneVM is Tune for a guest router: tune auto in the guest with a
// journal of the demo's own there, the flood once more with what it kept,
// then its rollback.
func TuneVM() Step {
	return Step{
		Name:  "tune",
		Title: "Tune the router (a guest): try each change, keep what measurably helps, then undo it all",
		Run: func(ctx context.Context, s *Session) (err error) {
			t := &Tuning{Restored: []tune.RollbackResult{}}
			s.Report.Tuning = t
			state := guestState + "/state"
			s.Logf("  journal: %s in %s (this run's own, removed at the end)", state, routerNode)
			defer func() {
				err = joinErrors([]error{err, s.undoInGuest(ctx, state, t)})
			}()
			// The guest's CPUs other than the first, where the agents'
			// work lands: the RouterPi's fix steers receive work there.
			var try []tune.Item
			if cpus := s.Lab.Spec.VM.CPUs; cpus > 1 {
				it := tune.Item{Kind: "rps", Target: routerIn + "/rx-0", Value: "1-" + strconv.Itoa(cpus-1)}
				if cpus == 2 {
					it.Value = "1"
				}
				try = append(try, it)
				t.Seed = it.String()
				s.Logf("  tried first (%s, --try): %s — the RouterPi's fix: steer the receive work off the busy CPU", seedSource, it)
			}
			args := append(s.tuneCommand(try)[1:], "--json", "--no-save", "--state-dir", state)
			out, err := s.inGuest(ctx, nil, args...)
			if len(bytes.TrimSpace(out)) > 0 {
				var rep autotune.Report
				if jerr := json.Unmarshal(out, &rep); jerr == nil {
					rep.Notes = append(rep.Notes, s.guestNote())
					t.Auto = &rep
					if len(rep.Baseline) > 0 {
						s.save(RoleTuneAuto, history.KindTuneAuto, s.tuneCommand(try), &rep)
					}
				} else if err == nil {
					err = fmt.Errorf("tune auto's JSON: %w", jerr)
				}
			}
			if err != nil {
				return oneLine{err}
			}
			if t.Auto == nil {
				return fmt.Errorf("tune auto in %s printed no report", routerNode)
			}
			kept := "nothing kept: as before"
			if n := len(t.Auto.Kept()); n > 0 {
				kept = fmt.Sprintf("with the %d change%s kept", n, plural(n))
			}
			s.Logf("  after tuning (%s): the same flood once more, %s measured", kept, s.floodDuration())
			res, _, err := s.floodInGuest(ctx)
			if err != nil {
				return fmt.Errorf("flood %s → %s after tuning: %w", clientNode, serverNode, err)
			}
			sum := res.Summary
			t.After = &Flood{SentPPS: sum.SentPPS, ReceivedPPS: sum.ReceivedPPS, LossRatio: sum.LossRatio}
			s.Logf("  %s", afterLine(s.Report.Diagnosis, t.After))
			s.save(RoleAfter, history.KindBench, s.floodCommand(), res)
			return nil
		},
	}
}

// undoInGuest rolls back what tune auto kept in the guest and removes the
// demo's files there.
func (s *Session) undoInGuest(ctx context.Context, state string, t *Tuning) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	out, err := s.inGuest(ctx, nil, "tune", "rollback", "--state-dir", state)
	if err != nil {
		return fmt.Errorf("undo the tuning in %s: %w (the lab's removal takes the changes with it)", routerNode, err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			s.Logf("  undo: %s", l)
		}
	}
	left, err := s.inGuest(ctx, nil, "tune", "status", "--state-dir", state)
	if err != nil || !strings.Contains(string(left), "journal is empty") {
		return fmt.Errorf("undo the tuning in %s: the journal is not empty after rollback: %s %v", routerNode, left, err)
	}
	if _, err := s.guestCmd(ctx, nil, "rm", "-rf", guestState); err != nil {
		return err
	}
	t.JournalRemoved = true
	s.Logf("  the router is as the demo found it; the journal was empty and is removed")
	return nil
}

// vmSpec is the lab's VM part for Config.VM: the router a guest with
// e1000e NICs (the igb family's sibling, as on the seeds' boxes).
func vmSpec(c *Config) *lab.VM {
	if !c.VM {
		return nil
	}
	return &lab.VM{Nodes: []string{routerNode}, NIC: vm.E1000E, Binary: c.Self}
}
