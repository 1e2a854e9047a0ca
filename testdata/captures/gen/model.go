package main

import (
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// box is one machine: its static facts and the counters that advance
// between samples.
type box struct {
	name   string // capture directory name
	host   string
	kernel string // uname -r
	arch   string // GOARCH spelling, as meta.json has it
	kv     int    // kernel series: 504 (5.4) or 510 (5.10); picks file formats
	x86    bool
	prec   int // width of IRQ numbers in /proc/interrupts (digits of nr_irqs)
	nrIRQs int // entries of the intr line of /proc/stat
	ncpu   int
	t0     time.Time // time of sample 000 (and of the capture itself)
	uptime float64   // seconds since boot at t0
	dts    []float64 // seconds between consecutive samples
	rng    *rand.Rand

	cpus    []*cpuTimes
	irqs    []*irqLine
	named   []*namedLine // IPI rows (arm64) or NMI/LOC/... rows (x86)
	soft    []*perCPU    // /proc/softirqs rows, kernel order
	softnet []*softnetCPU
	nics    []*nic // /proc/net/dev order, lo first
	snmp    []*snmpSection
	ctxt    ctr
	procs   ctr

	sysctls [][2]string
	comms   map[int]string // proc/PID/comm
	tree    *tree          // everything under sys/, pci/ and the static proc/ files
}

// ctr is a cumulative counter: value now and rate per second while the
// sampled workload runs. Rendering floors it, so it never goes backwards.
type ctr struct{ v, rate float64 }

func (c *ctr) step(dt, f float64) { c.v += c.rate * dt * f }
func (c ctr) u() uint64           { return uint64(math.Floor(c.v)) }

// jitter returns a factor near 1 so that rates wobble a little between
// samples, as real ones do.
func (b *box) jitter(spread float64) float64 { return 1 + spread*(2*b.rng.Float64()-1) }

// cpuTimes is one cpuN line of /proc/stat in USER_HZ ticks, and the share of
// each field while the workload runs (shares of a CPU sum to 1).
type cpuTimes struct {
	t     [8]uint64  // user nice system idle iowait irq softirq steal
	share [8]float64 // same order
}

// irqLine is one numbered row of /proc/interrupts.
type irqLine struct {
	n       int
	chip    string // "GICv2", "PCI-MSI", "BRCM STB PCIe MSI", "IO-APIC"
	hwirq   int
	trigger string // arm64: "Level"/"Edge" column; x86: handler name "edge"/"fasteoi"
	actions string // "eth0", "enp4s0-rx-0", "mmc1, mmc0"
	counts  []float64
	rates   []float64
	// affinity is written to proc/irq/N when set: smp_affinity, the list,
	// and effective_affinity_list (may be "" for an empty mask).
	affinity *[3]string
}

// namedLine is an arch row of /proc/interrupts with per-CPU counts.
type namedLine struct {
	label, desc string
	counts      []float64
	rates       []float64
	// global, when set, makes an x86 row of one system-wide count (ERR, MIS).
	global *uint64
}

// perCPU is a /proc/softirqs row.
type perCPU struct {
	name   string
	counts []float64
	rates  []float64
}

// softnetCPU is one row of /proc/net/softnet_stat. processed advances by
// the packets the NICs deliver to this CPU (nic.rxCPU) plus background.
type softnetCPU struct {
	processed, dropped, squeeze, rps, flowLimit ctr
}

// snmpSection is a pair of lines of /proc/net/snmp.
type snmpSection struct {
	name   string
	fields []string
	vals   []ctr
	// fixed holds fields printed as signed constants (MaxConn -1, ...).
	fixed map[string]int64
}

func (s *snmpSection) set(field string, v, rate float64) {
	for i, f := range s.fields {
		if f == field {
			s.vals[i] = ctr{v, rate}
			return
		}
	}
	panic("snmp field " + s.name + "." + field)
}

// step advances every counter by dt seconds.
func (b *box) step(dt float64) {
	for _, c := range b.cpus {
		c.step(dt, b)
	}
	for _, l := range b.irqs {
		f := b.jitter(0.04)
		for i := range l.counts {
			l.counts[i] += l.rates[i] * dt * f
		}
	}
	for _, l := range b.named {
		f := b.jitter(0.05)
		for i := range l.counts {
			l.counts[i] += l.rates[i] * dt * f
		}
	}
	for _, r := range b.soft {
		f := b.jitter(0.04)
		for i := range r.counts {
			r.counts[i] += r.rates[i] * dt * f
		}
	}
	delivered := make([]float64, b.ncpu)
	for _, n := range b.nics {
		rx := n.step(dt, b.jitter(0.015))
		for cpu, share := range n.rxCPU {
			delivered[cpu] += rx * share
		}
	}
	for i, s := range b.softnet {
		s.processed.v += delivered[i] + s.processed.rate*dt*b.jitter(0.1)
		s.dropped.step(dt, 1)
		s.squeeze.step(dt, b.jitter(0.1))
		s.rps.step(dt, 1)
		s.flowLimit.step(dt, 1)
	}
	for _, s := range b.snmp {
		f := b.jitter(0.015)
		for i := range s.vals {
			s.vals[i].step(dt, f)
		}
	}
	b.ctxt.step(dt, b.jitter(0.03))
	b.procs.step(dt, 1)
}

// step adds dt seconds of ticks to one CPU: round(100*dt) ticks split by the
// shares (with a little noise) using largest remainders, so that the split
// always sums to the elapsed ticks.
func (c *cpuTimes) step(dt float64, b *box) {
	total := int(math.Round(100 * dt))
	var w [8]float64
	sum := 0.0
	for i, s := range c.share {
		if s > 0 {
			w[i] = s * b.jitter(0.06)
		}
		sum += w[i]
	}
	type rem struct {
		i int
		r float64
	}
	var rems []rem
	given := 0
	var add [8]int
	for i := range w {
		x := w[i] / sum * float64(total)
		add[i] = int(math.Floor(x))
		given += add[i]
		rems = append(rems, rem{i, x - math.Floor(x)})
	}
	sort.SliceStable(rems, func(a, z int) bool { return rems[a].r > rems[z].r })
	for k := 0; given < total; k++ {
		add[rems[k].i]++
		given++
	}
	for i := range add {
		c.t[i] += uint64(add[i])
	}
}

// newCPU makes a CPU that has been up for uptime seconds with the given
// long-run shares of user/system/softirq (the rest idle), and that spends
// the sampled period at share (user nice system idle iowait irq softirq steal).
func newCPU(uptime float64, user, system, iowait, softirq float64, share [8]float64) *cpuTimes {
	ticks := uptime * 100
	c := &cpuTimes{share: share}
	c.t[0] = uint64(ticks * user)
	c.t[2] = uint64(ticks * system)
	c.t[4] = uint64(ticks * iowait)
	c.t[6] = uint64(ticks * softirq)
	c.t[3] = uint64(ticks) - c.t[0] - c.t[2] - c.t[4] - c.t[6]
	return c
}

// timeAt is the time of sample k.
func (b *box) timeAt(k int) time.Time {
	t := b.t0
	for i := 0; i < k; i++ {
		t = t.Add(time.Duration(b.dts[i] * float64(time.Second)))
	}
	return t
}

func fill(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}
