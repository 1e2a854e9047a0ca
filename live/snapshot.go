package live

import (
	"strconv"
	"strings"
	"time"

	"linerate/box"
	"linerate/internal/order"
	"linerate/results"
)

// Snapshot is one interval of the live view, per second. CPU shares are
// in percent (0-100) as box.Rates keeps them; /metrics turns them into
// ratios.
type Snapshot struct {
	// Seq counts the snapshots a Hub published, from 1.
	Seq uint64 `json:"seq"`
	// Time is the end of the interval; Seconds its length.
	Time    time.Time `json:"time"`
	Seconds float64   `json:"seconds"`
	CPUs    []CPU     `json:"cpus"`
	Ifaces  []Iface   `json:"ifaces"`
	// IRQs are the numbered interrupts of the interfaces shown, and any
	// other numbered interrupt that fired in the interval.
	IRQs []IRQ `json:"irqs"`
	// Bench is the last second of a running bench, nil outside one.
	Bench *results.IntervalStats `json:"bench,omitempty"`
	// Totals are the counters so far (Hub.Metrics; nil otherwise): what
	// /metrics exports.
	Totals *Totals `json:"-"`
}

// CPU is one CPU's time split (percent) and its network work per second.
type CPU struct {
	ID      int     `json:"cpu"`
	User    float64 `json:"usr"`
	System  float64 `json:"sys"`
	IRQ     float64 `json:"irq"`
	SoftIRQ float64 `json:"softirq"`
	Steal   float64 `json:"steal"`
	Idle    float64 `json:"idle"`
	IOWait  float64 `json:"iowait"`
	// Busy is 100 - idle - iowait; it also holds nice and guest time.
	Busy float64 `json:"busy"`
	// Interrupts counts every /proc/interrupts row on this CPU, named
	// ones (LOC, RES, ...) included.
	Interrupts float64 `json:"interrupts"`
	NetRX      float64 `json:"net_rx"`
	NetTX      float64 `json:"net_tx"`
	// Softnet: packets processed, dropped (backlog full) and time
	// squeezes (the softirq ran out of budget or time with work left).
	Processed   float64 `json:"softnet_processed"`
	Dropped     float64 `json:"softnet_dropped"`
	TimeSqueeze float64 `json:"softnet_time_squeeze"`
}

// Iface is one interface's traffic per second, from /proc/net/dev.
type Iface struct {
	Name string `json:"iface"`
	box.NetDevRate
}

// IRQ is one numbered interrupt: per second on each CPU.
type IRQ struct {
	IRQ string `json:"irq"`
	// Name is the action of its /proc/interrupts line ("eth0-rx-0"): for
	// a NIC, usually its queue.
	Name string `json:"name,omitempty"`
	// Iface is the interface it belongs to, when known.
	Iface  string    `json:"iface,omitempty"`
	PerCPU []float64 `json:"per_cpu"`
	Total  float64   `json:"total"`
}

// benchOf keeps what the live view shows of an interval: its figures, not
// the client's CPUs (the snapshot has every CPU already).
func benchOf(iv results.IntervalStats) *results.IntervalStats {
	iv.CPU = nil
	return &iv
}

// IRQInfo says what a numbered interrupt is.
type IRQInfo struct {
	Name  string
	Iface string
}

// Build makes a Snapshot of r showing the interfaces ifaces (in that
// order; an interface absent from r is left out) and the interrupts
// irqs names.
func Build(r box.Rates, ifaces []string, irqs map[string]IRQInfo) Snapshot {
	s := Snapshot{Time: r.End, Seconds: r.Seconds}
	s.CPUs = make([]CPU, 0, len(r.CPU))
	at := make(map[int]int, len(r.CPU)) // CPU id → index in s.CPUs
	for _, c := range r.CPU {
		at[c.ID] = len(s.CPUs)
		s.CPUs = append(s.CPUs, CPU{ID: c.ID, User: c.User, System: c.System, IRQ: c.IRQ,
			SoftIRQ: c.SoftIRQ, Steal: c.Steal, Idle: c.Idle, IOWait: c.IOWait, Busy: c.Busy})
	}
	// The per-CPU columns of /proc/interrupts, softirqs and softnet_stat
	// are the online CPUs in order, as /proc/stat lists them.
	perCPU := func(vals []float64, set func(*CPU, float64)) {
		for i, v := range vals {
			if i < len(s.CPUs) {
				set(&s.CPUs[i], v)
			}
		}
	}
	for _, v := range r.Interrupts {
		perCPU(v, func(c *CPU, x float64) { c.Interrupts += x })
	}
	perCPU(r.SoftIRQs["NET_RX"], func(c *CPU, x float64) { c.NetRX = x })
	perCPU(r.SoftIRQs["NET_TX"], func(c *CPU, x float64) { c.NetTX = x })
	for _, sn := range r.Softnet {
		if i, ok := at[sn.CPU]; ok {
			c := &s.CPUs[i]
			c.Processed, c.Dropped, c.TimeSqueeze = sn.Processed, sn.Dropped, sn.TimeSqueeze
		}
	}

	shown := make(map[string]bool, len(ifaces))
	for _, n := range ifaces {
		d, ok := r.NetDev[n]
		if !ok || shown[n] {
			continue
		}
		shown[n] = true
		s.Ifaces = append(s.Ifaces, Iface{Name: n, NetDevRate: d})
	}

	for label, v := range r.Interrupts {
		if _, err := strconv.Atoi(label); err != nil {
			continue
		}
		info := irqs[label]
		q := IRQ{IRQ: label, Name: info.Name, Iface: info.Iface, PerCPU: v}
		for _, x := range v {
			q.Total += x
		}
		if (info.Iface != "" && shown[info.Iface]) || q.Total > 0 {
			s.IRQs = append(s.IRQs, q)
		}
	}
	order.Sort(s.IRQs, func(a, b IRQ) int {
		if c := strings.Compare(a.Iface, b.Iface); c != 0 {
			if a.Iface == "" || b.Iface == "" {
				return -c // an interface's interrupts first
			}
			return c
		}
		an, _ := strconv.Atoi(a.IRQ)
		bn, _ := strconv.Atoi(b.IRQ)
		return an - bn
	})
	return s
}
