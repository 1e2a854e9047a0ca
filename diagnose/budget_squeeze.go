package diagnose

import (
	"fmt"
	"strconv"
)

// budgetSqueeze: time_squeeze (the NAPI poll ran out of budget or time with
// work left) rising together with drops → raise netdev_budget. A squeeze
// alone is normal under load and only noted.
type budgetSqueeze struct{}

func (budgetSqueeze) ID() string { return "budget-squeeze" }
func (budgetSqueeze) Explain() string {
	return "NAPI budget exhausted (time_squeeze) together with drops"
}

func (budgetSqueeze) Check(ev *Evidence) []Finding {
	m, ok := ev.Mean()
	if !ok {
		return nil
	}
	var squeeze, dropped float64
	var lines []string
	for _, s := range m.Softnet {
		if s.TimeSqueeze > 0 {
			squeeze += s.TimeSqueeze
			lines = append(lines, fmt.Sprintf("CPU%d: time_squeeze %s, dropped %s", s.CPU, rate(s.TimeSqueeze), rate(s.Dropped)))
		}
		dropped += s.Dropped
	}
	for _, n := range ev.Box.NICs {
		d := m.NetDev[n.Name]
		dropped += d.RxDrops + d.RxFifo
	}
	if squeeze <= 0 {
		return nil
	}
	budget, _ := ev.Box.Sysctl("net.core.netdev_budget")
	usecs, _ := ev.Box.Sysctl("net.core.netdev_budget_usecs")
	lines = append(lines, "netdev_budget = "+budget+", netdev_budget_usecs = "+usecs)
	if dropped <= 0 {
		return []Finding{{Severity: Info, Subject: "box",
			Summary:  "time_squeeze is rising but nothing is dropped: NAPI yields the CPU as designed, not a problem",
			Evidence: lines}}
	}
	b, _ := strconv.Atoi(budget)
	u, _ := strconv.Atoi(usecs)
	fixes := []Fix{{Kind: FixSysctl, Target: "net.core.netdev_budget", Value: strconv.Itoa(max(600, 2*b)),
		Note: "more packets per NAPI round"}}
	if u > 0 {
		fixes = append(fixes, Fix{Kind: FixSysctl, Target: "net.core.netdev_budget_usecs", Value: strconv.Itoa(max(4000, 2*u)),
			Note: "more time per NAPI round"})
	}
	return []Finding{{Severity: Warning, Subject: "box",
		Summary:  fmt.Sprintf("NAPI runs out of budget (%s squeezes) while %s packets are dropped", rate(squeeze), rate(dropped)),
		Evidence: lines, Fixes: fixes}}
}
