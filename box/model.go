// Package box owns the model of the machine linerate works on: its NICs,
// queues, IRQs, CPUs, PCIe path and sysctls (Box), and the counters that
// change while traffic runs (Counters, and Rates between two of them).
//
// Collect builds a Box from a source (live or capture). Nothing in this
// package reads /proc or /sys itself: it asks the source. Anything that
// cannot be read is recorded in an Unsupported map with the reason, so the
// user sees "unsupported: <why>" rather than a gap.
//
// The JSON form of Box is linerate's documented, stable schema for
// `inspect --json` (docs/inspect-json.md).
package box

import (
	"fmt"
	"strings"
	"time"

	"linerate/source/ethtool"
	"linerate/source/pci"
)

// SchemaVersion is bumped when a field of the JSON form changes meaning or
// disappears. Adding fields does not bump it.
const SchemaVersion = 1

// Box is everything linerate knows about one machine at one moment.
type Box struct {
	Schema int   `json:"schema"`
	Meta   Meta  `json:"meta"`
	NICs   []NIC `json:"nics"`
	// IRQs holds the interrupts of the NICs above, by number.
	IRQs []IRQ `json:"irqs"`
	CPUs []CPU `json:"cpus"`
	// PCIe holds every device on the PCIe paths of the NICs, from each NIC
	// up to its root port, by address.
	PCIe []PCIeDevice `json:"pcie"`
	// Unbound are the Ethernet PCI functions no driver is bound to.
	Unbound []UnboundNIC `json:"unbound_nics,omitempty"`
	// KernelLog holds the kernel log's lines about BARs without address
	// space and PCIe links that did not train.
	KernelLog []pci.KernelEvent `json:"kernel_log,omitempty"`
	Thermal   []ThermalZone     `json:"thermal"`
	Throttle  *Throttle         `json:"throttle,omitempty"`
	// IRQBalance says whether the irqbalance daemon runs; nil when unknown.
	IRQBalance *bool     `json:"irqbalance_running"`
	Sysctls    []Sysctl  `json:"sysctls"`
	Counters   *Counters `json:"counters,omitempty"`
	// Unsupported maps a box-level item ("thermal", "throttle", ...) to the
	// reason it could not be read.
	Unsupported map[string]string `json:"unsupported,omitempty"`
	// Warnings lists what a capture holds that linerate could not read:
	// the values and items it left unknown because of it.
	Warnings []Warning `json:"warnings,omitempty"`
}

// Warning is something in a capture that linerate could not read: a line
// of a file that a parser did not understand (the one value it held is
// unknown), a file it could not use at all or refused to read (that item
// is unknown, and its Unsupported entry says so too).
type Warning struct {
	// Item is what is unknown: "eth0 rings", "sysctl net.core.rmem_max",
	// "interrupts".
	Item string `json:"item"`
	// Value narrows Item to one value when only that one is unknown
	// ("Pre-set maximums RX", "rx-usecs").
	Value string `json:"value,omitempty"`
	// File is the file below the capture's top; Line its 1-based line, 0
	// when the file as a whole is at fault.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Why  string `json:"why"`
}

// String is "FILE:LINE: ITEM, VALUE: WHY".
func (w Warning) String() string {
	var b strings.Builder
	if w.File != "" {
		b.WriteString(w.File)
		if w.Line > 0 {
			fmt.Fprintf(&b, ":%d", w.Line)
		}
		b.WriteString(": ")
	}
	b.WriteString(w.Item)
	if w.Value != "" {
		b.WriteString(", " + w.Value)
	}
	b.WriteString(": " + w.Why)
	return b.String()
}

// Meta says where and when the facts were gathered.
type Meta struct {
	Time     time.Time `json:"time"`
	Host     string    `json:"host"`
	Kernel   string    `json:"kernel"`
	Arch     string    `json:"arch,omitempty"`
	Linerate string    `json:"linerate_version"`
	// MachineID is the machine's /etc/machine-id, when known.
	MachineID string `json:"machine_id,omitempty"`
	// Source is "live", "live netns NAME" or "capture PATH".
	Source string `json:"source"`
}

// NICKind is what sort of interface a NIC is: physical, loopback, or
// one of the virtual kinds, named by its driver (veth, bridge, tun,
// bond, vlan, wireguard, ...). Its JSON form is its string.
type NICKind string

// The kinds linerate tells apart by more than their name.
const (
	// KindPhysical: a device with a bus address or a driver of its own.
	KindPhysical NICKind = "physical"
	// KindLoopback: lo (ARPHRD_LOOPBACK).
	KindLoopback NICKind = "loopback"
	// KindVirtual: a virtual device whose driver names no kind.
	KindVirtual NICKind = "virtual"
)

