// Package soak watches a box's heat while a load runs on it (bench
// --soak): once a second it reads every thermal zone, each CPU's clock and
// the Raspberry Pi firmware's throttle bits under a sysfs root, beside the
// second's rate, and finds the first throttle: the firmware saying it caps
// the clock, or the fastest CPU's clock falling well below the fastest it
// ran at earlier in the soak (a governor that slows idle CPUs leaves the
// busy one fast). From the seconds before and after it says the rate
// before, the rate after and whether the rate came back, and when the
// load has run long enough past the throttle to tell.
//
// It reads through a sysfs.FS, so tests point it at a tree whose files
// they change during the run.
package soak

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"time"

	"linerate/results"
	"linerate/source/sysfs"
)

// Firmware bits of get_throttled that mean "capping the clock now": arm
// frequency capped, throttled, soft temperature limit (bit 0, under-voltage
// now, caps nothing by itself).
const firmwareCapping = 1<<1 | 1<<2 | 1<<3

// clockDrop is the share of the fastest clock seen in the soak under which
// the fastest CPU counts as throttled.
const clockDrop = 0.9

// recoveredSeconds is how many of the last seconds must run at
// results.RecoveredShare of the rate before for the rate to count as
// recovered.
const recoveredSeconds = 5

// Watcher records a soak, one Observe per second of the load.
type Watcher struct {
	fs    sysfs.FS
	after time.Duration
	soak  results.Soak
	peak  int64 // the fastest clock any CPU ran at so far, kHz
	err   error
}

// New watches the box whose sysfs is fs for a load of at most limit, and
// says to stop once it ran after past the first throttle.
func New(fs sysfs.FS, limit, after time.Duration) *Watcher {
	return &Watcher{fs: fs, after: after, soak: results.Soak{Limit: limit.Seconds()}}
}

// Observe records the second iv of the load with the box's heat read now,
// and says whether the soak has seen enough: the load ran after past the
// first throttle. A read that fails is kept for Err and the second is
// recorded with what could be read.
func (w *Watcher) Observe(iv results.IntervalStats) (stop bool) {
	s := results.SoakSample{T: iv.T, Warmup: iv.Warmup}
	switch {
	case !iv.ReceivedUnknown && iv.ReceivedBPS > 0:
		s.BPS = iv.ReceivedBPS
	case !iv.SentUnknown:
		s.BPS = iv.SentBPS
	default:
		s.RateUnknown = true
	}
	w.read(&s)
	prev := w.soak.Samples
	w.soak.Samples = append(w.soak.Samples, s)
	if t := w.soak.Throttle; t != nil {
		return iv.T-t.At >= w.after.Seconds()
	}
	if why := w.throttled(s); why != "" {
		t := &results.SoakThrottle{At: s.T, Why: why}
		if z, ok := s.Hottest(); ok {
			t.Zone, t.Celsius = z.Name, z.Celsius
		}
		if len(prev) > 0 {
			t.KHzBefore = slowest(prev[len(prev)-1].KHz)
		}
		w.soak.Throttle = t
		return w.after <= 0
	}
	return false
}

// read fills s with the thermal zones, clocks and firmware bits.
func (w *Watcher) read(s *results.SoakSample) {
	zones, err := w.fs.ThermalZones()
	w.keep("thermal zones", err)
	for _, z := range zones {
		s.Zones = append(s.Zones, results.SoakZone{Name: z.Name, Type: z.Type, Celsius: float64(z.MilliCelsius) / 1000})
	}
	cpus, err := w.fs.CPUs()
	w.keep("CPU clocks", err)
	for _, c := range cpus {
		for len(s.KHz) <= c.ID {
			s.KHz = append(s.KHz, 0)
		}
		if c.CPUFreq != nil && c.Online {
			s.KHz[c.ID] = c.CPUFreq.CurKHz
		}
	}
	v, _, err := w.fs.RPiThrottled()
	if err == nil {
		s.Throttled = &v
	} else if !errors.Is(err, iofs.ErrNotExist) {
		w.keep("get_throttled", err)
	}
}

func (w *Watcher) keep(what string, err error) {
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("soak: %s: %w", what, err)
	}
}

// throttled says why s is throttled, "" when it is not; it raises the
// clock peak.
func (w *Watcher) throttled(s results.SoakSample) string {
	if s.Throttled != nil && *s.Throttled&firmwareCapping != 0 {
		return fmt.Sprintf("the firmware caps the clock (get_throttled 0x%x)", *s.Throttled)
	}
	fast := fastest(s.KHz)
	if w.peak > 0 && fast > 0 && float64(fast) < clockDrop*float64(w.peak) {
		return fmt.Sprintf("the fastest CPU ran at %d MHz, down from %d MHz", fast/1000, w.peak/1000)
	}
	w.peak = max(w.peak, fast)
	return ""
}

func fastest(khz []int64) int64 {
	var f int64
	for _, k := range khz {
		f = max(f, k)
	}
	return f
}

// slowest is the slowest clock of the CPUs that have one.
func slowest(khz []int64) int64 {
	var s int64
	for _, k := range khz {
		if k > 0 && (s == 0 || k < s) {
			s = k
		}
	}
	return s
}

// Err is the first read of the box that failed, nil when none did.
func (w *Watcher) Err() error { return w.err }

// Result returns the soak with the figures around its throttle.
func (w *Watcher) Result() *results.Soak {
	out := w.soak
	out.Samples = append([]results.SoakSample(nil), w.soak.Samples...)
	t := w.soak.Throttle
	if t == nil {
		return &out
	}
	tc := *t
	var before, after []results.SoakSample
	for _, s := range out.Samples {
		switch {
		case s.Warmup || s.RateUnknown:
		case s.T < t.At:
			before = append(before, s)
		default:
			after = append(after, s)
			if k := slowest(s.KHz); k > 0 && (tc.KHzAfter == 0 || k < tc.KHzAfter) {
				tc.KHzAfter = k
			}
		}
	}
	tc.BPSBefore = meanBPS(before)
	if len(after) <= 1 {
		// Only the throttled second itself: nothing after it to judge by.
		tc.AfterUnknown = true
	} else {
		tc.BPSAfter = meanBPS(after[1:])
		tail := after[max(1, len(after)-recoveredSeconds):]
		tc.Recovered = tc.BPSBefore > 0 && meanBPS(tail) >= results.RecoveredShare*tc.BPSBefore
	}
	out.Throttle = &tc
	return &out
}

func meanBPS(ss []results.SoakSample) float64 {
	if len(ss) == 0 {
		return 0
	}
	var sum float64
	for _, s := range ss {
		sum += s.BPS
	}
	return sum / float64(len(ss))
}
