package diagnose

import (
	"fmt"
	"strings"
)

// nicUnbound: an Ethernet PCI function the kernel enumerated but no driver
// bound, so no interface exists (seed 000's first obstacle: the I340-T4's
// four 82580 functions in lspci, no ethN, Pi OS without igb). The fix names
// the module modules.alias maps the function to, or says that this kernel
// has none.
type nicUnbound struct{}

func (nicUnbound) ID() string { return "nic-unbound" }
func (nicUnbound) Explain() string {
	return "Ethernet PCI function with no driver bound: the card is on the bus, no interface exists"
}

func (nicUnbound) Check(ev *Evidence) []Finding {
	var out []Finding
	for _, u := range ev.Box.Unbound {
		id := strings.TrimPrefix(u.Vendor, "0x") + ":" + strings.TrimPrefix(u.Device, "0x")
		f := Finding{
			Severity: Critical,
			Subject:  u.Addr,
			Evidence: []string{
				fmt.Sprintf("%s: class %s (Ethernet controller), vendor:device %s, no driver bound and no network interface", u.Addr, u.Class, id),
			},
		}
		if u.Modalias != "" {
			f.Evidence = append(f.Evidence, "modalias "+u.Modalias)
		}
		kernel := "this kernel"
		if ev.Box.Meta.Kernel != "" {
			kernel = "kernel " + ev.Box.Meta.Kernel
		}
		switch {
		case len(u.Modules) > 0:
			mod := u.Modules[0]
			f.Summary = fmt.Sprintf("Ethernet function %s (%s) has no driver; %s's module %s matches it but is not bound", u.Addr, id, kernel, mod)
			f.Evidence = append(f.Evidence, fmt.Sprintf("modules.alias of %s maps it to %s", kernel, strings.Join(u.Modules, ", ")))
			f.Fixes = append(f.Fixes, Fix{Kind: FixBoot, Target: "driver", Value: "modprobe " + mod,
				Note: fmt.Sprintf("load %s now; if it fails, dmesg says why (a blacklist in /etc/modprobe.d, a BAR without space)", mod)})
		case u.ModulesChecked:
			f.Summary = fmt.Sprintf("Ethernet function %s (%s) has no driver, and no module of %s supports it", u.Addr, id, kernel)
			f.Evidence = append(f.Evidence, fmt.Sprintf("no modules.alias entry of %s matches its modalias", kernel))
			f.Fixes = append(f.Fixes, Fix{Kind: FixBoot, Target: "driver",
				Value: fmt.Sprintf("build and install a driver for PCI ID %s for %s (the vendor's out-of-tree source, or a kernel with it enabled), then reboot or modprobe it", id, kernel),
				Note:  "seed 000 built Intel's igb out of tree for the I340-T4 on Pi OS"})
		default:
			f.Summary = fmt.Sprintf("Ethernet function %s (%s) has no driver bound", u.Addr, id)
			f.Evidence = append(f.Evidence, "modules.alias could not be read: "+ev.Box.Unsupported["modules_alias"])
		}
		out = append(out, f)
	}
	return out
}
