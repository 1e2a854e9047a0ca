package main

import (
	"fmt"
	"strings"
)

// procStat renders /proc/stat (fs/proc/stat.c).
func (b *box) procStat() string {
	var s strings.Builder
	var all [8]uint64
	for _, c := range b.cpus {
		for i := range all {
			all[i] += c.t[i]
		}
	}
	line := func(name string, t [8]uint64) {
		fmt.Fprintf(&s, "%s %d %d %d %d %d %d %d %d 0 0\n", name, t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7])
	}
	line("cpu ", all)
	for i, c := range b.cpus {
		line(fmt.Sprintf("cpu%d", i), c.t)
	}
	// intr: the total, then one sum per IRQ number from 0 to nr_irqs-1.
	per := make([]uint64, b.nrIRQs)
	var total uint64
	for _, l := range b.irqs {
		for _, c := range l.counts {
			per[l.n] += uint64(c)
		}
		total += per[l.n]
	}
	for _, l := range b.named {
		for _, c := range l.counts {
			total += uint64(c)
		}
	}
	fmt.Fprintf(&s, "intr %d", total)
	for _, v := range per {
		fmt.Fprintf(&s, " %d", v)
	}
	s.WriteString("\n")
	fmt.Fprintf(&s, "ctxt %d\n", b.ctxt.u())
	fmt.Fprintf(&s, "btime %d\n", b.t0.Unix()-int64(b.uptime))
	fmt.Fprintf(&s, "processes %d\n", b.procs.u())
	running := 1
	for _, c := range b.cpus {
		if c.share[3] < 0.5 {
			running++
		}
	}
	fmt.Fprintf(&s, "procs_running %d\nprocs_blocked 0\n", running)
	var soft []uint64
	var stotal uint64
	for _, r := range b.soft {
		var v uint64
		for _, c := range r.counts {
			v += uint64(c)
		}
		soft = append(soft, v)
		stotal += v
	}
	fmt.Fprintf(&s, "softirq %d", stotal)
	for _, v := range soft {
		fmt.Fprintf(&s, " %d", v)
	}
	s.WriteString("\n")
	return s.String()
}

// procInterrupts renders /proc/interrupts as kernel/irq/proc.c
// (show_interrupts) and the architecture's arch_show_interrupts print it.
func (b *box) procInterrupts() string {
	var s strings.Builder
	fmt.Fprintf(&s, "%*s", b.prec+8, "")
	for i := 0; i < b.ncpu; i++ {
		fmt.Fprintf(&s, "CPU%-8d", i)
	}
	s.WriteString("\n")
	for _, l := range b.irqs {
		fmt.Fprintf(&s, "%*d: ", b.prec, l.n)
		for _, c := range l.counts {
			fmt.Fprintf(&s, "%10d ", uint64(c))
		}
		fmt.Fprintf(&s, " %8s", l.chip)
		fmt.Fprintf(&s, " %*d", b.prec, l.hwirq)
		if b.x86 {
			// x86 has no GENERIC_IRQ_SHOW_LEVEL; the flow handler's name follows.
			fmt.Fprintf(&s, "-%-8s", l.trigger)
		} else {
			fmt.Fprintf(&s, " %-8s", l.trigger)
		}
		if l.actions != "" {
			fmt.Fprintf(&s, "  %s", l.actions)
		}
		s.WriteString("\n")
	}
	if b.x86 {
		for _, l := range b.named {
			if l.global != nil { // ERR and MIS: one system-wide count
				fmt.Fprintf(&s, "%*s: %10d\n", b.prec, l.label, *l.global)
				continue
			}
			fmt.Fprintf(&s, "%*s: ", b.prec, l.label)
			for _, c := range l.counts {
				fmt.Fprintf(&s, "%10d ", uint64(c))
			}
			fmt.Fprintf(&s, "  %s\n", l.desc)
		}
		return s.String()
	}
	// arm64 (arch/arm64/kernel/smp.c show_ipi_list) then the error count.
	for i, l := range b.named {
		fmt.Fprintf(&s, "%*s%d:%s", b.prec-1, "IPI", i, "")
		for _, c := range l.counts {
			fmt.Fprintf(&s, "%10d ", uint64(c))
		}
		fmt.Fprintf(&s, "      %s\n", l.desc)
	}
	fmt.Fprintf(&s, "%*s: %10d\n", b.prec, "Err", 0)
	return s.String()
}

