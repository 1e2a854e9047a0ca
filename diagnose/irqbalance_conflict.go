package diagnose

import "fmt"

// irqbalanceConflict: irqbalance runs and will rewrite IRQ affinities that
// were (or are about to be) pinned by hand.
type irqbalanceConflict struct{}

func (irqbalanceConflict) ID() string { return "irqbalance-conflict" }
func (irqbalanceConflict) Explain() string {
	return "irqbalance is running and will undo pinned IRQ affinities"
}

func (irqbalanceConflict) Check(ev *Evidence) []Finding {
	b := ev.Box
	if b.IRQBalance == nil || !*b.IRQBalance {
		return nil
	}
	var pinned []string
	for _, q := range b.IRQs {
		if len(q.AffinityList) > 0 && len(q.AffinityList) < len(b.CPUs) {
			pinned = append(pinned, fmt.Sprintf("IRQ %d (%s) pinned to %s", q.Number, q.Name, cpuList(append([]int(nil), q.AffinityList...))))
		}
	}
	f := Finding{Severity: Info, Subject: "box",
		Summary:  "irqbalance is running: any IRQ affinity set by hand will be moved again",
		Evidence: append([]string{"irqbalance process found"}, pinned...),
		Fixes:    []Fix{{Kind: FixIRQBalance, Target: "box", Value: "stop", Note: "or ban the NIC IRQs with IRQBALANCE_BANNED_CPUS / --banirq"}}}
	if len(pinned) > 0 {
		f.Severity = Warning
	}
	return []Finding{f}
}
