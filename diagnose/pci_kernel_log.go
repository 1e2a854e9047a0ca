package diagnose

import (
	"fmt"
	"strings"
)

// pciKernelLog: the kernel log says a PCI function got no address space for
// a BAR (the driver cannot map its registers: the card is dead to the
// system, or probes and fails) or a PCIe link did not train (the card is
// not on the bus at all). Seed 000 checked exactly this, "make sure the BAR
// address registrations were all good", before hunting for a driver.
type pciKernelLog struct{}

func (pciKernelLog) ID() string { return "pci-kernel-log" }
func (pciKernelLog) Explain() string {
	return "kernel log shows a BAR without address space or a PCIe link that did not train"
}

func (pciKernelLog) Check(ev *Evidence) []Finding {
	byDev := map[string][]string{}
	kinds := map[string]string{}
	var order []string
	for _, e := range ev.Box.KernelLog {
		key := e.Kind + " " + e.Device
		if _, ok := byDev[key]; !ok {
			order = append(order, key)
		}
		byDev[key] = append(byDev[key], e.Line)
		kinds[key] = e.Kind
	}
	var out []Finding
	for _, key := range order {
		_, dev, _ := strings.Cut(key, " ")
		if dev == "" {
			dev = "pci"
		}
		lines := byDev[key]
		f := Finding{Severity: Critical, Subject: dev}
		for i, l := range lines {
			if i == 5 {
				f.Evidence = append(f.Evidence, fmt.Sprintf("... and %d more such lines", len(lines)-5))
				break
			}
			f.Evidence = append(f.Evidence, "kernel: "+l)
		}
		if kinds[key] == "bar" {
			f.Summary = fmt.Sprintf("%s: the kernel could not give a BAR address space (%d log lines); its driver cannot map it", dev, len(lines))
			f.Fixes = []Fix{{Kind: FixBoot, Target: "cmdline.txt", Value: "pci=realloc",
				Note: "let the kernel reassign bridge windows and BARs; on a Pi, a card wanting more than the firmware's PCIe window needs a larger one (dtoverlay) as well"}}
		} else {
			f.Summary = fmt.Sprintf("%s: a PCIe link did not come up (%d log lines); what is behind it is not on the bus", dev, len(lines))
			f.Fixes = []Fix{{Kind: FixBoot, Target: "hardware",
				Value: "reseat the card and check the riser or cable and the card's power; the link must train before any driver can bind"}}
		}
		out = append(out, f)
	}
	return out
}
