package tune

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"linerate/diagnose"
	"linerate/internal/usage"
)

// Systemctl is the systemd service manager, driven through the systemctl
// command (a D-Bus client would be a dependency for three calls). Path is
// the command, "systemctl" (found in PATH) when empty.
type Systemctl struct{ Path string }

func (s Systemctl) cmd() string {
	if s.Path == "" {
		return "systemctl"
	}
	return s.Path
}

func (s Systemctl) run(args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	c := exec.Command(s.cmd(), args...)
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if msg != "" {
			return out, fmt.Errorf("%s %s: %w: %s", s.cmd(), strings.Join(args, " "), err, msg)
		}
		return out, fmt.Errorf("%s %s: %w", s.cmd(), strings.Join(args, " "), err)
	}
	return out, nil
}

// State runs `systemctl show -p LoadState,ActiveState UNIT`.
func (s Systemctl) State(unit string) (ServiceState, error) {
	out, err := s.run("show", "-p", "LoadState,ActiveState", unit)
	if err != nil {
		return ServiceState{}, err
	}
	return ParseServiceState(bytes.NewReader(out))
}

func (s Systemctl) Start(unit string) error { _, err := s.run("start", unit); return err }
func (s Systemctl) Stop(unit string) error  { _, err := s.run("stop", unit); return err }

// ParseServiceState reads the KEY=VALUE lines of `systemctl show -p
// LoadState,ActiveState`: "LoadState=loaded", "ActiveState=active". A unit
// that is not installed shows LoadState=not-found.
func ParseServiceState(r io.Reader) (ServiceState, error) {
	var st ServiceState
	var load string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}
		switch k {
		case "LoadState":
			load = v
		case "ActiveState":
			st.Active = v
		}
	}
	if err := sc.Err(); err != nil {
		return st, err
	}
	if load == "" || st.Active == "" {
		return st, fmt.Errorf("systemctl show: want LoadState= and ActiveState= lines")
	}
	st.Loaded = load == "loaded"
	return st, nil
}

// irqbalanceUnit is the unit of the irqbalance daemon on Debian, Ubuntu,
// Raspberry Pi OS and Fedora.
const irqbalanceUnit = "irqbalance.service"

func init() { builders[diagnose.FixIRQBalance] = buildIRQBalance }

// irqbalance: target "box", value "stop" or "start". The old state is
// whether the unit was active; restoring starts or stops it again.
func buildIRQBalance(sys System, it Item) ([]Action, error) {
	if it.Target != "box" {
		return nil, usage.Errorf("target %q: want box", it.Target)
	}
	if it.Value != "stop" && it.Value != "start" {
		return nil, usage.Errorf("value %q: want stop or start", it.Value)
	}
	if err := hostWide(sys, "irqbalance is the host's"); err != nil {
		return nil, err
	}
	svc, err := sys.Services()
	if err != nil {
		return nil, err
	}
	st, err := svc.State(irqbalanceUnit)
	if err != nil {
		return nil, err
	}
	from := "stop"
	if st.Active == "active" || st.Active == "activating" || st.Active == "reloading" {
		from = "start"
	}
	if !st.Loaded && it.Value == "start" {
		return nil, usage.Errorf("%s is not installed", irqbalanceUnit)
	}
	c := Change{Kind: it.Kind, Target: it.Target, From: from, To: it.Value, Note: it.Note,
		Unchanged: from == it.Value}
	if !st.Loaded {
		c.Note = joinNote(c.Note, "irqbalance is not installed")
	}
	c.Restore = &Item{Kind: it.Kind, Target: it.Target, Value: from}
	return []Action{&irqbalanceAction{sys: sys, svc: svc, c: c}}, nil
}

type irqbalanceAction struct {
	sys System
	svc Services
	c   Change
}

func (a *irqbalanceAction) Describe() Change { return a.c }

func (a *irqbalanceAction) Apply(ctx context.Context) (Undo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := a.svc.State(irqbalanceUnit)
	if err != nil {
		return nil, err
	}
	running := st.Active == "active" || st.Active == "activating"
	if running == (a.c.To == "start") {
		return noUndo, nil
	}
	undo := undoWith(a.sys, *a.c.Restore)
	if a.c.To == "stop" {
		err = a.svc.Stop(irqbalanceUnit)
	} else {
		err = a.svc.Start(irqbalanceUnit)
	}
	if err != nil {
		return undo, err
	}
	st, err = a.svc.State(irqbalanceUnit)
	if err != nil {
		return undo, err
	}
	if running := st.Active == "active" || st.Active == "activating"; running != (a.c.To == "start") {
		return undo, fmt.Errorf("%s: read back %s after %s", irqbalanceUnit, st.Active, a.c.To)
	}
	return undo, nil
}

func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
