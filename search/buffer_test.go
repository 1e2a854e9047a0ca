package search

import (
	"context"
	"math"
	"testing"
	"time"
)

func TestBufferingTrial(t *testing.T) {
	// The lab's 100 Mbit/s tbf: 8,256 frames/s of 1518 bytes, 255.7
	// frames held in its queue and bucket.
	b := Buffering{Frames: 255.7, CeilingFPS: 8256}
	final, longest := 2*time.Second, 20*time.Second
	for _, c := range []struct {
		rate   float64
		want   time.Duration
		capped bool
	}{
		{8000, final, false},                         // below the ceiling: no queue grows
		{8256, final, false},                         // at it
		{8256 * 1.5, final, false},                   // far over: 2 s overflow it many times
		{8256 + 100, 5114 * time.Millisecond, false}, // 2 × 255.7 / 100 s
		{8256 + 20, longest, true},                   // would want 25.6 s
		{8256 + 30, 17047 * time.Millisecond, false}, // 2 × 255.7 / 30 s
	} {
		d, capped := b.Trial(c.rate, final, longest)
		if d.Round(time.Millisecond) != c.want || capped != c.capped {
			t.Errorf("Trial(%.1f) = %v, %v; want %v, %v", c.rate, d, capped, c.want, c.capped)
		}
	}
	if d, _ := (Buffering{CeilingFPS: 8256}).Trial(9000, final, longest); d != final {
		t.Errorf("no buffering: %v, want the final trial", d)
	}
	if h := b.Hides(20*time.Second, 0); math.Abs(h-(8256+255.7/20)) > 1e-9 {
		t.Errorf("Hides(20s, 0) = %v", h)
	}
	// A 10 s trial at 8,310 fps: 540 frames over the ceiling, 255.7 of
	// them held, 284.3 lost of 83,100: 0.34 %, under a PDR's 0.5 %.
	if h := b.Hides(10*time.Second, 0.005); math.Abs(h-(8256+25.57)/0.995) > 1e-9 || h < 8310 {
		t.Errorf("Hides(10s, 0.5 %%) = %v", h)
	}
}

// bufferedConfig searches a device of capacity fps that queues buffer
// frames, with final trials of 1 s: a trial at up to capacity +
// buffer/s loses nothing.
func bufferedConfig(capacity float64) Config {
	return Config{Goals: []Goal{NDR, PDR(0.005)}, MinRate: capacity / 1000, MaxRate: 1.1 * capacity,
		Precision: 0.01, FinalTrial: time.Second, LongestTrial: 30 * time.Second}
}

// TestRunBuffered: a device whose queue holds 255.7 frames passes 1 s
// trials at up to 3 % over its capacity. Without its buffering known the
// NDR lands there; with it, the final trials over the capacity run long
// enough to overflow the queue, and the NDR is over the capacity only by
// what the longest trial allowed can hide, and then says so.
func TestRunBuffered(t *testing.T) {
	const capacity, buffer = 8256, 255.7
	cfg := bufferedConfig(capacity)
	blind, err := Run(context.Background(), cfg, (&device{capacity: capacity, buffer: buffer}).trial)
	if err != nil {
		t.Fatal(err)
	}
	if ndr, _ := blind.Goal("ndr"); ndr.Rate <= 1.01*capacity {
		t.Errorf("without the buffering: NDR %.0f, want it over the capacity (the device as simulated hides loss)", ndr.Rate)
	}
	b := &Buffering{Frames: buffer, CeilingFPS: capacity}
	cfg.Buffering = b
	for name, run := range map[string]func(context.Context, Config, Trial) (Result, error){"mlr": Run, "binary": Binary} {
		res, err := run(context.Background(), cfg, (&device{capacity: capacity, buffer: buffer}).trial)
		if err != nil {
			t.Fatal(err)
		}
		ndr, _ := res.Goal("ndr")
		pdr, _ := res.Goal("pdr")
		t.Logf("%s: NDR %.1f on %v (capped %v), PDR %.1f on %v, %d trials, %.0f s", name, ndr.Rate, ndr.Trial, ndr.Capped, pdr.Rate, pdr.Trial, len(res.Trials), res.TrialSeconds())
		hides := b.Hides(cfg.LongestTrial, 0)
		within(t, name+" ndr", ndr.Rate, capacity*0.99*0.999, hides)
		if ndr.Rate > capacity && !ndr.Capped {
			t.Errorf("%s: NDR %.1f over the capacity, not marked capped", name, ndr.Rate)
		}
		if ndr.Trial < time.Second {
			t.Errorf("%s: NDR rests on a trial of %v", name, ndr.Trial)
		}
		if res.Buffering != b || res.FinalTrial != time.Second || res.LongestTrial != cfg.LongestTrial {
			t.Errorf("%s: result says buffering %+v, final %v, longest %v", name, res.Buffering, res.FinalTrial, res.LongestTrial)
		}
		for _, r := range res.Trials {
			want, _ := b.Trial(r.Spec.Rate, cfg.FinalTrial, cfg.LongestTrial)
			if r.Phase == 3 && r.Spec.Duration != want {
				t.Errorf("%s: final trial at %.1f ran %v, want %v", name, r.Spec.Rate, r.Spec.Duration, want)
			}
		}
	}
}
