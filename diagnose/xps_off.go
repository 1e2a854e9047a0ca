package diagnose

import (
	"fmt"
)

// xpsOff: a multi-queue NIC that sends, with no XPS map: a sending CPU
// picks a tx queue by hash, so two CPUs contend for one queue's lock while
// another queue idles, and completions land on the wrong CPU. One queue per
// CPU is what the kernel's scaling guide recommends
// (Documentation/networking/scaling.rst, "XPS").
type xpsOff struct{}

func (xpsOff) ID() string { return "xps-off" }
func (xpsOff) Explain() string {
	return "a multi-queue NIC sends without XPS: no CPU owns a transmit queue"
}

func (xpsOff) Check(ev *Evidence) []Finding {
	m, ok := ev.Mean()
	if !ok {
		return nil
	}
	var cpus []int
	for _, c := range ev.Box.CPUs {
		if c.Online {
			cpus = append(cpus, c.ID)
		}
	}
	if len(cpus) < 2 {
		return nil
	}
	var out []Finding
	for i := range ev.Box.NICs {
		n := &ev.Box.NICs[i]
		if !physical(n) || len(n.TXQueues) < 2 || m.NetDev[n.Name].TxPps < busyPPS {
			continue
		}
		set := false
		for _, q := range n.TXQueues {
			set = set || len(q.XPSCPUList) > 0
		}
		if set {
			continue
		}
		f := Finding{Severity: Info, Subject: n.Name,
			Summary:  fmt.Sprintf("%s sends %s packets over %d tx queues with no XPS map", n.Name, rate(m.NetDev[n.Name].TxPps), len(n.TXQueues)),
			Evidence: []string{fmt.Sprintf("%s: xps_cpus empty on all %d tx queues", n.Name, len(n.TXQueues))}}
		for j, q := range n.TXQueues {
			f.Fixes = append(f.Fixes, Fix{Kind: FixXPS, Target: fmt.Sprintf("%s/tx-%d", n.Name, q.Index), Value: one(cpus[j%len(cpus)]),
				Note: fmt.Sprintf("CPU %d sends on tx-%d", cpus[j%len(cpus)], q.Index)})
		}
		out = append(out, f)
	}
	return out
}
