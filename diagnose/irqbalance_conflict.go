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
	on := map[int]bool{}
	for _, q := range b.IRQs {
		if len(q.AffinityList) > 0 && len(q.AffinityList) < len(b.CPUs) {
			pinned = append(pinned, fmt.Sprintf("IRQ %d (%s) pinned to %s", q.Number, q.Name, cpuList(append([]int(nil), q.AffinityList...))))
			for _, c := range q.AffinityList {
				on[c] = true
			}
		}
	}
	f := Finding{Severity: Info, Subject: "box",
		Summary:  "irqbalance is running: any IRQ affinity set by hand will be moved again",
		Evidence: append([]string{"irqbalance process found"}, pinned...),
		Fixes:    []Fix{{Kind: FixIRQBalance, Target: "box", Value: "stop", Note: "or ban the CPUs of the pinned IRQs (irqbalance-banned)"}}}
	if len(pinned) > 0 {
		f.Severity = Warning
		if len(on) < len(b.CPUs) {
			var cpus []int
			for c := range on {
				cpus = append(cpus, c)
			}
			// Keep irqbalance for the rest of the box, away from the CPUs
			// the NIC's interrupts were given.
			f.Fixes = append([]Fix{{Kind: FixIRQBalanceBanned, Target: "box", Value: cpuList(cpus),
				Note: "irqbalance leaves these CPUs and their interrupts alone, and keeps balancing the rest"}}, f.Fixes...)
		}
	}
	return []Finding{f}
}
