package diagnose

import "fmt"

// irqUnmovable: an IRQ whose affinity can't be changed (a write was
// refused, effective_affinity or the sampled interrupts ignore
// smp_affinity, or a controller known for it — the CM4's PCIe MSI): see
// unmovableWhy.
// Steering has to happen after the interrupt: RPS.
type irqUnmovable struct{}

func (irqUnmovable) ID() string { return "irq-unmovable" }
func (irqUnmovable) Explain() string {
	return "a NIC IRQ that ignores smp_affinity; spread its work with RPS instead"
}

func (irqUnmovable) Check(ev *Evidence) []Finding {
	var out []Finding
	m, haveRates := ev.Mean()
	for i := range ev.Box.NICs {
		n := &ev.Box.NICs[i]
		for _, num := range n.IRQs {
			q, ok := ev.Box.IRQ(num)
			if !ok {
				continue
			}
			why := unmovableWhy(q, m)
			if why == "" {
				continue
			}
			// Where it lands: the effective CPU, else (an empty effective
			// list: the controller never accepted an affinity) the CPU its
			// counts pile up on.
			hot := -1
			if len(q.Effective) == 1 {
				hot = q.Effective[0]
			} else if len(q.Effective) == 0 {
				per := make([]float64, len(q.PerCPU))
				for i, v := range q.PerCPU {
					per[i] = float64(v)
				}
				hot, _ = argmax(per)
			}
			where := "one CPU"
			if hot >= 0 {
				where = fmt.Sprintf("CPU%d", hot)
			}
			f := Finding{
				Severity: Warning,
				Subject:  fmt.Sprintf("irq %d", num),
				Summary:  fmt.Sprintf("IRQ %d (%s) of %s cannot be moved off %s", num, q.Name, n.Name, where),
				Evidence: []string{fmt.Sprintf("smp_affinity_list %s, effective_affinity_list %s, chip %q",
					cpuList(append([]int(nil), q.AffinityList...)), orEmpty(cpuList(append([]int(nil), q.Effective...))), q.Chip)},
			}
			f.Evidence = append(f.Evidence, why)
			if haveRates {
				if v := m.Interrupts[fmt.Sprint(num)]; len(v) > 0 {
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s interrupts", rate(sum(v))))
				}
			}
			if !rpsOn(n) {
				var others []int
				for _, c := range ev.Box.CPUs {
					if c.Online && c.ID != hot {
						others = append(others, c.ID)
					}
				}
				if len(others) > 0 {
					for _, rq := range n.RXQueues {
						f.Fixes = append(f.Fixes, Fix{Kind: FixRPS, Target: fmt.Sprintf("%s/rx-%d", n.Name, rq.Index),
							Value: cpuList(others), Note: "handle packets away from the CPU the IRQ is stuck on"})
					}
				}
			}
			out = append(out, f)
		}
	}
	return out
}

func orEmpty(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}
