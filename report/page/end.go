package page

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"time"

	"linerate/box"
	"linerate/results"
)

// endView is one end of the test (the client, or a server) as its
// counters saw it once a second.
type endView struct {
	Name string
	// Ifaces are the end's interfaces on the test's path.
	Ifaces []string
	// Traffic charts the interfaces' packets and bits per second.
	Traffic []template.HTML
	// CPUs are small multiples of each CPU's use, stacked.
	CPUs []template.HTML
	// CPUMean is the mean busy share per CPU over the window.
	CPUMean template.HTML
	IRQs    template.HTML
	NetRx   template.HTML
	Softnet template.HTML
	// Drops are the end's non-zero drop counters over the window.
	Drops     []dropRow
	DropError string
	// Outside counts the samples left out of the charts: they lie mostly
	// outside the measured window (the last one taken as the run stopped).
	Outside int
}

// sideName names a sample's end.
func sideName(r *results.Result, side results.Side, target int) string {
	if side == results.SideServer && target >= 0 && target < len(r.Targets) {
		return "server " + r.Targets[target].Target
	}
	if side == results.SideServer {
		return fmt.Sprintf("server %d", target)
	}
	return string(side)
}

// ends lays out each end's samples and drop counters.
func (v *benchView) ends() {
	r := v.res
	type key struct {
		side   results.Side
		target int
	}
	byEnd := map[key]*endView{}
	var order []key
	get := func(k key) *endView {
		e := byEnd[k]
		if e == nil {
			e = &endView{Name: sideName(r, k.side, k.target)}
			byEnd[k] = e
			order = append(order, k)
		}
		return e
	}
	samples := map[key][]box.Rates{}
	var t0 time.Time
	for _, s := range r.Samples {
		k := key{s.Side, s.Target}
		if s.Side == results.SideClient {
			k.target = -1
		}
		get(k)
		samples[k] = append(samples[k], s.Rates)
		if t0.IsZero() || s.Start.Before(t0) {
			t0 = s.Start
		}
	}
	for _, d := range r.Drops {
		k := key{d.Side, d.Target}
		if d.Side == results.SideClient {
			k.target = -1
		}
		e := get(k)
		e.Ifaces = d.Ifaces
		e.Drops, e.DropError = dropRows(d)
	}
	secs := r.Summary.Seconds
	if secs <= 0 {
		secs = r.Spec.Duration.D().Seconds()
	}
	for _, k := range order {
		e := byEnd[k]
		in := results.SamplesInWindow(samples[k], secs)
		e.Outside = len(samples[k]) - len(in)
		e.charts(in, t0)
		v.Ends = append(v.Ends, e)
	}
}

// charts draws an end's samples; t0 is the time the charts start at.
func (e *endView) charts(rs []box.Rates, t0 time.Time) {
	if len(rs) == 0 {
		return
	}
	t := make([]float64, len(rs))
	for i, r := range rs {
		t[i] = r.End.Sub(t0).Seconds()
	}
	e.traffic(rs, t)
	e.cpus(rs, t)
	e.irqs(rs, t)
}

// traffic charts the packets and bits per second of the end's interfaces
// on the path (of every interface that carried traffic when the path is
// not known).
func (e *endView) traffic(rs []box.Rates, t []float64) {
	ifaces := e.Ifaces
	if len(ifaces) == 0 {
		seen := map[string]bool{}
		for _, r := range rs {
			for name, d := range r.NetDev {
				if d.RxPps+d.TxPps > 0 {
					seen[name] = true
				}
			}
		}
		for name := range seen {
			ifaces = append(ifaces, name)
		}
		sort.Strings(ifaces)
	}
	if len(ifaces) == 0 {
		return
	}
	var pss, bss []series
	for i, name := range ifaces {
		var rxp, txp, rxb, txb []float64
		for _, r := range rs {
			d, ok := r.NetDev[name]
			if !ok {
				nan := math.NaN()
				rxp, txp, rxb, txb = append(rxp, nan), append(txp, nan), append(rxb, nan), append(txb, nan)
				continue
			}
			rxp, txp, rxb, txb = append(rxp, d.RxPps), append(txp, d.TxPps), append(rxb, d.RxBps), append(txb, d.TxBps)
		}
		pss = append(pss, series{Name: name + " rx", Color: colour(2 * i), Y: rxp}, series{Name: name + " tx", Color: colour(2*i + 1), Y: txp})
		bss = append(bss, series{Name: name + " rx", Color: colour(2 * i), Y: rxb}, series{Name: name + " tx", Color: colour(2*i + 1), Y: txb})
	}
	e.Traffic = append(e.Traffic,
		chart{Title: e.Name + ": packets per second by interface", X: t, Series: pss}.Render(),
		chart{Title: e.Name + ": bits per second by interface", X: t, Unit: "b/s", Series: bss}.Render())
}