// NIC is one network interface.
type NIC struct {
	Name       string  `json:"name"`
	Index      int     `json:"ifindex"`
	MAC        string  `json:"mac,omitempty"`
	Kind       NICKind `json:"kind,omitempty"`
	OperState  string  `json:"operstate"`
	Carrier    bool    `json:"carrier"`
	MTU        int     `json:"mtu"`
	MinMTU     int     `json:"min_mtu,omitempty"`
	MaxMTU     int     `json:"max_mtu,omitempty"` // 0 when unknown
	TxQueueLen int     `json:"tx_queue_len,omitempty"`

	Driver   *ethtool.DriverInfo `json:"driver,omitempty"`
	Link     *ethtool.LinkInfo   `json:"link,omitempty"`
	Features ethtool.Features    `json:"features,omitempty"`
	Channels *ethtool.Channels   `json:"channels,omitempty"`
	Rings    *ethtool.Rings      `json:"rings,omitempty"`
	Coalesce *ethtool.Coalesce   `json:"coalesce,omitempty"`
	RSS      *ethtool.RSS        `json:"rss,omitempty"`
	// FlowHash maps "tcp4", "udp4", "tcp6", "udp6" to the hashed fields in
	// ethtool -N letters ("sdfn").
	FlowHash map[string]string `json:"flow_hash,omitempty"`
	Stats    ethtool.Stats     `json:"stats,omitempty"`

	RXQueues []RXQueue `json:"rx_queues"`
	TXQueues []TXQueue `json:"tx_queues"`
	// IRQs are the numbers of this NIC's interrupts (details in Box.IRQs).
	IRQs []int `json:"irqs"`
	// IRQSource says how IRQs were found: "msi_irqs" or "proc/interrupts".
	IRQSource string `json:"irq_source,omitempty"`
	// IRQDevice is what the driver names the NIC's interrupts after when
	// that is not the NIC ("virtio2" for virtio-net's virtio2-input.0).
	IRQDevice string `json:"irq_device,omitempty"`
	// PCIAddr is the NIC's PCI address ("0000:01:00.0"), empty if not PCI.
	PCIAddr string `json:"pci_addr,omitempty"`
	// PCIePath lists PCI addresses from the NIC up to its root port.
	PCIePath []string `json:"pcie_path,omitempty"`

	// Unsupported maps an item ("rings", "coalesce", "rss", "flow_hash.udp4",
	// "stats", "max_mtu", ...) to why it could not be read.
	Unsupported map[string]string `json:"unsupported,omitempty"`
}

// RXQueue is /sys/class/net/IFACE/queues/rx-N plus its driver counters.
type RXQueue struct {
	Index int `json:"index"`
	// RPSCPUs is the hex mask in rps_cpus; RPSCPUList the CPUs it names.
	RPSCPUs    string `json:"rps_cpus"`
	RPSCPUList []int  `json:"rps_cpu_list"`
	RPSFlowCnt int    `json:"rps_flow_cnt"`
	// Packets and Bytes come from the driver's statistics (ethtool -S), nil
	// when the driver has no per-queue counter.
	Packets *uint64 `json:"packets,omitempty"`
	Bytes   *uint64 `json:"bytes,omitempty"`
}

// TXQueue is /sys/class/net/IFACE/queues/tx-N plus its driver counters.
type TXQueue struct {
	Index      int     `json:"index"`
	XPSCPUs    string  `json:"xps_cpus"`
	XPSCPUList []int   `json:"xps_cpu_list"`
	Packets    *uint64 `json:"packets,omitempty"`
	Bytes      *uint64 `json:"bytes,omitempty"`
}

// IRQ is one interrupt line (or MSI vector).
type IRQ struct {
	Number int    `json:"number"`
	Chip   string `json:"chip,omitempty"`  // "PCI-MSI", "GICv2", ...
	HWIRQ  string `json:"hwirq,omitempty"` // "2097152-edge"
	Name   string `json:"name"`            // action names, "enp4s0-rx-0"
	NIC    string `json:"nic,omitempty"`
	// Ref names the interrupt by what it serves, "eth0/TxRx-1" or
	// "eth0/#0" (procfs.NameIRQs): tune resolves it to whatever number the
	// interrupt has when a change is applied.
	Ref string `json:"ref,omitempty"`
	// SMPAffinity is the hex mask in /proc/irq/N/smp_affinity.
	SMPAffinity  string `json:"smp_affinity"`
	AffinityList []int  `json:"affinity_list"`
	// Effective is /proc/irq/N/effective_affinity_list; nil when absent.
	Effective []int `json:"effective_affinity_list"`
	// PerCPU is the interrupt count on each CPU from /proc/interrupts.
	PerCPU      []uint64          `json:"per_cpu"`
	Unsupported map[string]string `json:"unsupported,omitempty"`
}

