package main

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// routerPi is the RouterPi of seed 002 (CM4, Raspberry Pi OS buster,
// 5.10.63-v8+, 1.5 GHz) NAT-routing the "Outbound (upload)" iperf3 test
// before any tuning: 932 Mb/s, 81 kpps, CPU0 100 %, CPUs 1-3 idle. Upload
// traffic arrives on the onboard eth0 (bcmgenet, LAN) and leaves on eth1
// (RTL8111H, WAN); the TCP ACKs come back the other way. Every interrupt
// is on CPU0: eth0's two GIC interrupts (41 rx, 42 tx, as the seed names
// them) by default, eth1's single MSI because it cannot leave CPU0. RPS is
// off, irqbalance does not run, and eth0's coalescing is as bcmgenet sets
// it (one frame, no timeout), so eth0 raises nearly one interrupt per
// packet.
func routerPi() *box {
	b := &box{
		name: "routerpi", host: "routerpi", kernel: "5.10.63-v8+", arch: "arm64",
		kv: 510, prec: 3, nrIRQs: 128, ncpu: 4,
		t0:     time.Date(2021, 11, 6, 14, 2, 31, 118204412, time.UTC),
		uptime: 12*86400 + 5120.33,
		dts:    []float64{1.000311, 0.999874, 1.000402},
		rng:    rand.New(rand.NewPCG(2, 2)),
		tree:   newTree(),
	}
	up := b.uptime
	quiet := [8]float64{0.002, 0, 0.004, 0.994, 0, 0, 0, 0}
	b.cpus = []*cpuTimes{
		newCPU(up, 0.006, 0.009, 0.001, 0.031, [8]float64{0.004, 0, 0.018, 0, 0, 0, 0.978, 0}),
		newCPU(up, 0.004, 0.005, 0.001, 0.001, quiet),
		newCPU(up, 0.004, 0.004, 0.001, 0.001, quiet),
		newCPU(up, 0.003, 0.004, 0.001, 0.001, quiet),
	}

	// traffic: 932 Mb/s of iperf3 goodput is 80.5 kpps of 1448-byte
	// segments (1514-byte frames); delayed ACKs come back at half that.
	const data, acks = 80450.0, 40225.0
	z := fill(4, 0)
	b.piBaseIRQs([]float64{250, 26, 23, 24})
	b.irq(41, "GICv2", 189, "Level", "eth0", []float64{402118904, 0, 0, 0}, []float64{71800, 0, 0, 0}).aff(gicDefault[0], gicDefault[1], gicDefault[2])
	b.irq(42, "GICv2", 190, "Level", "eth0", []float64{63017255, 0, 0, 0}, []float64{4100, 0, 0, 0}).aff(gicDefault[0], gicDefault[1], gicDefault[2])
	b.irq(48, "GICv2", 175, "Level", "PCIe PME, aerdrv", z, z)
	b.irq(49, "BRCM STB PCIe MSI", 0x100<<11, "Edge", "eth1", []float64{211004127, 0, 0, 0}, []float64{21500, 0, 0, 0}).aff(msiUnmovable[0], msiUnmovable[1], msiUnmovable[2])
	b.piIPIs([7][]float64{
		{up * 40, up * 9, up * 8, up * 8},
		{up * 0.3, up * 0.5, up * 0.5, up * 0.4},
		nil, nil, nil,
		{up * 18, up * 0.1, up * 0.1, up * 0.1},
		nil,
	}, [7][]float64{{42, 9, 8, 8}, {0.3, 0.5, 0.5, 0.4}, nil, nil, nil, {20, 0.1, 0.1, 0.1}, nil})

	b.softirqs(map[string][]float64{
		"HI":       {2, 0, 0, 1},
		"TIMER":    {up * 60, up * 14, up * 12, up * 13},
		"NET_TX":   {up * 2.1, up * 0.01, up * 0.01, up * 0.01},
		"NET_RX":   {up * 610, up * 0.2, up * 0.1, up * 0.2},
		"BLOCK":    {up * 0.1, up * 0.05, up * 0.05, up * 0.05},
		"IRQ_POLL": {0, 0, 0, 0},
		"TASKLET":  {up * 0.05, 3, 1, 2},
		"SCHED":    {up * 40, up * 11, up * 10, up * 10},
		"HRTIMER":  {12, 4, 3, 2},
		"RCU":      {up * 55, up * 9, up * 8, up * 8},
	}, map[string][]float64{
		"TIMER":  {250, 20, 18, 19},
		"NET_TX": {610, 0, 0, 0},
		"NET_RX": {76400, 0.1, 0, 0.1},
		"SCHED":  {180, 15, 12, 14},
		"RCU":    {240, 12, 10, 11},
	})

	lo := &nic{name: "lo", queues: []*queue{{rxPkts: 3301877, rxBytes: 302117455, txPkts: 3301877, txBytes: 302117455, rxPps: 9, rxSize: 88, txPps: 9, txSize: 88}},
		rxCPU: map[int]float64{0: 1}}
	// eth0 rings 0, 1, 2, 3, 16: everything received lands in ring 16; the
	// ACKs it sends spread over the five tx queues by flow hash.
	eth0 := &nic{name: "eth0", driver: "bcmgenet", rxCPU: map[int]float64{0: 1}, extra: map[string]*ctr{}}
	txShare := []float64{0.2, 0.2, 0.2, 0.2, 0.2}
	baseTx := []float64{498112004, 501340212, 497991873, 503118090, 503211923}
	for i := 0; i < 5; i++ {
		q := &queue{txPkts: baseTx[i], txBytes: baseTx[i] * 1207, txPps: acks * txShare[i], txSize: 66}
		if i == 4 {
			q.rxPkts, q.rxBytes, q.rxPps, q.rxSize = 1204118330, 1204118330*412, data, 1514
		}
		eth0.queues = append(eth0.queues, q)
	}
	eth0.multicast = ctr{1120433, 0.4}
	eth0.broadcast = ctr{88120, 0.2}
	eth0.txBroadcast = ctr{2003, 0}
	eth1 := &nic{name: "eth1", driver: "r8169", rxCPU: map[int]float64{0: 1}, extra: map[string]*ctr{},
		queues: []*queue{{rxPkts: 2650119004, rxBytes: 2650119004 * 1180, txPkts: 1240551907, txBytes: 1240551907 * 436,
			rxPps: acks, rxSize: 66, txPps: data, txSize: 1514}}}
	eth1.multicast = ctr{3, 0}
	eth1.broadcast = ctr{14, 0}
	wlan := &nic{name: "wlan0", queues: []*queue{{}}, rxCPU: map[int]float64{}}
	b.nics = []*nic{lo, eth0, eth1, wlan}
	b.softnet = []*softnetCPU{
		{processed: ctr{3854228511 % (1 << 32), 0.2}, squeeze: ctr{2211304, 310}},
		{processed: ctr{41102, 0.1}},
		{processed: ctr{38877, 0}},
		{processed: ctr{40021, 0.1}},
	}

	b.snmp = snmpSections(b.kv, true)
	ip := b.snmpSec("Ip")
	ip.set("InReceives", 3912441010, data+acks+6)
	ip.set("ForwDatagrams", 3898021114, data+acks)
	ip.set("InDelivers", 14201877, 6)
	ip.set("OutRequests", 13900211, 6)
	ip.set("InAddrErrors", 12, 0)
	ip.set("OutNoRoutes", 4, 0)
	udp := b.snmpSec("Udp")
	udp.set("InDatagrams", 9120455, 5)
	udp.set("NoPorts", 2210, 0)
	udp.set("OutDatagrams", 9422017, 5)
	udp.set("IgnoredMulti", 41220, 0.1)
	tcp := b.snmpSec("Tcp")
	tcp.set("ActiveOpens", 20113, 0)
	tcp.set("PassiveOpens", 3024, 0)
	tcp.set("AttemptFails", 112, 0)
	tcp.set("EstabResets", 87, 0)
	tcp.set("CurrEstab", 3, 0)
	tcp.set("InSegs", 4871230, 1)
	tcp.set("OutSegs", 4690337, 1)
	tcp.set("RetransSegs", 1204, 0)
	tcp.set("OutRsts", 3301, 0)
	icmp := b.snmpSec("Icmp")
	icmp.set("InMsgs", 4410, 0)
	icmp.set("InDestUnreachs", 4410, 0)
	icmp.set("OutMsgs", 2210, 0)
	icmp.set("OutDestUnreachs", 2210, 0)
	im := b.snmpSec("IcmpMsg")
	im.set("InType3", 4410, 0)
	im.set("OutType3", 2210, 0)
	b.ctxt = ctr{2210433871, 9800}
	b.procs = ctr{88120, 0.05}

	b.sysctls = sysctls5x(true, 57256, 214)
	b.comms = map[int]string{1: "systemd", 402: "sshd", 455: "pihole-FTL", 489: "named", 612: "dhcpcd", 2044: "dstat"}

	t := b.tree
	t.netdev("", "lo", netAttrs{1, 772, "00:00:00:00:00:00", 65536, 1000, "unknown", "1", "", ""}, 1, 1, "0", "", true)
	b.piGenet("dc:a6:32:8e:41:07", 2)
	// eth1: RTL8111H (10ec:8168 rev 15) on the CM4's PCIe x1. The chip is
	// PCIe 1.1, so the link trains at 2.5 GT/s although the root port
	// could do 5. One MSI vector, one rx and one tx queue.
	eth1Dir := piRootDir + "/0000:01:00.0"
	t.netdev(eth1Dir, "eth1", netAttrs{3, 1, "00:e0:4c:68:01:2f", 1500, 1000, "up", "1", "1000", "full"}, 1, 1, "0", "", false)
	t.pciDev(eth1Dir, "0000:01:00.0", pciAttrs{vendor: "0x10ec", device: "0x8168", class: "0x020000",
		subVendor: "0x10ec", subDevice: "0x0123",
		curSpeed: "2.5 GT/s PCIe", curWidth: "1", maxSpeed: "2.5 GT/s PCIe", maxWidth: "1",
		irq: 49, msi: []int{49}, msiKind: "msi", driver: "r8169"})
	t.bin("pci/0000:01:00.0/config", pciConfig{
		vendor: 0x10ec, device: 0x8168, rev: 0x15, class: 0x020000, subVendor: 0x10ec, subDevice: 0x0123,
		bars:    []uint32{0x00000001, 0, 0xf8004004, 0, 0xf8000004, 0},
		irqLine: 0, irqPin: 1,
		pmOff: 0x40, msiOff: 0x50, msiEnabled: true, msi64: true, msiAddr: 0xfffffffc, msiData: 0x6540,
		expOff: 0x70, msixOff: 0xb0, msixTable: 4,
		portType: 0, mpsSupported: 128, mps: 128, mrrs: 512,
		maxSpeed: 1, maxWidth: 1, curSpeed: 1, curWidth: 1,
	}.bytes())
	b.piRootPort(1, 48)
	b.piWlan("dc:a6:32:8e:41:08", 4)

	i := drvinfo{driver: "r8169", version: b.kernel, firmware: "rtl8168h-2_0.0.2 02/26/15", bus: "0000:01:00.0", stats: true, regdump: true}
	b.ethtoolFile("eth1", "i.txt", i.text())
	softOn, softCh := softFeatures(b.kv)
	// rtl_init_one (5.10): SG and TSO off by default but switchable; IPv4
	// checksums and VLAN offloads on; IPv6 checksum and TSO6 switchable on
	// chips with checksum v2; rx-fcs and rx-all switchable; highdma fixed.
	on := union([]string{"tx-checksum-ipv4", "rx-checksum", "tx-vlan-hw-insert", "rx-vlan-hw-parse", "highdma"}, softOn)
	ch := union([]string{"tx-scatter-gather", "tx-checksum-ipv4", "tx-checksum-ipv6", "rx-checksum", "tx-vlan-hw-insert",
		"rx-vlan-hw-parse", "tx-tcp-segmentation", "tx-tcp6-segmentation", "tx-tcp-mangleid-segmentation", "rx-fcs", "rx-all"}, softCh)
	b.ethtoolFile("eth1", "k.txt", featuresText("eth1", b.kv, on, ch))
	// rtl_get_coalesce reports 1 frame where the timer is 0 (ethtool's
	// convention that both 0 is illegal); coalescing is off by default.
	b.ethtoolFile("eth1", "c.txt", coalesceText("eth1", false, false, map[string]uint32{"rx-frames": 1, "tx-frames": 1}))
	b.ethtoolFile("eth1", "g.txt", fmt.Sprintf(ringUnsupported, "eth1"))
	b.ethtoolFile("eth1", "l.txt", fmt.Sprintf(chanUnsupported, "eth1"))
	b.ethtoolFile("eth1", "x.txt", rxRingsUnsupp)
	for _, f := range []string{"tcp4", "udp4", "tcp6", "udp6"} {
		b.ethtoolFile("eth1", "n-"+f+".txt", flowUnsupported)
	}
	gig := []string{"10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Full"}
	b.ethtoolFile("eth1", "link.txt", linkText{
		ports: []string{"TP", "MII"}, supported: gig, advertised: gig, partner: gig,
		pause: "Symmetric Receive-only", partnerPause: "Symmetric",
		speed: "1000Mb/s", duplex: "Full", port: "MII", phyad: 0, transceiver: "internal",
		wolSupported: "pumbg", wol: "d", msglvl: 0x33, msgNames: "drv probe ifdown ifup", link: true,
	}.text("eth1"))

	b.cpufreq(true, true, "cpufreq-dt", "ondemand", 600000, 1500000, []int{1500000, 1500000, 1500000, 1500000}, piFreqs)
	b.thermal("cpu-thermal", 62322)
	b.piThrottle(0)
	return b
}
