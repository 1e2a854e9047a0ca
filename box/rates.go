package box

// MeanRates averages several intervals, weighting each by its length.
// Instantaneous values (Celsius, CurKHz) come from the last interval.
func MeanRates(rs []Rates) Rates {
	if len(rs) == 0 {
		return Rates{}
	}
	var total float64
	for _, r := range rs {
		total += r.Seconds
	}
	w := func(r Rates) float64 {
		if total <= 0 {
			return 1 / float64(len(rs))
		}
		return r.Seconds / total
	}
	last := rs[len(rs)-1]
	out := Rates{
		Start: rs[0].Start, End: last.End, Seconds: total,
		Interrupts: map[string][]float64{}, SoftIRQs: map[string][]float64{},
		NetDev: map[string]NetDevRate{}, Ethtool: map[string]map[string]float64{},
		UDP: map[string]float64{}, TCP: map[string]float64{},
		Celsius: last.Celsius, CurKHz: last.CurKHz,
	}
	addVec := func(dst map[string][]float64, k string, v []float64, wt float64) {
		d := dst[k]
		for len(d) < len(v) {
			d = append(d, 0)
		}
		for i := range v {
			d[i] += v[i] * wt
		}
		dst[k] = d
	}
	cpu := map[int]*CPUUse{}
	var cpuOrder []int
	soft := map[int]*SoftnetRate{}
	var softOrder []int
	for _, r := range rs {
		wt := w(r)
		for _, c := range r.CPU {
			u, ok := cpu[c.ID]
			if !ok {
				u = &CPUUse{ID: c.ID}
				cpu[c.ID] = u
				cpuOrder = append(cpuOrder, c.ID)
			}
			u.AddWeighted(c, wt)
		}
		for k, v := range r.Interrupts {
			addVec(out.Interrupts, k, v, wt)
		}
		for k, v := range r.SoftIRQs {
			addVec(out.SoftIRQs, k, v, wt)
		}
		for k, v := range r.RxQueues {
			if out.RxQueues == nil {
				out.RxQueues = map[string][]float64{}
			}
			addVec(out.RxQueues, k, v, wt)
		}
		for _, s := range r.Softnet {
			u, ok := soft[s.CPU]
			if !ok {
				u = &SoftnetRate{CPU: s.CPU}
				soft[s.CPU] = u
				softOrder = append(softOrder, s.CPU)
			}
			u.Processed += s.Processed * wt
			u.Dropped += s.Dropped * wt
			u.TimeSqueeze += s.TimeSqueeze * wt
			u.ReceivedRPS += s.ReceivedRPS * wt
		}
		for k, v := range r.NetDev {
			d := out.NetDev[k]
			d.RxBps += v.RxBps * wt
			d.TxBps += v.TxBps * wt
			d.RxPps += v.RxPps * wt
			d.TxPps += v.TxPps * wt
			d.RxDrops += v.RxDrops * wt
			d.TxDrops += v.TxDrops * wt
			d.RxErrors += v.RxErrors * wt
			d.TxErrors += v.TxErrors * wt
			d.RxFifo += v.RxFifo * wt
			out.NetDev[k] = d
		}
		for nic, m := range r.Ethtool {
			d := out.Ethtool[nic]
			if d == nil {
				d = map[string]float64{}
				out.Ethtool[nic] = d
			}
			for k, v := range m {
				d[k] += v * wt
			}
		}
		for k, v := range r.UDP {
			out.UDP[k] += v * wt
		}
		for k, v := range r.TCP {
			out.TCP[k] += v * wt
		}
	}
	for _, id := range cpuOrder {
		out.CPU = append(out.CPU, *cpu[id])
	}
	for _, id := range softOrder {
		out.Softnet = append(out.Softnet, *soft[id])
	}
	return out
}

// AddWeighted adds c's shares times w to u: a weighted mean of several
// intervals' use of one CPU is the sum of each one's AddWeighted with its
// share of the time.
func (u *CPUUse) AddWeighted(c CPUUse, w float64) {
	u.User += c.User * w
	u.System += c.System * w
	u.IRQ += c.IRQ * w
	u.SoftIRQ += c.SoftIRQ * w
	u.Idle += c.Idle * w
	u.IOWait += c.IOWait * w
	u.Steal += c.Steal * w
	u.Busy += c.Busy * w
}