// CPU is one logical CPU.
type CPU struct {
	ID       int    `json:"id"`
	Online   bool   `json:"online"`
	CurKHz   int64  `json:"cur_khz,omitempty"`
	MinKHz   int64  `json:"min_khz,omitempty"`
	MaxKHz   int64  `json:"max_khz,omitempty"`
	Governor string `json:"governor,omitempty"`
	// Unsupported: "cpufreq" when the CPU has no cpufreq directory.
	Unsupported map[string]string `json:"unsupported,omitempty"`
}

// PCIeDevice is one function on a NIC's PCIe path.
type PCIeDevice struct {
	Addr     string `json:"addr"`
	Vendor   string `json:"vendor,omitempty"` // "0x8086"
	Device   string `json:"device,omitempty"`
	Class    string `json:"class,omitempty"` // "0x020000"
	Driver   string `json:"driver,omitempty"`
	Upstream string `json:"upstream,omitempty"` // parent bridge address
	RootPort bool   `json:"root_port"`
	// Link speed in GT/s (2.5, 5, 8, 16, 32, 64) and width in lanes.
	CurSpeedGTs float64 `json:"cur_speed_gts,omitempty"`
	CurWidth    int     `json:"cur_width,omitempty"`
	MaxSpeedGTs float64 `json:"max_speed_gts,omitempty"`
	MaxWidth    int     `json:"max_width,omitempty"`
	// Max Payload Size: supported (DevCap) and set (DevCtl), bytes.
	MPSSupported int `json:"mps_supported,omitempty"`
	MPS          int `json:"mps,omitempty"`
	// Max Read Request Size (DevCtl), bytes.
	MRRS        int               `json:"mrrs,omitempty"`
	Unsupported map[string]string `json:"unsupported,omitempty"`
}

// ThermalZone is /sys/class/thermal/thermal_zoneN.
type ThermalZone struct {
	Name    string  `json:"name"`
	Type    string  `json:"type"`
	Celsius float64 `json:"celsius"`
}

// Throttle decodes the Raspberry Pi firmware's get_throttled bits.
type Throttle struct {
	Raw                   uint32 `json:"raw"`
	UnderVoltage          bool   `json:"under_voltage"`
	FreqCapped            bool   `json:"freq_capped"`
	Throttled             bool   `json:"throttled"`
	SoftTempLimit         bool   `json:"soft_temp_limit"`
	UnderVoltageOccurred  bool   `json:"under_voltage_occurred"`
	FreqCappedOccurred    bool   `json:"freq_capped_occurred"`
	ThrottledOccurred     bool   `json:"throttled_occurred"`
	SoftTempLimitOccurred bool   `json:"soft_temp_limit_occurred"`
	Source                string `json:"source"`
}

// Sysctl is one kernel setting; Err is set when it could not be read.
type Sysctl struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
	Err   string `json:"error,omitempty"`
	// HostWide is true when the box is a network namespace and this
	// sysctl is the host's (the namespace has no copy of its own).
	HostWide bool `json:"host_wide,omitempty"`
}

// Sysctls are the settings inspect reads, in print order.
var Sysctls = []string{
	"net.core.netdev_max_backlog",
	"net.core.netdev_budget",
	"net.core.netdev_budget_usecs",
	"net.core.dev_weight",
	"net.core.rmem_max",
	"net.core.wmem_max",
	"net.core.rmem_default",
	"net.core.wmem_default",
	"net.core.busy_poll",
	"net.core.busy_read",
	"net.core.rps_sock_flow_entries",
	"net.ipv4.ip_forward",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_wmem",
	"net.ipv4.udp_mem",
	"net.netfilter.nf_conntrack_max",
	"net.netfilter.nf_conntrack_count",
}

// NIC returns the named interface.
func (b *Box) NIC(name string) (*NIC, bool) {
	for i := range b.NICs {
		if b.NICs[i].Name == name {
			return &b.NICs[i], true
		}
	}
	return nil, false
}

// IRQ returns the interrupt with that number.
func (b *Box) IRQ(n int) (*IRQ, bool) {
	for i := range b.IRQs {
		if b.IRQs[i].Number == n {
			return &b.IRQs[i], true
		}
	}
	return nil, false
}

// PCIeDev returns the PCIe device at addr.
func (b *Box) PCIeDev(addr string) (*PCIeDevice, bool) {
	for i := range b.PCIe {
		if b.PCIe[i].Addr == addr {
			return &b.PCIe[i], true
		}
	}
	return nil, false
}

// Sysctl returns the value of a sysctl and whether it was read.
func (b *Box) Sysctl(name string) (string, bool) {
	for _, s := range b.Sysctls {
		if s.Name == name {
			return s.Value, s.Err == ""
		}
	}
	return "", false
}
