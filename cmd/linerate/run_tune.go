//go:build !small

package main

import (
	"fmt"
	"os"

	"linerate/internal/usage"
	"linerate/plan"
	"linerate/tune"
)

// openMatrixTune reads pl's matrix tune plan (matrix: tune: FILE) and
// plans it against the system it names, here or in its namespace: every
// item must be possible there. A mistake is the plan's file:line. The
// plan is held by the run (plan.Runner) over the "tune on" cells; the
// caller closes the system.
func openMatrixTune(pl *plan.Plan, stateDir string) (*tune.Held, tune.System, error) {
	m := pl.Matrix
	where := fmt.Sprintf("%s:%d: matrix: tune", pl.File, m.TuneLine)
	pf, err := readTuneFile(where, m.Tune, tune.ReadPlanFile)
	if err != nil {
		return nil, nil, err
	}
	sys, err := tune.Open(pf.Netns)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	p, err := tune.PlanItems(sys, pf.Items, nil)
	if err != nil {
		sys.Close()
		return nil, nil, usage.Errorf("%s: %s: %w", where, m.Tune, err)
	}
	return tune.Hold(tune.NewStore(stateDir), sys, p, tuneLockWait), sys, nil
}

// requireRootFor refuses a run that would change the system without the
// rights to; look is the flag that only looks.
func requireRootFor(what, look string) error {
	if os.Geteuid() != 0 {
		return usage.Errorf("%s changes this host's settings: run it as root (or look first with %s)", what, look)
	}
	return nil
}
