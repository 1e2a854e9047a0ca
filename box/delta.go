package box

// Delta turns two snapshots into per-second rates (b later than a).
// Counters that went backwards (a reset) count as zero. CPU shares come from
// tick deltas and do not depend on the clock; when b is not later than a,
// every per-second rate is zero.
func Delta(a, b Counters) Rates {
	r := Rates{Start: a.Time, End: b.Time, Celsius: b.Celsius, CurKHz: b.CurKHz, Conntrack: conntrackDelta(a.Conntrack, b.Conntrack)}
	r.Seconds = b.Time.Sub(a.Time).Seconds()
	per := 0.0
	if r.Seconds > 0 {
		per = 1 / r.Seconds
	}
	rate := func(x, y uint64) float64 { return float64(diff(x, y)) * per }

	prev := make(map[int]CPUTimes, len(a.CPU))
	for _, c := range a.CPU {
		prev[c.ID] = c
	}
	for _, c := range b.CPU {
		p, ok := prev[c.ID]
		if !ok {
			continue
		}
		r.CPU = append(r.CPU, cpuUse(p, c))
	}

	r.Process = processUse(a, b)
	r.Interrupts = rowRates(a.Interrupts, b.Interrupts, rate)
	if b.RxQueues != nil {
		r.RxQueues = rowRates(a.RxQueues, b.RxQueues, rate)
	}
	r.SoftIRQs = rowRates(a.SoftIRQs, b.SoftIRQs, rate)

	prevSN := make(map[int]Softnet, len(a.Softnet))
	for _, s := range a.Softnet {
		prevSN[s.CPU] = s
	}
	for _, s := range b.Softnet {
		p, ok := prevSN[s.CPU]
		if !ok {
			continue
		}
		r.Softnet = append(r.Softnet, SoftnetRate{
			CPU:         s.CPU,
			Processed:   rate(p.Processed, s.Processed),
			Dropped:     rate(p.Dropped, s.Dropped),
			TimeSqueeze: rate(p.TimeSqueeze, s.TimeSqueeze),
			ReceivedRPS: rate(p.ReceivedRPS, s.ReceivedRPS),
		})
	}

	r.NetDev = make(map[string]NetDevRate, len(b.NetDev))
	for name, d := range b.NetDev {
		p, ok := a.NetDev[name]
		if !ok {
			continue
		}
		r.NetDev[name] = NetDevRate{
			RxBps:    rate(p.RxBytes, d.RxBytes) * 8,
			TxBps:    rate(p.TxBytes, d.TxBytes) * 8,
			RxPps:    rate(p.RxPackets, d.RxPackets),
			TxPps:    rate(p.TxPackets, d.TxPackets),
			RxDrops:  rate(p.RxDrop, d.RxDrop),
			TxDrops:  rate(p.TxDrop, d.TxDrop),
			RxErrors: rate(p.RxErrs, d.RxErrs),
			TxErrors: rate(p.TxErrs, d.TxErrs),
			RxFifo:   rate(p.RxFifo, d.RxFifo),
		}
	}

	for iface, stats := range b.Ethtool {
		ps, ok := a.Ethtool[iface]
		if !ok {
			continue
		}
		if r.Ethtool == nil {
			r.Ethtool = make(map[string]map[string]float64, len(b.Ethtool))
		}
		m := make(map[string]float64, len(stats))
		for k, v := range stats {
			if pv, ok := ps[k]; ok {
				m[k] = rate(pv, v)
			}
		}
		r.Ethtool[iface] = m
	}
	r.UDP = fieldRates(a.UDP, b.UDP, rate)
	r.TCP = fieldRates(a.TCP, b.TCP, rate)
	return r
}

// diff is y-x, or 0 when the counter went backwards.
func diff(x, y uint64) uint64 {
	if y < x {
		return 0
	}
	return y - x
}

// processUse is the reading process's share of one CPU between a and b:
// its tick deltas over the ticks one CPU counted meanwhile (the mean of
// the CPUs both snapshots hold), so that it shares the machine's clock
// and needs no tick rate; nil when either lacks the process or no CPU.
// An interval shorter than a tick (the last, partial one of a run) has
// no tick on any CPU: the process used none of its time there either.
func processUse(a, b Counters) *ProcessUse {
	if a.Process == nil || b.Process == nil {
		return nil
	}
	prev := make(map[int]CPUTimes, len(a.CPU))
	for _, c := range a.CPU {
		prev[c.ID] = c
	}
	var ticks float64
	n := 0
	for _, c := range b.CPU {
		if p, ok := prev[c.ID]; ok {
			ticks += float64(diff(p.Total(), c.Total()))
			n++
		}
	}
	if n == 0 {
		return nil
	}
	if ticks == 0 {
		return &ProcessUse{}
	}
	one := ticks / float64(n)
	u := &ProcessUse{User: 100 * float64(diff(a.Process.User, b.Process.User)) / one,
		System: 100 * float64(diff(a.Process.System, b.Process.System)) / one}
	u.Busy = u.User + u.System
	return u
}

// cpuUse splits one CPU's tick deltas into percentages. Nice time counts
// as user time, as mpstat's %usr+%nice would.
func cpuUse(a, b CPUTimes) CPUUse {
	d := CPUTimes{
		User:    diff(a.User, b.User),
		Nice:    diff(a.Nice, b.Nice),
		System:  diff(a.System, b.System),
		Idle:    diff(a.Idle, b.Idle),
		IOWait:  diff(a.IOWait, b.IOWait),
		IRQ:     diff(a.IRQ, b.IRQ),
		SoftIRQ: diff(a.SoftIRQ, b.SoftIRQ),
		Steal:   diff(a.Steal, b.Steal),
	}
	u := CPUUse{ID: b.ID}
	total := float64(d.Total())
	if total == 0 {
		return u
	}
	pct := func(x uint64) float64 { return 100 * float64(x) / total }
	u.User = pct(d.User + d.Nice)
	u.System = pct(d.System)
	u.IRQ = pct(d.IRQ)
	u.SoftIRQ = pct(d.SoftIRQ)
	u.Idle = pct(d.Idle)
	u.IOWait = pct(d.IOWait)
	u.Steal = pct(d.Steal)
	u.Busy = 100 - u.Idle - u.IOWait
	return u
}

func rowRates(a, b map[string][]uint64, rate func(x, y uint64) float64) map[string][]float64 {
	if b == nil {
		return nil
	}
	out := make(map[string][]float64, len(b))
	for k, row := range b {
		prow, ok := a[k]
		if !ok {
			continue
		}
		n := min(len(row), len(prow))
		rs := make([]float64, n)
		for i := range n {
			rs[i] = rate(prow[i], row[i])
		}
		out[k] = rs
	}
	return out
}

func fieldRates(a, b map[string]uint64, rate func(x, y uint64) float64) map[string]float64 {
	if b == nil {
		return nil
	}
	out := make(map[string]float64, len(b))
	for k, v := range b {
		if pv, ok := a[k]; ok {
			out[k] = rate(pv, v)
		}
	}
	return out
}
