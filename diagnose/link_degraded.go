package diagnose

import (
	"fmt"
	"strconv"
	"strings"
)

// linkDegraded: a PCIe link trained below what both its ends support, or an
// Ethernet link below the best mode both ends advertise.
type linkDegraded struct{}

func (linkDegraded) ID() string { return "link-degraded" }
func (linkDegraded) Explain() string {
	return "PCIe or Ethernet link running below what both ends support"
}

func (linkDegraded) Check(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for i := range ev.Box.NICs {
		n := &ev.Box.NICs[i]
		// PCIe: each device on the path against its upstream port.
		for _, addr := range n.PCIePath {
			d, ok := ev.Box.PCIeDev(addr)
			if !ok || seen[addr] || d.RootPort || d.CurSpeedGTs == 0 {
				continue
			}
			seen[addr] = true
			maxSpeed, maxWidth := d.MaxSpeedGTs, d.MaxWidth
			if up, ok := ev.Box.PCIeDev(d.Upstream); ok {
				if up.MaxSpeedGTs > 0 && up.MaxSpeedGTs < maxSpeed {
					maxSpeed = up.MaxSpeedGTs
				}
				if up.MaxWidth > 0 && up.MaxWidth < maxWidth {
					maxWidth = up.MaxWidth
				}
			}
			if d.CurSpeedGTs < maxSpeed || (maxWidth > 0 && d.CurWidth < maxWidth) {
				out = append(out, Finding{Severity: Warning, Subject: addr,
					Summary: fmt.Sprintf("PCIe link of %s (%s) runs at %g GT/s x%d; both ends support %g GT/s x%d",
						addr, n.Name, d.CurSpeedGTs, d.CurWidth, maxSpeed, maxWidth),
					Evidence: []string{fmt.Sprintf("device max %g GT/s x%d, current %g GT/s x%d", d.MaxSpeedGTs, d.MaxWidth, d.CurSpeedGTs, d.CurWidth)},
					Fixes: []Fix{{Kind: FixBoot, Target: "hardware", Value: "reseat the card / check the slot and riser",
						Note: "a link trains down on poor signal; this is not a software setting"}},
				})
			}
		}
		// Ethernet: negotiated speed against the best common mode.
		l := n.Link
		if l == nil || !l.Link || l.SpeedMbps <= 0 || len(l.Partner) == 0 {
			continue
		}
		best := 0
		for _, mode := range l.Advertised {
			if contains(l.Partner, mode) {
				if s := modeSpeed(mode); s > best {
					best = s
				}
			}
		}
		if best > l.SpeedMbps {
			out = append(out, Finding{Severity: Warning, Subject: n.Name,
				Summary:  fmt.Sprintf("%s links at %d Mb/s though both ends advertise %d Mb/s", n.Name, l.SpeedMbps, best),
				Evidence: []string{"advertised: " + strings.Join(l.Advertised, " "), "partner: " + strings.Join(l.Partner, " ")},
				Fixes: []Fix{{Kind: FixBoot, Target: "cable", Value: "check the cable (Cat5e or better, all four pairs)",
					Note: "gigabit falls back to 100 Mb/s on a two-pair cable"}},
			})
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// modeSpeed reads Mb/s from a link mode name ("1000baseT/Full" → 1000).
func modeSpeed(mode string) int {
	i := strings.Index(mode, "base")
	if i <= 0 {
		return 0
	}
	v, _ := strconv.Atoi(mode[:i])
	return v
}
