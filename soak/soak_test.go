package soak

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/results"
	"linerate/source/sysfs"
)

// box is a sysfs tree whose temperature, clocks and firmware bits a test
// changes between seconds, as a heating box's kernel does.
type box struct {
	t    *testing.T
	root string
	pi   bool
}

func newBox(t *testing.T, cpus int, pi bool) *box {
	b := &box{t: t, root: t.TempDir(), pi: pi}
	files := map[string]string{
		"devices/system/cpu/online":               fmt.Sprintf("0-%d\n", cpus-1),
		"class/thermal/thermal_zone0/type":        "cpu-thermal\n",
		"class/thermal/thermal_zone1/type":        "gpu-thermal\n",
		"class/thermal/thermal_zone1/temp":        "40000\n",
		"class/thermal/cooling_device0/cur_state": "0\n",
	}
	for c := range cpus {
		d := fmt.Sprintf("devices/system/cpu/cpu%d/cpufreq/", c)
		files[d+"cpuinfo_max_freq"], files[d+"cpuinfo_min_freq"], files[d+"scaling_governor"] = "1500000\n", "600000\n", "ondemand\n"
	}
	testenv.WriteFiles(t, b.root, files)
	b.set(50, 1500000, 0)
	return b
}

// set writes the SoC's temperature, every CPU's clock and, on a Pi, the
// firmware's bits.
func (b *box) set(celsius float64, khz int64, bits uint32) {
	files := map[string]string{"class/thermal/thermal_zone0/temp": fmt.Sprintf("%d\n", int64(celsius*1000))}
	for c := 0; c < 4; c++ {
		files[fmt.Sprintf("devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", c)] = fmt.Sprintf("%d\n", khz)
	}
	if b.pi {
		files["devices/platform/soc/soc:firmware/get_throttled"] = fmt.Sprintf("%x\n", bits)
	}
	testenv.WriteFiles(b.t, b.root, files)
}

// second is one second of a load at bps received.
func second(t float64, bps float64) results.IntervalStats {
	return results.IntervalStats{T: t, Warmup: t <= 1, SentBPS: bps, ReceivedBPS: bps}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// A Pi heating under gigabit routing: cool and fast, then at 80 °C the
// firmware throttles and the rate falls; the soak names the second, the
// temperature, the rates before and after, that it did not recover, and
// stops the load after its grace.
func TestSoakPiThrottles(t *testing.T) {
	b := newBox(t, 4, true)
	w := New(sysfs.NewFS(b.root), 10*time.Minute, 3*time.Second)
	stopAt := 0.0
	for s := 1; s <= 20 && stopAt == 0; s++ {
		bps := 940e6
		switch {
		case s < 8:
			b.set(60+float64(s)*2.5, 1500000, 0)
		default:
			// Throttled from second 8 on: 80 °C, the clock capped.
			b.set(80.5, 1000000, 0x60006)
			bps = 610e6
		}
		if s == 1 {
			bps = 500e6 // warmup, left out of the rate before
		}
		if w.Observe(second(float64(s), bps)) {
			stopAt = float64(s)
		}
	}
	if w.Err() != nil {
		t.Fatal(w.Err())
	}
	r := w.Result()
	th := r.Throttle
	if th == nil {
		t.Fatalf("no throttle in %+v", r.Samples)
	}
	if th.At != 8 || th.Zone != "thermal_zone0" || th.Celsius != 80.5 || !strings.Contains(th.Why, "get_throttled 0x60006") {
		t.Errorf("throttle %+v", th)
	}
	if !near(th.BPSBefore, 940e6) || !near(th.BPSAfter, 610e6) || th.Recovered || th.AfterUnknown {
		t.Errorf("rates: before %v after %v recovered %v", th.BPSBefore, th.BPSAfter, th.Recovered)
	}
	if th.KHzBefore != 1500000 || th.KHzAfter != 1000000 {
		t.Errorf("clocks: before %d after %d", th.KHzBefore, th.KHzAfter)
	}
	if stopAt != 11 || len(r.Samples) != 11 {
		t.Errorf("stopped at second %v with %d samples, want 11 (3 s after the throttle)", stopAt, len(r.Samples))
	}
	if s := r.Samples[4]; s.Throttled == nil || len(s.Zones) != 2 || s.Zones[0].Celsius != 72.5 || len(s.KHz) != 4 || s.KHz[3] != 1500000 {
		t.Errorf("second 5: %+v", s)
	}
}

// A PC without the Pi's firmware: the clock falls below the fastest it
// ran at (the thermal limit), then comes back; a governor slowing idle
// CPUs while one stays fast is not a throttle.
func TestSoakClockDropRecovers(t *testing.T) {
	b := newBox(t, 4, false)
	w := New(sysfs.NewFS(b.root), time.Minute, 5*time.Second)
	for s := 1; s <= 30; s++ {
		bps := 2e9
		switch {
		case s == 4:
			// Idle CPUs slow down, the busy one stays at its peak.
			testenv.WriteFiles(t, b.root, map[string]string{
				"devices/system/cpu/cpu1/cpufreq/scaling_cur_freq": "600000\n",
				"devices/system/cpu/cpu2/cpufreq/scaling_cur_freq": "600000\n"})
		case s == 6:
			b.set(95, 1200000, 0)
			bps = 1.5e9
		case s > 6:
			b.set(85, 1500000, 0)
		}
		if w.Observe(second(float64(s), bps)) {
			break
		}
	}
	r := w.Result()
	th := r.Throttle
	if th == nil || th.At != 6 || th.Celsius != 95 || !strings.Contains(th.Why, "1200 MHz, down from 1500 MHz") {
		t.Fatalf("throttle %+v", th)
	}
	if !th.Recovered || !near(th.BPSAfter, 2e9) || !near(th.BPSBefore, 2e9) {
		t.Errorf("rates %+v", th)
	}
	if len(r.Samples) != 11 {
		t.Errorf("%d samples, want 11 (5 s after the throttle)", len(r.Samples))
	}
}

// A box that holds: no throttle, every second kept, the load runs to its
// end; a box without thermal zones or cpufreq still records the rate.
func TestSoakHolds(t *testing.T) {
	b := newBox(t, 2, false)
	w := New(sysfs.NewFS(b.root), 30*time.Second, 5*time.Second)
	for s := 1; s <= 30; s++ {
		if w.Observe(second(float64(s), 1e9)) {
			t.Fatalf("stopped at second %d without a throttle", s)
		}
	}
	if r := w.Result(); r.Throttle != nil || len(r.Samples) != 30 || r.Limit != 30 {
		t.Errorf("%+v", r)
	}
	bare := New(sysfs.NewFS(t.TempDir()), time.Minute, time.Second)
	bare.Observe(second(1, 5e8))
	if r := bare.Result(); len(r.Samples) != 1 || r.Samples[0].BPS != 5e8 || r.Samples[0].Zones != nil || bare.Err() == nil {
		t.Errorf("bare box: %+v, err %v", r, bare.Err())
	}
}
