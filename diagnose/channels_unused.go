package diagnose

import (
	"fmt"
)

// channelsUnused: a busy NIC that has more queues (channels) than it uses
// while CPUs sit idle: RSS can only spread over the queues that exist
// (seed 003's APU: the i211's two queues, each on its own CPU).
type channelsUnused struct{}

func (channelsUnused) ID() string { return "channels-unused" }
func (channelsUnused) Explain() string {
	return "a busy NIC uses fewer queues than it has, while CPUs are idle"
}

func (channelsUnused) Check(ev *Evidence) []Finding {
	m, ok := ev.Mean()
	if !ok {
		return nil
	}
	online := 0
	for _, c := range ev.Box.CPUs {
		if c.Online {
			online++
		}
	}
	var out []Finding
	for i := range ev.Box.NICs {
		n := &ev.Box.NICs[i]
		c := n.Channels
		if !physical(n) || c == nil {
			continue
		}
		pps := m.NetDev[n.Name].RxPps + m.NetDev[n.Name].TxPps
		if pps < busyPPS {
			continue
		}
		var want uint32
		var field string
		switch {
		case c.MaxCombined > c.Combined:
			field, want = "combined", c.MaxCombined
		case c.MaxRX > c.RX && c.Combined == 0:
			field, want = "rx", c.MaxRX
		default:
			continue
		}
		if online > 0 && want > uint32(online) {
			want = uint32(online)
		}
		have := c.Combined
		if field == "rx" {
			have = c.RX
		}
		if want <= have {
			continue
		}
		// More queues help only where their interrupts can go to other
		// CPUs: the CM4's PCIe MSIs all land on CPU0 (irq-unmovable), and
		// RPS is the fix there.
		movable := len(n.IRQs) == 0
		for _, irq := range n.IRQs {
			if q, ok := ev.Box.IRQ(irq); ok && unmovableWhy(q, m) == "" {
				movable = true
			}
		}
		if !movable {
			continue
		}
		var spare []int
		for _, cpu := range ev.Box.CPUs {
			if u, ok := cpuUse(m, cpu.ID); ok && u.Busy < idleEnough {
				spare = append(spare, cpu.ID)
			}
		}
		if len(spare) == 0 {
			continue
		}
		out = append(out, Finding{Severity: Warning, Subject: n.Name,
			Summary: fmt.Sprintf("%s uses %d of its %d %s queues at %s packets while %s idle", n.Name, have,
				map[bool]uint32{true: c.MaxCombined, false: c.MaxRX}[field == "combined"], field, rate(pps), cpusWord(spare)),
			Evidence: []string{
				fmt.Sprintf("ethtool -l %s: %s %d, maximum %d", n.Name, field, have, map[bool]uint32{true: c.MaxCombined, false: c.MaxRX}[field == "combined"]),
				fmt.Sprintf("%s: %s rx + tx packets", n.Name, rate(pps)),
			},
			Fixes: []Fix{{Kind: FixChannels, Target: n.Name, Value: fmt.Sprintf("%s=%d", field, want),
				Note: "more queues for RSS to spread over; resets the link"}}})
	}
	return out
}
