package diagnose

import (
	"strconv"

	"linerate/box"
	"linerate/source/ethtool"
)

// Thresholds shared by several rules.
const (
	// saturated is the busy share at which a CPU counts as full.
	saturated = 85.0
	// idleEnough is the busy share under which a CPU counts as spare.
	idleEnough = 50.0
	// busyPPS is the packet rate under which per-packet costs don't matter.
	busyPPS = 10000.0
)

// nicIRQRate returns a NIC's interrupts per second on each CPU.
func nicIRQRate(m box.Rates, n *box.NIC) []float64 {
	var per []float64
	for _, irq := range n.IRQs {
		v := m.Interrupts[strconv.Itoa(irq)]
		for len(per) < len(v) {
			per = append(per, 0)
		}
		for i := range v {
			per[i] += v[i]
		}
	}
	return per
}

func sum(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}

// argmax returns the index of the largest value and its share of the sum.
func argmax(v []float64) (int, float64) {
	best, total := -1, sum(v)
	for i := range v {
		if best < 0 || v[i] > v[best] {
			best = i
		}
	}
	if best < 0 || total <= 0 {
		return best, 0
	}
	return best, v[best] / total
}

// cpuUse returns the mean use of CPU id.
func cpuUse(m box.Rates, id int) (box.CPUUse, bool) {
	for _, c := range m.CPU {
		if c.ID == id {
			return c, true
		}
	}
	return box.CPUUse{}, false
}

// otherCPUs returns the online CPUs other than id, and those of them that
// are spare (busy below idleEnough).
func otherCPUs(m box.Rates, id int) (all, spare []int) {
	for _, c := range m.CPU {
		if c.ID == id {
			continue
		}
		all = append(all, c.ID)
		if c.Busy < idleEnough {
			spare = append(spare, c.ID)
		}
	}
	return all, spare
}

// rxPPS is a NIC's received packets per second.
func rxPPS(m box.Rates, n *box.NIC) float64 { return m.NetDev[n.Name].RxPps }

// rxQueueCount is the number of queues that receive.
func rxQueueCount(n *box.NIC) int {
	if n.Channels != nil && n.Channels.RXQueues() > 0 {
		return int(n.Channels.RXQueues())
	}
	return len(n.RXQueues)
}

// rpsOn reports whether any rx queue steers packets with RPS.
func rpsOn(n *box.NIC) bool {
	for _, q := range n.RXQueues {
		if len(q.RPSCPUList) > 0 {
			return true
		}
	}
	return false
}

// physical reports whether a NIC is worth diagnosing: not loopback and
// carrying traffic or up.
func physical(n *box.NIC) bool { return n.Kind != box.KindLoopback && n.Name != "lo" }

// flowHash returns the fields hashed for a flow type, ok false when unknown.
func flowHash(n *box.NIC, ft ethtool.FlowType) (ethtool.FlowHash, bool) {
	s, ok := n.FlowHash[string(ft)]
	if !ok {
		return 0, false
	}
	h, err := ethtool.ParseFlowHashLetters(s)
	return h, err == nil
}

// one prints a single CPU as a CPU list.
func one(id int) string { return strconv.Itoa(id) }
