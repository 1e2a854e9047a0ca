package diagnose

import (
	"fmt"
	"strings"
)

// offloadOff: GRO, GSO or TSO switched off on a NIC that can turn them on.
// Without them every packet crosses the stack alone: the seeds' hosts
// reached line rate with them on (the kernel's default), and a box found
// with them off (by a script, a bridge tool, a driver default) pays per
// packet what it could pay per 64 KiB.
type offloadOff struct{}

func (offloadOff) ID() string { return "offload-off" }
func (offloadOff) Explain() string {
	return "GRO, GSO or TSO off on a NIC whose driver lets them be on"
}

// offloads are the features the rule checks, as ethtool -k names them.
var offloads = []struct{ name, short string }{
	{"generic-receive-offload", "GRO"},
	{"generic-segmentation-offload", "GSO"},
	{"tcp-segmentation-offload", "TSO"},
}

func (offloadOff) Check(ev *Evidence) []Finding {
	var out []Finding
	m, haveRates := ev.Mean()
	for i := range ev.Box.NICs {
		n := &ev.Box.NICs[i]
		if !physical(n) || len(n.Features) == 0 {
			continue
		}
		var off []string
		var fixes []Fix
		for _, o := range offloads {
			f, ok := n.Features.Get(o.name)
			if !ok || f.On || f.Fixed {
				continue
			}
			off = append(off, o.short)
			fixes = append(fixes, Fix{Kind: FixFeature, Target: n.Name + "/" + o.name, Value: "on",
				Note: fmt.Sprintf("%s on %s; a driver may default it off for a hardware erratum (r8169 does for TSO on some chips): tune auto keeps it only if it measures better", o.short, n.Name)})
		}
		if len(off) == 0 {
			continue
		}
		f := Finding{Severity: Warning, Subject: n.Name,
			Summary:  fmt.Sprintf("%s: %s off, and the driver lets them be on", n.Name, strings.Join(off, ", ")),
			Evidence: []string{fmt.Sprintf("ethtool -k %s: %s off (not fixed)", n.Name, strings.Join(off, ", "))},
			Fixes:    fixes}
		if haveRates {
			d := m.NetDev[n.Name]
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s rx, %s tx packets, each through the stack alone", n.Name, rate(d.RxPps), rate(d.TxPps)))
		}
		out = append(out, f)
	}
	return out
}
