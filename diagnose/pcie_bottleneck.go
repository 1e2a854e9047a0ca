package diagnose

import (
	"fmt"

	"linerate/ceiling"
	"linerate/internal/units"
)

// pcieBottleneck: aggregate throughput of the NICs behind one PCIe link at
// the link's ceiling; MPS below what the path supports → pci=pcie_bus_perf
// (seed: a CM4's Gen2 x1 link, 3.02 → 3.42 Gb/s at MPS 128 → 512).
type pcieBottleneck struct{}

func (pcieBottleneck) ID() string { return "pcie-bottleneck" }
func (pcieBottleneck) Explain() string {
	return "NICs sharing a PCIe link run at its ceiling; MPS below what the path supports"
}

// atCeiling is the share of the bus ceiling at which the bus is the limit.
const atCeiling = 0.9

// wireOverhead is what a frame costs on the wire beyond the bytes
// /proc/net/dev counts: FCS 4, preamble and SFD 8, inter-frame gap 12.
const wireOverhead = 24

func (pcieBottleneck) Check(ev *Evidence) []Finding {
	rep := ceiling.ForBox(ev.Box)
	m, haveRates := ev.Mean()
	var out []Finding
	for _, g := range rep.Groups {
		if g.Full == nil || len(g.NICs) == 0 {
			continue
		}
		var rx, tx float64
		for _, name := range g.NICs {
			d := m.NetDev[name]
			rx += d.RxBps + d.RxPps*wireOverhead*8
			tx += d.TxBps + d.TxPps*wireOverhead*8
		}
		mpsLow := g.MPSSupported > g.MPS && g.MPS > 0
		var fixes []Fix
		if mpsLow {
			fixes = append(fixes, Fix{Kind: FixBoot, Target: "cmdline.txt",
				Value: "pci=pcie_bus_perf",
				Note:  fmt.Sprintf("raise Max Payload Size from %d to %d bytes along the path (add before rootwait; reboot)", g.MPS, g.MPSSupported)})
		}
		evidence := []string{
			fmt.Sprintf("link %s: %s, MPS %d (supported %d), MRRS %d", g.Bottleneck, linkText(g), g.MPS, g.MPSSupported, g.MRRS),
			fmt.Sprintf("bus ceiling: %s receive, %s transmit (line rate, %d-byte frames)",
				units.Bps(g.Full.Receive.LineBps), units.Bps(g.Full.Transmit.LineBps), g.Frame.Bytes),
			fmt.Sprintf("ports behind it: %v, %s together", g.NICs, units.Bps(float64(g.PortsBps))),
		}
		evidence = append(evidence, g.Warnings...)
		hitRx := haveRates && rx >= atCeiling*g.Full.Receive.LineBps
		hitTx := haveRates && tx >= atCeiling*g.Full.Transmit.LineBps
		switch {
		case hitRx || hitTx:
			dir, got, lim := "receive", rx, g.Full.Receive.LineBps
			if !hitRx {
				dir, got, lim = "transmit", tx, g.Full.Transmit.LineBps
			}
			out = append(out, Finding{Severity: Critical, Subject: g.ID,
				Summary: fmt.Sprintf("%s of %v together at %s of the PCIe link's %s ceiling (%s of %s)",
					dir, g.NICs, units.Percent(got/lim, 0), dir, units.Bps(got), units.Bps(lim)),
				Evidence: append(evidence, fmt.Sprintf("measured on the wire: %s in, %s out", units.Bps(rx), units.Bps(tx))),
				Fixes:    fixes})
		case mpsLow:
			out = append(out, Finding{Severity: Info, Subject: g.ID,
				Summary:  fmt.Sprintf("PCIe Max Payload Size is %d though every device on the path supports %d", g.MPS, g.MPSSupported),
				Evidence: evidence, Fixes: fixes})
		}
	}
	return out
}

func linkText(g ceiling.Group) string {
	if g.Link == nil {
		return "unknown"
	}
	return g.Link.String()
}
