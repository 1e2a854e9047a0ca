package diagnose

import "fmt"

// rpsOff: a NIC with a single rx queue and RPS off whose receiving CPU is
// saturated (seed: the RouterPi's r8169 eth1, fixed by
// `echo 8 > /sys/class/net/eth1/queues/rx-0/rps_cpus`).
type rpsOff struct{}

func (rpsOff) ID() string { return "rps-off" }
func (rpsOff) Explain() string {
	return "single rx queue, RPS off, the CPU that receives it saturated"
}

func (rpsOff) Check(ev *Evidence) []Finding {
	m, ok := ev.Mean()
	if !ok {
		return nil
	}
	var out []Finding
	for i := range ev.Box.NICs {
		n := &ev.Box.NICs[i]
		if !physical(n) || rxQueueCount(n) != 1 || rpsOn(n) || len(n.RXQueues) == 0 {
			continue
		}
		pps := rxPPS(m, n)
		if pps < busyPPS {
			continue
		}
		// The receiving CPU: where the NIC's interrupts land, else where
		// NET_RX runs most.
		hot, _ := argmax(nicIRQRate(m, n))
		if hot < 0 {
			hot, _ = argmax(m.SoftIRQs["NET_RX"])
		}
		use, ok := cpuUse(m, hot)
		if !ok || use.Busy < saturated {
			continue
		}
		_, spare := otherCPUs(m, hot)
		if len(spare) == 0 {
			continue
		}
		f := Finding{
			Severity: Critical,
			Subject:  n.Name,
			Summary: fmt.Sprintf("%s has one rx queue and RPS is off: CPU%d does all its receive work at %s busy",
				n.Name, hot, pct(use.Busy)),
			Evidence: []string{
				fmt.Sprintf("%s: %s rx packets, 1 rx queue, rps_cpus %q", n.Name, rate(pps), n.RXQueues[0].RPSCPUs),
				fmt.Sprintf("CPU%d: busy %s (softirq %s); CPUs %s below %s", hot, pct(use.Busy), pct(use.SoftIRQ), cpuList(spare), pct(idleEnough)),
			},
			Fixes: []Fix{
				{Kind: FixRPS, Target: n.Name + "/rx-0", Value: cpuList(spare), Note: "steer receive processing to idle CPUs"},
				{Kind: FixRPSFlow, Target: n.Name + "/rx-0", Value: "4096", Note: "RFS: keep each flow on the CPU of its socket"},
				{Kind: FixSysctl, Target: "net.core.rps_sock_flow_entries", Value: "32768", Note: "RFS table size"},
			},
		}
		out = append(out, f)
	}
	return out
}
