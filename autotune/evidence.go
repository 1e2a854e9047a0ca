package autotune

import (
	"context"
	"fmt"

	"linerate/diagnose"
)

// Evidence reads the device under test's configuration now and builds
// diagnose's input from measurements of this rig the way `tune auto` does
// from its baseline: the device under test's counters over each measured
// window, and what the load generator saw. The demo diagnoses with it
// before it runs the loop.
func (r *Rig) Evidence(ctx context.Context, ms ...Measurement) (*diagnose.Evidence, error) {
	if r.Inspect == nil {
		return nil, fmt.Errorf("the rig has no reader of %s", r.DUT)
	}
	b, err := r.Inspect(ctx)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.DUT, err)
	}
	a := &auto{rig: r, base: ms}
	return a.evidence(b), nil
}