// cpuLayers are the parts of a CPU's time the stacks show.
var cpuLayers = []struct {
	name string
	get  func(box.CPUUse) float64
}{
	{"usr", func(c box.CPUUse) float64 { return c.User }},
	{"sys", func(c box.CPUUse) float64 { return c.System }},
	{"irq", func(c box.CPUUse) float64 { return c.IRQ }},
	{"softirq", func(c box.CPUUse) float64 { return c.SoftIRQ }},
}

// cpuIDs lists the CPU ids the samples hold, in order.
func cpuIDs(rs []box.Rates) []int {
	seen := map[int]bool{}
	var ids []int
	for _, r := range rs {
		for _, c := range r.CPU {
			if !seen[c.ID] {
				seen[c.ID] = true
				ids = append(ids, c.ID)
			}
		}
	}
	sort.Ints(ids)
	return ids
}

func (e *endView) cpus(rs []box.Rates, t []float64) {
	ids := cpuIDs(rs)
	if len(ids) == 0 {
		return
	}
	index := map[int]int{}
	for i, id := range ids {
		index[id] = i
	}
	// use[cpu][layer][sample]
	use := make([][][]float64, len(ids))
	for i := range use {
		use[i] = make([][]float64, len(cpuLayers))
		for l := range cpuLayers {
			use[i][l] = make([]float64, len(rs))
			for j := range rs {
				use[i][l][j] = math.NaN()
			}
		}
	}
	for j, r := range rs {
		for _, c := range r.CPU {
			for l, layer := range cpuLayers {
				use[index[c.ID]][l][j] = layer.get(c)
			}
		}
	}
	mean := make([][]float64, len(cpuLayers))
	cats := make([]string, len(ids))
	for i, id := range ids {
		cats[i] = "cpu" + strconv.Itoa(id)
		var ss []series
		for l, layer := range cpuLayers {
			ss = append(ss, series{Name: layer.name, Color: colour(l), Y: use[i][l]})
			mean[l] = append(mean[l], meanOf(use[i][l]))
		}
		e.CPUs = append(e.CPUs, chart{Title: e.Name + " cpu" + strconv.Itoa(id), X: t, Series: ss, Stacked: true, Unit: "%", YMax: 100, Small: true}.Render())
	}
	var ms []series
	for l, layer := range cpuLayers {
		ms = append(ms, series{Name: layer.name, Color: colour(l), Y: mean[l]})
	}
	e.CPUMean = bars{Title: e.Name + ": mean CPU use over the window", Categories: cats, Series: ms, Unit: "%", YMax: 100}.Render()
}

