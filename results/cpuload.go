package results

import (
	"fmt"
	"sort"
	"strings"

	"linerate/internal/units"
)

// cpuLoad is one CPU of a sampled machine, its mean use over the samples
// in percent.
type cpuLoad struct {
	id                 int
	busy, softirq, irq float64
}

// full says the CPU was saturated: BusyThread of it busy.
func (c cpuLoad) full() bool { return c.busy >= BusyThread*100 }

// kernelShare is the part of its busy time the CPU spent in interrupts
// and softirqs (0 to 1).
func (c cpuLoad) kernelShare() float64 {
	if c.busy <= 0 {
		return 0
	}
	return min(1, (c.softirq+c.irq)/c.busy)
}

// machineLoad is the CPUs of one sampled end or host, as its samples saw
// them.
type machineLoad struct {
	// who names it: "client", "server", "server 2", or a host sampled in
	// the middle.
	who  string
	side Side
	cpus []cpuLoad // by id
}

// machineLoads is the CPUs of every end and host res sampled, the client
// first, then each server, then the hosts in the middle.
func machineLoads(res *Result) []machineLoad {
	type key struct {
		side   Side
		target int
		host   string
	}
	type acc struct {
		n    int
		cpus map[int]*cpuLoad
	}
	var order []key
	accs := map[key]*acc{}
	for _, s := range res.Samples {
		if len(s.CPU) == 0 {
			continue
		}
		k := key{side: s.Side, host: s.Host}
		if s.Side == SideServer {
			k.target = s.Target
		}
		a := accs[k]
		if a == nil {
			a = &acc{cpus: map[int]*cpuLoad{}}
			accs[k] = a
			order = append(order, k)
		}
		a.n++
		for _, c := range s.CPU {
			l := a.cpus[c.ID]
			if l == nil {
				l = &cpuLoad{id: c.ID}
				a.cpus[c.ID] = l
			}
			l.busy += c.Busy
			l.softirq += c.SoftIRQ
			l.irq += c.IRQ
		}
	}
	rank := map[Side]int{SideClient: 0, SideServer: 1, SideDUT: 2}
	sort.SliceStable(order, func(i, j int) bool { return rank[order[i].side] < rank[order[j].side] })
	var out []machineLoad
	for _, k := range order {
		a := accs[k]
		m := machineLoad{side: k.side, who: endName(k.side, k.target, len(res.Targets) > 1)}
		if k.side == SideDUT {
			m.who = "the device in the middle"
			if k.host != "" {
				m.who = k.host
			}
		}
		for _, l := range a.cpus {
			n := float64(a.n)
			m.cpus = append(m.cpus, cpuLoad{id: l.id, busy: l.busy / n, softirq: l.softirq / n, irq: l.irq / n})
		}
		sort.Slice(m.cpus, func(i, j int) bool { return m.cpus[i].id < m.cpus[j].id })
		out = append(out, m)
	}
	return out
}

// fullOfKernel is the CPUs of m that were full with at least
// KernelShare of their time in interrupts and softirqs: the kernel's
// packet work, not a program's.
func (m machineLoad) fullOfKernel() []cpuLoad {
	var out []cpuLoad
	for _, c := range m.cpus {
		if c.full() && c.kernelShare() >= KernelShare {
			out = append(out, c)
		}
	}
	return out
}

// describe says how m's CPUs were used: each full CPU with its softirq
// share, then the others ("cpu0 100 % busy, 52 % of it softirq, cpu1
// idle").
func (m machineLoad) describe() string {
	var parts []string
	var others []cpuLoad
	for _, c := range m.cpus {
		if !c.full() {
			others = append(others, c)
			continue
		}
		p := fmt.Sprintf("cpu%d %s busy, %s of it softirq", c.id, units.Percent(c.busy/100, 0), units.Percent(c.softirq/c.busy, 0))
		if c.irq >= 0.05*c.busy {
			p += fmt.Sprintf(" and %s hard interrupts", units.Percent(c.irq/c.busy, 0))
		}
		parts = append(parts, p)
	}
	if len(others) <= 3 {
		for _, c := range others {
			parts = append(parts, fmt.Sprintf("cpu%d %s", c.id, idleOr(c.busy)))
		}
	} else {
		most := 0.0
		for _, c := range others {
			most = max(most, c.busy)
		}
		if most < IdleCPU {
			parts = append(parts, fmt.Sprintf("the other %d CPUs idle", len(others)))
		} else {
			parts = append(parts, fmt.Sprintf("the other %d CPUs at most %s busy", len(others), units.Percent(most/100, 0)))
		}
	}
	return strings.Join(parts, ", ")
}

// idleOr is "idle" for a CPU less than IdleCPU percent busy, else its
// busy share.
func idleOr(busy float64) string {
	if busy < IdleCPU {
		return "idle"
	}
	return units.Percent(busy/100, 0) + " busy"
}

// fullCPU says which sampled machine had a CPU full of the kernel's
// packet work, described as the verdict words it ("cpu0 100 % busy, 52 %
// of it softirq, cpu1 idle (the client's samples; the server's show a
// CPU full too...)"), with a pointer to diagnose; ok is false when no CPU
// was.
func fullCPU(res *Result) (why string, ok bool) {
	var first *machineLoad
	var also []string
	loads := machineLoads(res)
	for i := range loads {
		full := loads[i].fullOfKernel()
		if len(full) == 0 {
			continue
		}
		if first == nil {
			first = &loads[i]
			continue
		}
		also = append(also, possessive(loads[i].who))
	}
	if first == nil {
		return "", false
	}
	why = first.describe() + " (" + possessive(first.who) + " samples"
	if len(also) > 0 {
		why += "; " + strings.Join(also, " and ") + " show a CPU full too: one machine, or each loaded alike"
	}
	return why + "); " + diagnoseHint, true
}

// diagnoseHint points to what says why a CPU was full.
const diagnoseHint = "`linerate diagnose` on this run names what runs there (an interrupt or receive queue on one CPU, RPS off)"

// possessive is "the client's", "wan's".
func possessive(who string) string {
	switch who {
	case string(SideClient), string(SideServer), string(SideDUT):
		return "the " + who + "'s"
	}
	if strings.HasPrefix(who, "server ") || strings.HasPrefix(who, "the ") {
		return "the " + strings.TrimPrefix(who, "the ") + "'s"
	}
	return who + "'s"
}
