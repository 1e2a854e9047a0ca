package diagnose

// pcieBottleneck: aggregate throughput of the NICs behind one PCIe link at
// the link's ceiling; MPS below what the whole path supports →
// pci=pcie_bus_perf (seed: CM4 + I340-T4, 3.02 → 3.42 Gb/s at MPS 128 → 512).
type pcieBottleneck struct{}

func (pcieBottleneck) ID() string { return "pcie-bottleneck" }
func (pcieBottleneck) Explain() string {
	return "NICs sharing a PCIe link run at its ceiling; MPS below what the path supports"
}

func (pcieBottleneck) Check(ev *Evidence) []Finding { return nil }