// procSoftirqs renders /proc/softirqs (fs/proc/softirqs.c).
func (b *box) procSoftirqs() string {
	var s strings.Builder
	s.WriteString("                    ")
	for i := 0; i < b.ncpu; i++ {
		fmt.Fprintf(&s, "CPU%-8d", i)
	}
	s.WriteString("\n")
	for _, r := range b.soft {
		fmt.Fprintf(&s, "%12s:", r.name)
		for _, c := range r.counts {
			fmt.Fprintf(&s, " %10d", uint64(c))
		}
		s.WriteString("\n")
	}
	return s.String()
}

// procSoftnet renders /proc/net/softnet_stat (net/core/net-procfs.c):
// 11 columns up to 5.9, 13 from 5.10 (backlog length and CPU id added).
func (b *box) procSoftnet() string {
	var s strings.Builder
	for i, c := range b.softnet {
		fmt.Fprintf(&s, "%08x %08x %08x %08x %08x %08x %08x %08x %08x %08x %08x",
			uint32(c.processed.u()), uint32(c.dropped.u()), uint32(c.squeeze.u()), 0, 0, 0, 0, 0, 0,
			uint32(c.rps.u()), uint32(c.flowLimit.u()))
		if b.kv >= 510 {
			fmt.Fprintf(&s, " %08x %08x", 0, i)
		}
		s.WriteString("\n")
	}
	return s.String()
}

// procSNMP renders /proc/net/snmp (net/ipv4/proc.c): a header line of
// field names and a line of values for each section.
func (b *box) procSNMP() string {
	var s strings.Builder
	for _, sec := range b.snmp {
		fmt.Fprintf(&s, "%s: %s\n", sec.name, strings.Join(sec.fields, " "))
		fmt.Fprintf(&s, "%s:", sec.name)
		for i, f := range sec.fields {
			if v, ok := sec.fixed[f]; ok {
				fmt.Fprintf(&s, " %d", v)
				continue
			}
			fmt.Fprintf(&s, " %d", sec.vals[i].u())
		}
		s.WriteString("\n")
	}
	return s.String()
}

// snmpSections returns the sections of /proc/net/snmp for the kernel
// series, all counters zero; the box sets what moves.
func snmpSections(kv int, forwarding bool) []*snmpSection {
	mk := func(name string, fields string) *snmpSection {
		f := strings.Fields(fields)
		return &snmpSection{name: name, fields: f, vals: make([]ctr, len(f)), fixed: map[string]int64{}}
	}
	ip := mk("Ip", "Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs ReasmFails FragOKs FragFails FragCreates")
	if forwarding {
		ip.fixed["Forwarding"] = 1
	} else {
		ip.fixed["Forwarding"] = 2
	}
	ip.fixed["DefaultTTL"] = 64
	icmp := mk("Icmp", "InMsgs InErrors InCsumErrors InDestUnreachs InTimeExcds InParmProbs InSrcQuenchs InRedirects InEchos InEchoReps InTimestamps InTimestampReps InAddrMasks InAddrMaskReps OutMsgs OutErrors OutDestUnreachs OutTimeExcds OutParmProbs OutSrcQuenchs OutRedirects OutEchos OutEchoReps OutTimestamps OutTimestampReps OutAddrMasks OutAddrMaskReps")
	icmpMsg := mk("IcmpMsg", "InType3 OutType3")
	tcp := mk("Tcp", "RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors")
	tcp.fixed["RtoAlgorithm"] = 1
	tcp.fixed["RtoMin"] = 200
	tcp.fixed["RtoMax"] = 120000
	tcp.fixed["MaxConn"] = -1
	udpFields := "InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti"
	if kv >= 510 {
		// UDP_MIB_MEMERRORS ("MemErrors") is listed from 5.8 on.
		udpFields += " MemErrors"
	}
	udp := mk("Udp", udpFields)
	udpLite := mk("UdpLite", udpFields)
	return []*snmpSection{ip, icmp, icmpMsg, tcp, udp, udpLite}
}

func (b *box) snmpSec(name string) *snmpSection {
	for _, s := range b.snmp {
		if s.name == name {
			return s
		}
	}
	panic("no snmp section " + name)
}
