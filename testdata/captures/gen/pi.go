package main

import "fmt"

// The Raspberry Pi 4 / CM4 (BCM2711) pieces both Pi captures share.

const (
	piGenetDir = "sys/devices/platform/scb/fd580000.ethernet"
	piRootDir  = "sys/devices/platform/scb/fd500000.pcie/pci0000:00/0000:00:00.0"
	piWlanDir  = "sys/devices/platform/soc/fe300000.mmcnr/mmc_host/mmc1/mmc1:0001/mmc1:0001:1"
	piFreqs    = "600000 700000 800000 900000 1000000 1100000 1200000 1300000 1400000 1500000"
)

// piBaseIRQs adds the BCM2711 interrupts that are not the NICs' (the
// layout of real Pi 4 /proc/interrupts dumps of 5.10 kernels): per-CPU
// PPIs, the mailbox, UART, DMA, VCHIQ, the SD/eMMC and SDIO (WiFi)
// controllers and the four PMU SPIs, each bound to one CPU.
func (b *box) piBaseIRQs(timerRates []float64) {
	up := b.uptime
	z := fill(4, 0)
	b.irq(9, "GICv2", 25, "Level", "vgic", z, z)
	b.irq(11, "GICv2", 30, "Level", "arch_timer",
		[]float64{up * 240, up * 31, up * 28, up * 30}, timerRates)
	b.irq(12, "GICv2", 27, "Level", "kvm guest vtimer", z, z)
	b.irq(18, "GICv2", 65, "Level", "fe00b880.mailbox", []float64{up * 0.09, 0, 0, 0}, []float64{0.1, 0, 0, 0})
	b.irq(21, "GICv2", 153, "Level", "uart-pl011", []float64{214, 0, 0, 0}, z)
	b.irq(24, "GICv2", 114, "Level", "DMA IRQ", []float64{up * 0.04, 0, 0, 0}, z)
	b.irq(31, "GICv2", 66, "Level", "VCHIQ doorbell", []float64{up * 0.006, 0, 0, 0}, z)
	b.irq(32, "GICv2", 158, "Level", "mmc1, mmc0", []float64{up * 0.8, 0, 0, 0}, []float64{0.6, 0, 0, 0})
	for i := 0; i < 4; i++ {
		b.irq(33+i, "GICv2", 48+i, "Level", "arm-pmu", z, z)
	}
}

// piIPIs adds the seven arm64 IPI rows of 5.10.
func (b *box) piIPIs(counts, rates [7][]float64) {
	desc := []string{"Rescheduling interrupts", "Function call interrupts", "CPU stop interrupts",
		"CPU stop (for crash dump) interrupts", "Timer broadcast interrupts", "IRQ work interrupts",
		"CPU wake-up interrupts"}
	for i, d := range desc {
		c, r := counts[i], rates[i]
		if c == nil {
			c = fill(4, 0)
		}
		if r == nil {
			r = fill(4, 0)
		}
		b.named = append(b.named, &namedLine{desc: d, counts: append([]float64(nil), c...), rates: append([]float64(nil), r...)})
	}
}

