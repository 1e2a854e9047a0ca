package diagnose

import "fmt"

// coalescingOff: interrupts per second close to packets per second — an
// interrupt for almost every packet (seed: the RouterPi's bcmgenet with
// coalescing off; `ethtool -C eth0 rx-usecs 100 rx-frames 10` left 14 %
// more CPU at the same throughput).
type coalescingOff struct{}

func (coalescingOff) ID() string { return "coalescing-off" }
func (coalescingOff) Explain() string {
	return "about one interrupt per packet: interrupt coalescing off or too low"
}

func (coalescingOff) Check(ev *Evidence) []Finding {
	m, ok := ev.Mean()
	if !ok {
		return nil
	}
	var out []Finding
	for i := range ev.Box.NICs {
		n := &ev.Box.NICs[i]
		pps := rxPPS(m, n) + m.NetDev[n.Name].TxPps
		irqs := sum(nicIRQRate(m, n))
		if !physical(n) || pps < busyPPS || irqs < 0.5*pps {
			continue
		}
		f := Finding{
			Severity: Warning, Subject: n.Name,
			Summary:  fmt.Sprintf("%s raises %s interrupts for %s packets: about one per packet", n.Name, rate(irqs), rate(pps)),
			Evidence: []string{fmt.Sprintf("interrupts/packet = %.2f", irqs/pps)},
		}
		c := n.Coalesce
		switch {
		case c == nil:
			f.Evidence = append(f.Evidence, "coalescing settings: "+unsupportedWhy(n.Unsupported, "coalesce"))
		default:
			f.Evidence = append(f.Evidence, fmt.Sprintf("rx-usecs %d, rx-frames %d, adaptive-rx %v", c.Params["rx-usecs"], c.Params["rx-frames"], c.AdaptiveRX))
			if c.AdaptiveRX {
				continue // adaptive moderation is in charge already
			}
			val := "rx-usecs=100"
			if _, ok := c.Params["rx-frames"]; ok {
				val += ",rx-frames=10"
			}
			f.Fixes = append(f.Fixes, Fix{Kind: FixCoalesce, Target: n.Name, Value: val,
				Note: "wait up to 100 µs or 10 packets before interrupting"})
		}
		out = append(out, f)
	}
	return out
}

func unsupportedWhy(u map[string]string, key string) string {
	if why, ok := u[key]; ok {
		return "unsupported: " + why
	}
	return "unknown"
}
