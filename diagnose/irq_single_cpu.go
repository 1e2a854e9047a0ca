package diagnose

import (
	"fmt"
	"strings"

	"linerate/box"
)

// irqSingleCPU: a NIC's interrupts and the NET_RX softirqs concentrated on
// one CPU that is near 100 % while others idle (seed: the RouterPi before
// tuning, "CPU0 100 %, CPU1-3 0 %").
type irqSingleCPU struct{}

func (irqSingleCPU) ID() string { return "irq-single-cpu" }
func (irqSingleCPU) Explain() string {
	return "NIC interrupts and NET_RX softirqs all on one saturated CPU while others idle"
}

func (irqSingleCPU) Check(ev *Evidence) []Finding {
	m, ok := ev.Mean()
	if !ok || len(m.CPU) < 2 {
		return nil
	}
	netrx := m.SoftIRQs["NET_RX"]
	hot, share := argmax(netrx)
	if hot < 0 || share < 0.8 || sum(netrx) < 100 {
		return nil
	}
	use, ok := cpuUse(m, hot)
	if !ok || use.Busy < saturated {
		return nil
	}
	all, spare := otherCPUs(m, hot)
	if len(spare) == 0 {
		return nil
	}
	f := Finding{
		Severity: Critical,
		Subject:  fmt.Sprintf("cpu%d", hot),
		Summary: fmt.Sprintf("all NET_RX softirqs on CPU%d at %s busy (%s softirq), %s idle enough to help",
			hot, pct(use.Busy), pct(use.SoftIRQ), cpusWord(spare)),
		Evidence: []string{
			fmt.Sprintf("NET_RX softirqs: %s on CPU%d = %s of all", rate(netrx[hot]), hot, pct(share*100)),
			fmt.Sprintf("CPU%d: busy %s, softirq %s, irq %s, sys %s", hot, pct(use.Busy), pct(use.SoftIRQ), pct(use.IRQ), pct(use.System)),
		},
	}
	for _, id := range all {
		u, _ := cpuUse(m, id)
		f.Evidence = append(f.Evidence, fmt.Sprintf("CPU%d: busy %s", id, pct(u.Busy)))
	}
	// Spread: each busy NIC's movable IRQs go to a spare CPU; its rx
	// queues steer to the other spare CPUs with RPS.
	next := 0
	pick := func() int { id := spare[next%len(spare)]; next++; return id }
	for i := range ev.Box.NICs {
		n := &ev.Box.NICs[i]
		per := nicIRQRate(m, n)
		if !physical(n) || len(per) <= hot || per[hot] < 1 {
			continue
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s interrupts on CPU%d, %s rx packets", n.Name, rate(per[hot]), hot, rate(rxPPS(m, n))))
		for _, irq := range n.IRQs {
			q, ok := ev.Box.IRQ(irq)
			if !ok || unmovableWhy(q, m) != "" {
				continue
			}
			if len(per) > hot && m.Interrupts[fmt.Sprint(irq)] != nil && sum(m.Interrupts[fmt.Sprint(irq)]) < 1 {
				continue // an idle vector: not worth moving
			}
			f.Fixes = append(f.Fixes, Fix{Kind: FixIRQAffinity, Target: irqTarget(q), Value: one(pick()),
				Note: fmt.Sprintf("move %s (IRQ %d) off CPU%d", q.Name, q.Number, hot)})
		}
		if rxQueueCount(n) <= 1 && !rpsOn(n) {
			f.Fixes = append(f.Fixes, Fix{Kind: FixRPS, Target: n.Name + "/rx-0", Value: one(pick()),
				Note: "process " + n.Name + "'s packets on another CPU"})
		}
	}
	return []Finding{f}
}

// unmovableWhy says what shows that an IRQ ignores its affinity, "" when
// nothing does:
//   - a write of its smp_affinity was refused on the live box;
//   - its effective CPUs lie outside the CPUs it is allowed;
//   - over the sampled seconds its interrupts landed on a CPU it is not
//     allowed (95 % or more of at least 10 a second): the controller does
//     not steer it;
//   - its controller is one known to deliver every MSI through one parent
//     interrupt.
//
// An IRQ allowed 0-3 and effective on CPU0 alone is not evidence: x86's
// APIC delivers to one CPU of the mask by design, and such an IRQ moves.
func unmovableWhy(q *box.IRQ, m box.Rates) string {
	if why, ok := q.Unsupported["smp_affinity_write"]; ok {
		return "writing smp_affinity failed: " + why
	}
	in := map[int]bool{}
	for _, c := range q.AffinityList {
		in[c] = true
	}
	if len(q.AffinityList) > 0 {
		for _, c := range q.Effective {
			if !in[c] {
				return fmt.Sprintf("effective CPU %d is outside smp_affinity_list %s", c, cpuList(append([]int(nil), q.AffinityList...)))
			}
		}
		if per := m.Interrupts[fmt.Sprint(q.Number)]; len(per) > 0 {
			if hot, share := argmax(per); hot >= 0 && !in[hot] && share >= 0.95 && sum(per) >= 10 {
				return fmt.Sprintf("%s of its %s interrupts on CPU%d, which smp_affinity_list %s does not allow",
					pct(share*100), rate(sum(per)), hot, cpuList(append([]int(nil), q.AffinityList...)))
			}
		}
	}
	if knownUnmovableChip(q.Chip) {
		return "this MSI controller delivers all vectors through one parent interrupt"
	}
	return ""
}

// knownUnmovableChip names interrupt controllers that deliver every MSI
// through one parent interrupt, so smp_affinity cannot move a single vector:
// the Raspberry Pi 4 / CM4 PCIe MSI controller (seed "RouterPi": "eth1 PCIe
// interrupt (cannot be changed from CPU0)").
func knownUnmovableChip(chip string) bool {
	c := strings.ToUpper(chip)
	return strings.Contains(c, "BRCM") && strings.Contains(c, "MSI")
}

// irqTarget is the target of an irq-affinity fix: the interrupt named by
// what it serves ("eth0/TxRx-1"), which tune resolves to whatever number it
// has when the fix is applied or replayed at boot; the number only for an
// interrupt box could not name.
func irqTarget(q *box.IRQ) string {
	if q.Ref != "" {
		return q.Ref
	}
	return fmt.Sprint(q.Number)
}

// cpusWord names a set of CPUs: "CPU 1", "CPUs 1-3".
func cpusWord(ids []int) string {
	if len(ids) == 1 {
		return "CPU " + cpuList(ids)
	}
	return "CPUs " + cpuList(ids)
}
