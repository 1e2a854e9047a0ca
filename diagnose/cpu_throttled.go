package diagnose

import "fmt"

// cpuThrottled: thermal or under-voltage throttling (the Pi firmware's
// flags), a clock below its maximum while busy, or the powersave governor.
type cpuThrottled struct{}

func (cpuThrottled) ID() string { return "cpu-throttled" }
func (cpuThrottled) Explain() string {
	return "CPU clock held down: throttling, under-voltage or the powersave governor"
}

func (cpuThrottled) Check(ev *Evidence) []Finding {
	var out []Finding
	if t := ev.Box.Throttle; t != nil && (t.Throttled || t.FreqCapped || t.UnderVoltage || t.SoftTempLimit) {
		f := Finding{Severity: Critical, Subject: "box",
			Summary:  "the firmware is throttling the CPU now",
			Evidence: []string{fmt.Sprintf("get_throttled = 0x%x (%s)", t.Raw, t.Source)}}
		if t.UnderVoltage {
			f.Evidence = append(f.Evidence, "under-voltage: use a supply that holds 5.1 V under load")
		}
		if t.SoftTempLimit || t.Throttled {
			f.Evidence = append(f.Evidence, "temperature limit: add a heatsink or fan (seed: the RouterPi throttles at 80 °C after a few minutes of gigabit routing)")
		}
		out = append(out, f)
	}
	for _, z := range ev.Box.Thermal {
		if z.Celsius >= 80 {
			out = append(out, Finding{Severity: Warning, Subject: z.Name,
				Summary:  fmt.Sprintf("%s (%s) at %.1f °C, at the usual throttling point", z.Name, z.Type, z.Celsius),
				Evidence: []string{fmt.Sprintf("%s = %.1f °C", z.Name, z.Celsius)}})
		}
	}
	var powersave []int
	for _, c := range ev.Box.CPUs {
		if c.Governor == "powersave" {
			powersave = append(powersave, c.ID)
		}
	}
	if len(powersave) > 0 {
		out = append(out, Finding{Severity: Warning, Subject: "cpu" + cpuList(powersave),
			Summary:  "CPUs " + cpuList(powersave) + " use the powersave governor",
			Evidence: []string{"scaling_governor = powersave"},
			Fixes:    []Fix{{Kind: FixGovernor, Target: "all", Value: "performance", Note: "run at full clock while routing"}}})
	}
	m, ok := ev.Mean()
	if !ok {
		return out
	}
	var slow []string
	for _, c := range ev.Box.CPUs {
		u, ok := cpuUse(m, c.ID)
		cur := m.CurKHz[c.ID]
		if !ok || c.MaxKHz <= 0 || cur <= 0 || u.Busy < saturated {
			continue
		}
		if float64(cur) < 0.9*float64(c.MaxKHz) {
			slow = append(slow, fmt.Sprintf("CPU%d busy %s at %d MHz of %d MHz", c.ID, pct(u.Busy), cur/1000, c.MaxKHz/1000))
		}
	}
	if len(slow) > 0 {
		out = append(out, Finding{Severity: Warning, Subject: "box",
			Summary:  "busy CPUs run below their maximum clock",
			Evidence: slow,
			Fixes:    []Fix{{Kind: FixGovernor, Target: "all", Value: "performance", Note: "or cooling, if the firmware caps the clock"}}})
	}
	return out
}