// piGenet writes eth0, the BCM2711's GENET v5 (bcmgenet): a platform
// device, five tx queues (rings 0-3 and the default ring 16) and one rx
// queue (5.10's GENET_V5 hw_params have rx_queues = 0: only ring 16).
func (b *box) piGenet(mac string, ifindex int) {
	t := b.tree
	t.netdev(piGenetDir, "eth0", netAttrs{ifindex, 1, mac, 1500, 1000, "up", "1", "1000", "full"}, 1, 5, "0", "0", false)
	t.driver(piGenetDir, "platform", "bcmgenet")
	i := drvinfo{driver: "bcmgenet", version: b.kernel, bus: "fd580000.ethernet", stats: true}
	b.ethtoolFile("eth0", "i.txt", i.text())
	softOn, softCh := softFeatures(b.kv)
	hw := []string{"tx-scatter-gather", "highdma", "tx-checksum-ip-generic", "rx-checksum"}
	b.ethtoolFile("eth0", "k.txt", featuresText("eth0", b.kv, union(hw, softOn), union(hw, softCh)))
	// bcmgenet_get_coalesce: rx-frames from the default ring's MBUF_DONE
	// threshold (1 at probe), rx-usecs from its DMA timeout (0), tx-frames
	// from the tx ring's threshold (10 at bcmgenet_init_tx_ring).
	b.ethtoolFile("eth0", "c.txt", coalesceText("eth0", false, false, map[string]uint32{"rx-frames": 1, "tx-frames": 10}))
	b.ethtoolFile("eth0", "g.txt", fmt.Sprintf(ringUnsupported, "eth0"))
	b.ethtoolFile("eth0", "l.txt", fmt.Sprintf(chanUnsupported, "eth0"))
	// ETHTOOL_GRXRINGS works (bcmgenet_get_rxnfc), ETHTOOL_GRSSH and
	// ETHTOOL_GRXFHINDIR do not: ethtool falls back and then gives up.
	b.ethtoolFile("eth0", "x.txt", indirUnsupported)
	for _, f := range []string{"tcp4", "udp4", "tcp6", "udp6"} {
		b.ethtoolFile("eth0", "n-"+f+".txt", flowUnsupported)
	}
	b.ethtoolFile("eth0", "link.txt", linkText{
		ports: []string{"TP", "MII"}, supported: gigModesHalf, advertised: gigModesHalf, partner: gigModesHalf,
		pause: "Symmetric Receive-only", partnerPause: "Symmetric Receive-only",
		speed: "1000Mb/s", duplex: "Full", port: "MII", phyad: 1, transceiver: "external",
		wolSupported: "d", wol: "d", msglvl: 7, msgNames: "drv probe link", link: true,
	}.text("eth0"))
}

// piWlan writes wlan0 (brcmfmac on SDIO), down.
func (b *box) piWlan(mac string, ifindex int) {
	t := b.tree
	t.netdev(piWlanDir, "wlan0", netAttrs{ifindex: ifindex, typ: 1, address: mac, mtu: 1500, txQueueLen: 1000, operstate: "down"}, 1, 1, "0", "", false)
	t.driver(piWlanDir, "sdio", "brcmfmac")
	b.ethtoolFile("wlan0", "i.txt", drvinfo{driver: "brcmfmac", version: "7.45.229", firmware: "01-2dbd9d2e", bus: "mmc1:0001:1"}.text())
	b.ethtoolFile("wlan0", "link.txt", "Settings for wlan0:\n\tLink detected: no\n")
}

// piRootPort writes the BCM2711 root port 0000:00:00.0 (14e4:2711, rev 20,
// lspci in seed 000) with its link at curSpeed (1 = 2.5, 2 = 5 GT/s) x1.
func (b *box) piRootPort(curSpeed int, pmeIRQ int) {
	speeds := map[int]string{1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe"}
	b.tree.pciDev(piRootDir, "0000:00:00.0", pciAttrs{vendor: "0x14e4", device: "0x2711", class: "0x060400",
		subVendor: "0x0000", subDevice: "0x0000",
		curSpeed: speeds[curSpeed], curWidth: "1", maxSpeed: speeds[2], maxWidth: "1",
		irq: pmeIRQ, driver: "pcieport"})
	b.tree.bin("pci/0000:00:00.0/config", pciConfig{
		vendor: 0x14e4, device: 0x2711, rev: 0x20, class: 0x060400, bridge: true,
		priBus: 0, secBus: 1, subBus: 1, irqPin: 1,
		pmOff: 0x48, expOff: 0xac,
		portType: 4, mpsSupported: 512, mps: 128, mrrs: 512,
		maxSpeed: 2, maxWidth: 1, curSpeed: curSpeed, curWidth: 1, dllActiveCapable: true,
	}.bytes())
}

// piThrottle writes the firmware's get_throttled (drivers/firmware/raspberrypi.c
// prints it with "%x").
func (b *box) piThrottle(v uint32) {
	b.tree.file("sys/devices/platform/soc/soc:firmware/get_throttled", fmt.Sprintf("%x\n", v))
}

// msiUnmovable is the affinity of an interrupt behind the BCM2711's
// internal MSI controller: the mask is the default, but
// brcm_msi_set_affinity returns -EINVAL, so irq_do_set_affinity never
// fills the effective mask (the file reads as an empty line) and writes to
// smp_affinity fail with "Invalid argument". The demultiplexing GIC SPI
// runs on CPU0, so every MSI is counted there.
var msiUnmovable = [3]string{"f", "0-3", ""}

// gicDefault is a GICv2 SPI with the default mask: GICv2 delivers an SPI
// to one CPU, the first of the mask (gic_set_affinity), CPU0.
var gicDefault = [3]string{"f", "0-3", "0"}
