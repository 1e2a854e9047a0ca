package diagnose

import (
	"fmt"
)

// piOverclock: a Raspberry Pi whose CPU is the limit (one core saturated at
// its full clock) and that is cool and not throttled: overclocking is
// the remaining lever. Seed 000 measured what it buys on a CM4 CPU-bound
// behind five gigabit ports; seed 001 gives the setting, the highest clock
// its author runs without special cooling. The finding's evidence quotes
// each with its own figures. Advice only: a config.txt edit, never applied
// by linerate.
type piOverclock struct{}

func (piOverclock) ID() string { return "pi-overclock" }
func (piOverclock) Explain() string {
	return "a Raspberry Pi CPU-bound at full clock and cool: overclocking is the lever left"
}

// coolEnough is the SoC temperature under which a Pi has headroom (the
// firmware throttles at 80 °C, soft-limits from 60 °C on some boards; an
// overclock adds some 10 °C).
const coolEnough = 65.0

// overclockKHz is the clock the advice sets (seed 001's arm_freq=2000):
// a Pi whose full clock is already that fast or faster (a Pi 5, one
// overclocked already) gets no advice, which would slow it down.
const overclockKHz = 2_000_000

func (piOverclock) Check(ev *Evidence) []Finding {
	t := ev.Box.Throttle
	if t == nil || t.Throttled || t.FreqCapped || t.UnderVoltage || t.SoftTempLimit ||
		t.ThrottledOccurred || t.UnderVoltageOccurred {
		return nil // not a Pi, or already at a limit an overclock makes worse
	}
	m, ok := ev.Mean()
	if !ok {
		return nil
	}
	hot := 0.0
	for _, z := range ev.Box.Thermal {
		hot = max(hot, z.Celsius)
	}
	if hot == 0 || hot >= coolEnough {
		return nil
	}
	for _, c := range ev.Box.CPUs {
		u, ok := cpuUse(m, c.ID)
		if !ok || u.Busy < saturated || c.MaxKHz == 0 || c.CurKHz < c.MaxKHz || c.MaxKHz >= overclockKHz {
			continue
		}
		return []Finding{{Severity: Info, Subject: "box",
			Summary: fmt.Sprintf("CPU%d is %s busy at its full %.2f GHz, the SoC is at %.0f °C and not throttled: an overclock is the lever left",
				c.ID, pct(u.Busy), float64(c.MaxKHz)/1e6, hot),
			Evidence: []string{
				fmt.Sprintf("CPU%d: busy %s at %d kHz (maximum %d kHz)", c.ID, pct(u.Busy), c.CurKHz, c.MaxKHz),
				fmt.Sprintf("hottest thermal zone %.1f °C; get_throttled 0x%x", hot, t.Raw),
				"seed 000: a CM4 CPU-bound behind five gigabit ports gave about 3.06 Gb/s at 1.5 GHz and about 3.4 Gb/s at 2.147 GHz",
				"seed 001: over_voltage=6 with arm_freq=2000 (2.0 GHz), as high as its author goes without special cooling; not every board is stable",
			},
			Fixes: []Fix{{Kind: FixBoot, Target: "config.txt", Value: fmt.Sprintf("over_voltage=6,arm_freq=%d", overclockKHz/1000),
				Note: "advice: edit config.txt by hand, reboot, watch vcgencmd get_throttled and the temperature under load"}}}}
	}
	return nil
}
