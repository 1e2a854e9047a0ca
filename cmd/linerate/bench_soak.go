package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"linerate/internal/usage"
	"linerate/results"
	"linerate/soak"
	"linerate/source/sysfs"
	"linerate/traffic"
)

// soakOptions are bench's --soak flags: keep the load running until this
// box throttles (or --duration ends), watching its heat once a second.
// A flag of bench rather than a command of its own: the load, its
// targets, engines, limits and outputs are bench's, and a soak is a bench
// that ends on what the box does rather than on the clock.
type soakOptions struct {
	on    bool
	after time.Duration
	root  string
}

// soakDefault is --duration with --soak when none is given: long enough
// for a passively cooled board to reach its limit.
const soakDefault = 30 * time.Minute

func (o *soakOptions) flags(f *pflag.FlagSet) {
	f.BoolVar(&o.on, "soak", false, "run until this box throttles or --duration ends (default 30m with --soak), sampling every thermal zone, each CPU's clock and a Pi's throttle bits each second; report the time to the first throttle, the temperature then, the rate before and after and whether it recovered (docs/openwrt.md)")
	secondsVarP(f, &o.after, "soak-after", "", time.Minute, "with --soak: how long the load goes on after the first throttle, to measure the rate after it")
	f.StringVar(&o.root, "soak-sysfs", "/sys", "with --soak: the sysfs tree to read the heat from")
	f.MarkHidden("soak-sysfs")
}

// start checks the flags, sets the run's length, and watches each second
// of cfg's load; ctx ends the load once the soak has seen enough. finish
// puts the soak into the result.
func (o *soakOptions) start(ctx context.Context, cfg *traffic.Config, changed func(string) bool) (context.Context, func(*results.Result) error, error) {
	if !o.on {
		for _, f := range []string{"soak-after", "soak-sysfs"} {
			if changed(f) {
				return ctx, nil, usage.Errorf("--%s goes with --soak", f)
			}
		}
		return ctx, func(*results.Result) error { return nil }, nil
	}
	if o.after < 0 {
		return ctx, nil, usage.Errorf("--soak-after %s: negative", o.after)
	}
	w := soak.New(sysfs.NewFS(o.root), time.Duration(cfg.Spec.Duration), o.after)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	var enough atomic.Bool
	show := cfg.OnInterval
	cfg.OnInterval = func(iv results.IntervalStats) {
		// The heat is read before the second is shown: what the second
		// says was read in it.
		if w.Observe(iv) && !enough.Swap(true) {
			cancel()
		}
		if show != nil {
			show(iv)
		}
	}
	return ctx, func(res *results.Result) error {
		cancel()
		res.Soak = w.Result()
		if enough.Load() && parent.Err() == nil {
			// The soak ended the load, not Ctrl-C.
			res.Interrupted = false
		}
		return w.Err()
	}, nil
}