// meanOf is the mean of the values that are not NaN.
func meanOf(v []float64) float64 {
	var s float64
	n := 0
	for _, x := range v {
		if !math.IsNaN(x) {
			s += x
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

// maxCPULines is the most CPUs a chart of one line per CPU draws; the
// rest are summed in one line.
const maxCPULines = 8

// maxIRQs is the most IRQ labels the interrupt chart names; the rest are
// "other".
const maxIRQs = 7

// irqs charts the interrupts per CPU (mean per second, by IRQ), NET_RX
// softirqs per CPU over time, and softnet drops and squeezes.
func (e *endView) irqs(rs []box.Rates, t []float64) {
	ids := cpuIDs(rs)
	n := len(ids)
	for _, r := range rs {
		for _, v := range r.Interrupts {
			n = max(n, len(v))
		}
	}
	if n == 0 {
		return
	}
	cats := make([]string, n)
	for i := range cats {
		cats[i] = "cpu" + strconv.Itoa(i)
	}
	// Mean interrupts per second per CPU, by label.
	sum := map[string][]float64{}
	for _, r := range rs {
		for label, v := range r.Interrupts {
			s := sum[label]
			if s == nil {
				s = make([]float64, n)
				sum[label] = s
			}
			for i := 0; i < len(v) && i < n; i++ {
				s[i] += v[i] / float64(len(rs))
			}
		}
	}
	type irq struct {
		label string
		total float64
	}
	var all []irq
	for label, v := range sum {
		var s float64
		for _, x := range v {
			s += x
		}
		if s > 0 {
			all = append(all, irq{label, s})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].total != all[j].total {
			return all[i].total > all[j].total
		}
		return all[i].label < all[j].label
	})
	var ss []series
	other := make([]float64, n)
	hasOther := false
	for i, q := range all {
		if i < maxIRQs {
			name := q.label
			if _, err := strconv.Atoi(name); err == nil {
				name = "irq " + name
			}
			ss = append(ss, series{Name: name, Color: colour(i), Y: sum[q.label]})
			continue
		}
		hasOther = true
		for j, x := range sum[q.label] {
			other[j] += x
		}
	}
	if hasOther {
		ss = append(ss, series{Name: "other", Color: "#999999", Y: other})
	}
	if len(ss) > 0 {
		e.IRQs = bars{Title: e.Name + ": interrupts per second per CPU (mean over the window)", Categories: cats, Series: ss}.Render()
	}
	// NET_RX softirqs per CPU over time: the busiest CPUs, the rest summed.
	type cpuLine struct {
		name  string
		y     []float64
		total float64
	}
	var lines []cpuLine
	for i := 0; i < n; i++ {
		l := cpuLine{name: "cpu" + strconv.Itoa(i), y: make([]float64, len(rs))}
		for j, r := range rs {
			l.y[j] = math.NaN()
			if v := r.SoftIRQs["NET_RX"]; i < len(v) {
				l.y[j] = v[i]
				l.total += v[i]
			}
		}
		if l.total > 0 {
			lines = append(lines, l)
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].total > lines[j].total })
	var nr []series
	for i, l := range lines {
		if i < maxCPULines {
			nr = append(nr, series{Name: l.name, Color: colour(i), Y: l.y})
			continue
		}
		if i == maxCPULines {
			nr = append(nr, series{Name: fmt.Sprintf("the other %d CPUs", len(lines)-maxCPULines), Color: "#999999", Y: make([]float64, len(rs))})
		}
		other := nr[len(nr)-1].Y
		for j, v := range l.y {
			if !math.IsNaN(v) {
				other[j] += v
			}
		}
	}
	if len(nr) > 0 {
		e.NetRx = chart{Title: e.Name + ": NET_RX softirqs per second per CPU", X: t, Series: nr}.Render()
	}
	// Softnet drops and time squeezes, summed over the CPUs.
	drop, squeeze := make([]float64, len(rs)), make([]float64, len(rs))
	moved := false
	for j, r := range rs {
		for _, s := range r.Softnet {
			drop[j] += s.Dropped
			squeeze[j] += s.TimeSqueeze
		}
		moved = moved || drop[j] > 0 || squeeze[j] > 0
	}
	if moved {
		e.Softnet = chart{Title: e.Name + ": softnet backlog drops and time squeezes per second (all CPUs)", X: t,
			Series: []series{{Name: "dropped", Color: colour(3), Y: drop}, {Name: "time squeeze", Color: colour(1), Y: squeeze}}}.Render()
	}
}
