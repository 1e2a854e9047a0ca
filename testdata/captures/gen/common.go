package main

import (
	"fmt"
	"strings"
)

// softirqNames are the rows of /proc/softirqs in 5.x (include/linux/interrupt.h).
var softirqNames = []string{"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"}

// softirqs makes the rows from base counts and rates per CPU, by name.
func (b *box) softirqs(base, rate map[string][]float64) {
	for _, name := range softirqNames {
		r := &perCPU{name: name, counts: make([]float64, b.ncpu), rates: make([]float64, b.ncpu)}
		copy(r.counts, base[name])
		copy(r.rates, rate[name])
		b.soft = append(b.soft, r)
	}
}

func (b *box) irq(n int, chip string, hwirq int, trigger, actions string, counts, rates []float64) *irqLine {
	l := &irqLine{n: n, chip: chip, hwirq: hwirq, trigger: trigger, actions: actions,
		counts: append([]float64(nil), counts...), rates: append([]float64(nil), rates...)}
	if l.rates == nil {
		l.rates = make([]float64, b.ncpu)
	}
	b.irqs = append(b.irqs, l)
	return l
}

func (l *irqLine) aff(mask, list, effective string) *irqLine {
	l.affinity = &[3]string{mask, list, effective}
	return l
}

// cpufreq writes cpuN/online and the cpufreq policy files; shared policy
// (one clock for all cores, as on the BCM2711) links every cpuN/cpufreq to
// policy0, otherwise each CPU has its own policyN.
func (b *box) cpufreq(shared, cpu0Online bool, driver, governor string, min, max int, cur []int, avail string) {
	t := b.tree
	base := "sys/devices/system/cpu/"
	t.file(base+"online", fmt.Sprintf("0-%d\n", b.ncpu-1))
	t.file(base+"present", fmt.Sprintf("0-%d\n", b.ncpu-1))
	t.file(base+"possible", fmt.Sprintf("0-%d\n", b.ncpu-1))
	for i := 0; i < b.ncpu; i++ {
		if i > 0 || cpu0Online {
			t.file(fmt.Sprintf("%scpu%d/online", base, i), "1\n")
		}
		pol := i
		if shared {
			pol = 0
		}
		t.link(fmt.Sprintf("%scpu%d/cpufreq", base, i), fmt.Sprintf("%scpufreq/policy%d", base, pol))
		if shared && i > 0 {
			continue
		}
		p := fmt.Sprintf("%scpufreq/policy%d/", base, pol)
		rel := fmt.Sprint(i)
		if shared {
			var all []string
			for c := 0; c < b.ncpu; c++ {
				all = append(all, fmt.Sprint(c))
			}
			rel = strings.Join(all, " ")
		}
		t.file(p+"affected_cpus", rel+"\n")
		t.file(p+"related_cpus", rel+"\n")
		t.file(p+"cpuinfo_min_freq", fmt.Sprintf("%d\n", min))
		t.file(p+"cpuinfo_max_freq", fmt.Sprintf("%d\n", max))
		t.file(p+"scaling_min_freq", fmt.Sprintf("%d\n", min))
		t.file(p+"scaling_max_freq", fmt.Sprintf("%d\n", max))
		t.file(p+"scaling_cur_freq", fmt.Sprintf("%d\n", cur[i]))
		t.file(p+"scaling_governor", governor+"\n")
		t.file(p+"scaling_driver", driver+"\n")
		t.file(p+"scaling_available_governors", "conservative ondemand userspace powersave performance schedutil\n")
		t.file(p+"scaling_available_frequencies", avail+"\n")
	}
}

// thermal writes thermal_zone0 as a link into devices/virtual/thermal.
func (b *box) thermal(typ string, milliC int) {
	d := "sys/devices/virtual/thermal/thermal_zone0"
	b.tree.link("sys/class/thermal/thermal_zone0", d)
	b.tree.file(d+"/type", typ+"\n")
	b.tree.file(d+"/temp", fmt.Sprintf("%d\n", milliC))
}

// udpMem is net.ipv4.udp_mem as udp_init computes it from the pages the
// kernel can use for buffers: limit/4*3, limit, twice the first.
func udpMem(limit int) string {
	a := limit / 4 * 3
	return fmt.Sprintf("%d\t%d\t%d", a, limit, a*2)
}

// sysctls5x are the values of box.Sysctls on an untuned 5.x kernel with
// CONFIG_HZ=250 (netdev_budget_usecs = 2 * USEC_PER_SEC / HZ).
func sysctls5x(forward bool, udpLimit int, conntrackCount int) [][2]string {
	fw := "0"
	if forward {
		fw = "1"
	}
	return [][2]string{
		{"net.core.netdev_max_backlog", "1000"},
		{"net.core.netdev_budget", "300"},
		{"net.core.netdev_budget_usecs", "8000"},
		{"net.core.dev_weight", "64"},
		{"net.core.rmem_max", "212992"},
		{"net.core.wmem_max", "212992"},
		{"net.core.rmem_default", "212992"},
		{"net.core.wmem_default", "212992"},
		{"net.core.busy_poll", "0"},
		{"net.core.busy_read", "0"},
		{"net.core.rps_sock_flow_entries", "0"},
		{"net.ipv4.ip_forward", fw},
		{"net.ipv4.tcp_rmem", "4096\t131072\t6291456"},
		{"net.ipv4.tcp_wmem", "4096\t16384\t4194304"},
		{"net.ipv4.udp_mem", udpMem(udpLimit)},
		{"net.netfilter.nf_conntrack_max", "65536"},
		{"net.netfilter.nf_conntrack_count", fmt.Sprint(conntrackCount)},
	}
}

// ethtoolFile writes one ethtool text file of the capture.
func (b *box) ethtoolFile(iface, name, text string) {
	b.tree.file("ethtool/"+iface+"/"+name, text)
}

// mustContain panics when a rendered file does not hold a verbatim piece
// of seed output: the generator checks its own fidelity.
func mustContain(what, text, piece string) {
	if !strings.Contains(text, piece) {
		panic(what + " does not reproduce the seed text:\n" + piece)
	}
}
