package search

import (
	"context"
	"errors"
	"math"
	"math/rand"
	"testing"
	"time"

	"linerate/ceiling"
)

// device simulates a device under test: it forwards up to capacity frames
// per second (the capacity of one trial varies by noise, a relative
// standard deviation) and loses each frame with probability stray besides.
type device struct {
	capacity, noise, stray float64
	// buffer is how many frames the device queues before it drops: a
	// trial loses nothing while its excess over capacity fits.
	buffer float64
	rng    *rand.Rand
	trials int
}

func (d *device) trial(_ context.Context, spec TrialSpec) (TrialResult, error) {
	d.trials++
	secs := spec.Duration.Seconds()
	sent := uint64(math.Round(spec.Rate * secs))
	c := d.capacity
	if d.noise > 0 {
		c *= 1 + d.noise*d.rng.NormFloat64()
	}
	recv := math.Min(float64(sent), c*secs+d.buffer)
	if d.stray > 0 {
		// Poisson-distributed stray losses (Knuth's method: the mean is small).
		mean, k, p := recv*d.stray, 0.0, 1.0
		for l := math.Exp(-mean); ; k++ {
			p *= d.rng.Float64()
			if p <= l {
				break
			}
		}
		recv -= k
	}
	return TrialResult{Sent: sent, Received: uint64(math.Max(0, math.Floor(recv)))}, nil
}

func config() Config {
	return Config{
		Goals:   []Goal{NDR, PDR(0.005)},
		MinRate: 1e4, MaxRate: 1488095, // 64-byte frames at 1 Gb/s
		Precision:  0.01,
		FinalTrial: 2 * time.Second,
	}
}

func within(t *testing.T, what string, got, lo, hi float64) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %.0f, want %.0f to %.0f", what, got, lo, hi)
	}
}

// checkDeterministic checks a search of a device that loses nothing up to
// capacity and everything above: NDR within the precision below the
// capacity, PDR below capacity/(1−0.005), and a confirmation for each.
func checkDeterministic(t *testing.T, res Result, capacity float64, p float64) {
	t.Helper()
	ndr, _ := res.Goal("ndr")
	pdr, _ := res.Goal("pdr")
	within(t, "ndr", ndr.Rate, capacity*(1-p)*0.999, capacity)
	within(t, "pdr", pdr.Rate, capacity/(1-0.005)*(1-p)*0.999, capacity/(1-0.005)*1.0001)
	if ndr.Upper > 0 && width(ndr.Rate, ndr.Upper) > p*1.0001 {
		t.Errorf("ndr interval %.0f–%.0f wider than %g", ndr.Rate, ndr.Upper, p)
	}
}

func TestRunDeterministic(t *testing.T) {
	for _, capacity := range []float64{1e6, 812743, 1.2e5, 25000, 1450000} {
		d := &device{capacity: capacity}
		res, err := Run(context.Background(), config(), d.trial)
		if err != nil {
			t.Fatal(err)
		}
		checkDeterministic(t, res, capacity, 0.01)
		confirms := 0
		for _, r := range res.Trials {
			if r.Purpose == PurposeConfirm {
				confirms++
				if r.Spec.Duration != 2*time.Second {
					t.Errorf("confirmation of %v", r.Spec.Duration)
				}
			}
		}
		if confirms == 0 {
			t.Errorf("capacity %.0f: no confirmation trial", capacity)
		}
		b, err := Binary(context.Background(), config(), (&device{capacity: capacity}).trial)
		if err != nil {
			t.Fatal(err)
		}
		checkDeterministic(t, b, capacity, 0.01)
	}
}

func TestRunEdges(t *testing.T) {
	// Faster than the maximum: both goals at the maximum, confirmed.
	res, err := Run(context.Background(), config(), (&device{capacity: 3e6}).trial)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range res.Goals {
		if g.Rate != 1488095 || g.Upper != 0 || g.Failed {
			t.Errorf("%+v", g)
		}
	}
	if len(res.Trials) != 3 {
		t.Errorf("%d trials for a device faster than the maximum, want 3 (max rate short, max rate final, confirm)", len(res.Trials))
	}
	// Slower than the minimum: failed.
	res, err = Run(context.Background(), config(), (&device{capacity: 5000}).trial)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range res.Goals {
		if !g.Failed || g.Rate != 0 {
			t.Errorf("%+v", g)
		}
	}
	b, err := Binary(context.Background(), config(), (&device{capacity: 5000}).trial)
	if err != nil || !b.Goals[0].Failed {
		t.Errorf("binary below the minimum: %+v, %v", b.Goals, err)
	}
}

