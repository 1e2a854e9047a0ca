package search

import (
	"context"
	"math/rand"
	"testing"
)

// TestFewerTrialsThanBinary searches the same simulated devices with Run
// and with Binary at the same precision and compares the trials each
// needed (a count, not a timing: the devices are simulated). Run -v prints
// the table docs/search.md quotes.
func TestFewerTrialsThanBinary(t *testing.T) {
	capacities := []float64{14000, 25000, 81000, 120000, 300000, 440000, 600000, 812743, 1e6, 1.2e6, 1.45e6, 2e6}
	for _, noisy := range []bool{false, true} {
		var mlrTrials, binTrials int
		var mlrSecs, binSecs float64
		t.Logf("noisy=%v: capacity  MLR trials (s)  binary trials (s)", noisy)
		for i, c := range capacities {
			mk := func() *device {
				d := &device{capacity: c}
				if noisy {
					d.noise, d.stray, d.rng = 0.002, 1e-8, rand.New(rand.NewSource(int64(i+1)))
				}
				return d
			}
			m, err := Run(context.Background(), config(), mk().trial)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Binary(context.Background(), config(), mk().trial)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("  %9.0f  %4d (%5.1f)  %4d (%5.1f)", c, len(m.Trials), m.TrialSeconds(), len(b.Trials), b.TrialSeconds())
			mlrTrials += len(m.Trials)
			binTrials += len(b.Trials)
			mlrSecs += m.TrialSeconds()
			binSecs += b.TrialSeconds()
		}
		n := float64(len(capacities))
		t.Logf("noisy=%v mean: MLR %.1f trials, %.1f s; binary %.1f trials, %.1f s", noisy,
			float64(mlrTrials)/n, mlrSecs/n, float64(binTrials)/n, binSecs/n)
		if mlrTrials >= binTrials || mlrSecs >= binSecs {
			t.Errorf("noisy=%v: MLR %d trials (%.0f s), binary %d (%.0f s): MLR should need fewer", noisy, mlrTrials, mlrSecs, binTrials, binSecs)
		}
	}
}
