package diagnose

import (
	"strings"
	"testing"

	"linerate/box"
)

// piBox is a Pi at its full clock of maxKHz with CPU0 busy% busy, at
// celsius, never throttled.
func piEvidence(maxKHz int64, busy, celsius float64) *Evidence {
	return &Evidence{
		Box: &box.Box{
			CPUs:     []box.CPU{{ID: 0, Online: true, CurKHz: maxKHz, MaxKHz: maxKHz}, {ID: 1, Online: true, CurKHz: maxKHz, MaxKHz: maxKHz}},
			Thermal:  []box.ThermalZone{{Name: "thermal_zone0", Type: "cpu-thermal", Celsius: celsius}},
			Throttle: &box.Throttle{Source: "vcgencmd"},
		},
		Rates: []box.Rates{{Seconds: 1, CPU: []box.CPUUse{{ID: 0, Busy: busy}, {ID: 1, Busy: 20}}}},
	}
}

// TestPiOverclock: the finding credits each seed with what it measured
// (seed 000: 2.147 GHz and about 3.4 Gb/s; seed 001: over_voltage=6,
// arm_freq=2000) and advises seed 001's setting; a Pi already at 2 GHz or
// more (a Pi 5) is not told to slow down.
func TestPiOverclock(t *testing.T) {
	fs := piOverclock{}.Check(piEvidence(1_500_000, 99, 50))
	if len(fs) != 1 {
		t.Fatalf("a CM4 at 1.5 GHz, CPU-bound and cool: %d findings", len(fs))
	}
	ev := strings.Join(fs[0].Evidence, "\n")
	for _, want := range []string{"seed 000: a CM4 CPU-bound behind five gigabit ports gave about 3.06 Gb/s at 1.5 GHz and about 3.4 Gb/s at 2.147 GHz",
		"seed 001: over_voltage=6 with arm_freq=2000"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q:\n%s", want, ev)
		}
	}
	if strings.Contains(ev, "seed 001: 3.06") || strings.Contains(ev, "seed 001: 3.4") {
		t.Errorf("seed 000's figures credited to seed 001:\n%s", ev)
	}
	if len(fs[0].Fixes) != 1 || fs[0].Fixes[0].Value != "over_voltage=6,arm_freq=2000" {
		t.Errorf("fixes %+v, want seed 001's over_voltage=6,arm_freq=2000", fs[0].Fixes)
	}
	for _, tc := range []struct {
		name          string
		maxKHz        int64
		busy, celsius float64
	}{
		{"a Pi 5 at 2.4 GHz", 2_400_000, 99, 50},
		{"already at 2.0 GHz", 2_000_000, 99, 50},
		{"not CPU-bound", 1_500_000, 40, 50},
		{"hot", 1_500_000, 99, 70},
	} {
		if fs := (piOverclock{}).Check(piEvidence(tc.maxKHz, tc.busy, tc.celsius)); len(fs) != 0 {
			t.Errorf("%s: %+v", tc.name, fs)
		}
	}
}
