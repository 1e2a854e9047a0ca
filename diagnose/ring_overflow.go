package diagnose

import (
	"fmt"
	"strings"
)

// ringOverflow: the NIC ran out of rx descriptors (rx_missed / no_buffer /
// fifo errors rising) while its rings are below their maximum.
type ringOverflow struct{}

func (ringOverflow) ID() string { return "ring-overflow" }
func (ringOverflow) Explain() string {
	return "rx missed/no-buffer/fifo errors rising while rx rings are below their maximum"
}

// ringDropStat reports whether a driver statistic counts packets lost for
// want of an rx descriptor (igb rx_missed_errors, rx_no_buffer_count,
// rx_fifo_errors; r8169 rx_missed; others with similar names).
func ringDropStat(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "missed") || strings.Contains(n, "no_buffer") ||
		strings.Contains(n, "fifo") || strings.Contains(n, "rx_no_dma") || strings.Contains(n, "out_of_buffer")
}

func (ringOverflow) Check(ev *Evidence) []Finding {
	m, ok := ev.Mean()
	if !ok {
		return nil
	}
	var out []Finding
	for i := range ev.Box.NICs {
		n := &ev.Box.NICs[i]
		if !physical(n) {
			continue
		}
		var evidence []string
		if v := m.NetDev[n.Name].RxFifo; v > 0 {
			evidence = append(evidence, fmt.Sprintf("/proc/net/dev rx fifo: %s", rate(v)))
		}
		for name, v := range m.Ethtool[n.Name] {
			if v > 0 && ringDropStat(name) && !strings.HasPrefix(name, "tx") {
				evidence = append(evidence, fmt.Sprintf("%s: %s", name, rate(v)))
			}
		}
		if len(evidence) == 0 {
			continue
		}
		f := Finding{Severity: Warning, Subject: n.Name,
			Summary: n.Name + " drops packets for want of rx descriptors", Evidence: evidence}
		if r := n.Rings; r != nil {
			f.Evidence = append(f.Evidence, fmt.Sprintf("rx ring %d of max %d", r.RX, r.RXMax))
			if r.RX < r.RXMax {
				f.Fixes = append(f.Fixes, Fix{Kind: FixRings, Target: n.Name, Value: fmt.Sprintf("rx=%d", r.RXMax),
					Note: "a deeper ring absorbs bursts (resets the link)"})
			} else {
				f.Summary += " with its ring already at the maximum: the CPU does not drain it fast enough"
			}
		} else {
			f.Evidence = append(f.Evidence, "ring sizes: "+unsupportedWhy(n.Unsupported, "rings"))
		}
		out = append(out, f)
	}
	return out
}