// TestRunNoisy searches devices whose capacity varies from trial to trial
// and that lose a frame now and then at any rate, with seeded randomness.
func TestRunNoisy(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		d := &device{capacity: 1e6, noise: 0.003, stray: 2e-8, rng: rand.New(rand.NewSource(seed))}
		res, err := Run(context.Background(), config(), d.trial)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		ndr, _ := res.Goal("ndr")
		pdr, _ := res.Goal("pdr")
		// Stray losses at any rate pull NDR down now and then; it must
		// still be found, below the capacity and not far below.
		within(t, "noisy ndr", ndr.Rate, 0.9e6, 1.01e6)
		within(t, "noisy pdr", pdr.Rate, 0.98e6, 1.02e6/(1-0.005))
		if pdr.Rate < ndr.Rate {
			t.Errorf("seed %d: pdr %.0f below ndr %.0f", seed, pdr.Rate, ndr.Rate)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.Goals = nil },
		func(c *Config) { c.MinRate = 0 },
		func(c *Config) { c.MaxRate = c.MinRate },
		func(c *Config) { c.Precision = 0 },
		func(c *Config) { c.Precision = 0.7 },
		func(c *Config) { c.FinalTrial = 0 },
		func(c *Config) { c.Goals = []Goal{PDR(1)} },
	}
	for i, f := range bad {
		c := config()
		f(&c)
		if _, err := Run(context.Background(), c, (&device{capacity: 1}).trial); err == nil {
			t.Errorf("bad config %d: no error", i)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, config(), (&device{capacity: 1e6}).trial); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	c := config()
	c.MaxTrials = 3
	if _, err := Run(context.Background(), c, (&device{capacity: 1e6}).trial); !errors.Is(err, ErrTooManyTrials) {
		t.Errorf("3 trials: %v", err)
	}
	failing := func(context.Context, TrialSpec) (TrialResult, error) { return TrialResult{}, errors.New("peer gone") }
	if _, err := Run(context.Background(), config(), failing); err == nil {
		t.Error("a failing trial gave no error")
	}
}

func TestSummarizeAndLatency(t *testing.T) {
	d := &device{capacity: 8127}
	cfg := config()
	// 1518-byte frames: a 100 Mb/s link carries 8,127 a second, a 100 Mb/s
	// shaper (which does not count FCS, preamble and gap) 8,256.
	cfg.MinRate, cfg.MaxRate = 100, 8256
	res, err := Run(context.Background(), cfg, d.trial)
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(ceiling.SingleFrame(1518), res)
	if s.Size != "1518" || s.FrameBytes != 1518 || s.NDRBps != s.NDRPPS*1518*8 || s.PDRLoss != 0.005 || s.LossBeginsPPS <= s.NDRPPS || len(s.Trials) != len(res.Trials) {
		t.Errorf("summary = %+v", s)
	}
	var loads []float64
	trial := func(ctx context.Context, spec TrialSpec) (TrialResult, error) {
		loads = append(loads, spec.Rate)
		r, err := d.trial(ctx, spec)
		r.Latency = &Latency{P50: 40 * time.Microsecond}
		return r, err
	}
	steps, err := LatencySteps(context.Background(), trial, s.PDRPPS, time.Second)
	if err != nil || len(steps) != 3 || steps[1].Result.Latency == nil || loads[0] != s.PDRPPS*0.1 || loads[2] != s.PDRPPS*0.9 {
		t.Errorf("latency steps %+v at %v: %v", steps, loads, err)
	}
	if _, err := LatencySteps(context.Background(), trial, 0, time.Second); err == nil {
		t.Error("no PDR: no error")
	}
}
