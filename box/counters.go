package box

import (
	"time"

	"linerate/source/netfilter"
	"linerate/source/procfs"
	"linerate/source/tree"
)

// Counters is one snapshot of every counter linerate watches during a run.
// Two snapshots give Rates (Delta). Counters are cumulative as the kernel
// keeps them; maps are keyed as the kernel names things.
type Counters struct {
	Time time.Time `json:"time"`
	// CPU holds /proc/stat per-CPU times in USER_HZ ticks, by CPU id.
	CPU []CPUTimes `json:"cpu"`
	// Process is the CPU time of the process that read the counters (its
	// self/stat), in the same ticks; nil when it could not be read.
	Process *ProcessTimes `json:"process,omitempty"`
	// Interrupts maps an IRQ label of /proc/interrupts ("41", "NMI", "LOC")
	// to its count per CPU.
	Interrupts map[string][]uint64 `json:"interrupts"`
	// SoftIRQs maps a /proc/softirqs row ("NET_RX", "NET_TX", ...) to its
	// count per CPU.
	SoftIRQs map[string][]uint64 `json:"softirqs"`
	// Softnet is /proc/net/softnet_stat, one entry per CPU.
	Softnet []Softnet `json:"softnet"`
	// NetDev is /proc/net/dev by interface.
	NetDev map[string]NetDev `json:"netdev"`
	// Ethtool holds each interface's `ethtool -S` counters.
	Ethtool map[string]map[string]uint64 `json:"ethtool,omitempty"`
	// RxQueues is the packets each receive queue of an interface took,
	// queue 0 first, by the driver's own per-queue counters: netdev
	// qstats where the driver reports them, else its per-queue ethtool -S
	// statistics (ethtool.RxQueuePackets); interfaces without either are
	// absent.
	RxQueues map[string][]uint64 `json:"rx_queues,omitempty"`
	// UDP is the Udp: line of /proc/net/snmp ("InDatagrams", "NoPorts",
	// "InErrors", "OutDatagrams", "RcvbufErrors", "SndbufErrors", ...).
	UDP map[string]uint64 `json:"udp"`
	// TCP is the Tcp: line of /proc/net/snmp ("RetransSegs", ...).
	TCP map[string]uint64 `json:"tcp,omitempty"`
	// Celsius maps a thermal zone name to its temperature (instantaneous).
	Celsius map[string]float64 `json:"celsius,omitempty"`
	// CurKHz is each CPU's current frequency (instantaneous), by CPU id.
	CurKHz map[int]int64 `json:"cur_khz,omitempty"`
	// Conntrack is net/stat/nf_conntrack with nf_conntrack_max; nil when
	// nf_conntrack is not loaded.
	Conntrack *netfilter.ConntrackStat `json:"conntrack,omitempty"`
	// Skipped holds the lines of the files read that a parser left out
	// (an IRQ, a CPU, an interface): what they said is missing above.
	Skipped []*tree.ParseError `json:"-"`
}

// CPUTimes, Softnet and NetDev are defined by the reader that parses them.
type (
	CPUTimes     = procfs.CPUTimes
	ProcessTimes = procfs.ProcessTimes
	Softnet      = procfs.Softnet
	NetDev       = procfs.NetDev
)

// Rates is what happened between two Counters, per second (percent for CPU).
type Rates struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
	// CPU is the share of each CPU's time, in percent (0-100).
	CPU []CPUUse `json:"cpu"`
	// Process is the CPU use of the process that read the counters (on a
	// test's end, linerate's own: bench, serve or the agent); nil when
	// either snapshot lacks it.
	Process *ProcessUse `json:"process,omitempty"`
	// Interrupts maps an IRQ label to interrupts per second on each CPU.
	Interrupts map[string][]float64 `json:"interrupts"`
	// SoftIRQs maps "NET_RX", "NET_TX", ... to softirqs per second per CPU.
	SoftIRQs map[string][]float64  `json:"softirqs"`
	Softnet  []SoftnetRate         `json:"softnet"`
	NetDev   map[string]NetDevRate `json:"netdev"`
	// Ethtool holds per-second rates of each interface's ethtool counters.
	Ethtool map[string]map[string]float64 `json:"ethtool,omitempty"`
	// RxQueues is the packets per second each receive queue of an
	// interface took (Counters.RxQueues), queue 0 first.
	RxQueues map[string][]float64 `json:"rx_queues,omitempty"`
	UDP      map[string]float64   `json:"udp"`
	TCP      map[string]float64   `json:"tcp,omitempty"`
	// Celsius and CurKHz are the values at End.
	Celsius map[string]float64 `json:"celsius,omitempty"`
	CurKHz  map[int]int64      `json:"cur_khz,omitempty"`
	// Conntrack is the connection tracker over the interval; nil when
	// nf_conntrack is not loaded.
	Conntrack *ConntrackRate `json:"conntrack,omitempty"`
}

// CPUUse is one CPU's time split, in percent.
type CPUUse struct {
	ID      int     `json:"id"`
	User    float64 `json:"usr"`
	System  float64 `json:"sys"`
	IRQ     float64 `json:"irq"`
	SoftIRQ float64 `json:"softirq"`
	Idle    float64 `json:"idle"`
	IOWait  float64 `json:"iowait"`
	Steal   float64 `json:"steal"`
	// Busy is 100 - idle - iowait.
	Busy float64 `json:"busy"`
}

// ProcessUse is one process's CPU time over an interval, in percent of
// one CPU: over 100 when several of its threads ran at once.
type ProcessUse struct {
	User   float64 `json:"usr"`
	System float64 `json:"sys"`
	// Busy is User + System.
	Busy float64 `json:"busy"`
}

// Seconds is the CPU time the process used in an interval of secs.
func (p ProcessUse) Seconds(secs float64) float64 { return p.Busy / 100 * secs }

// SoftnetRate is one CPU's softnet counters per second.
type SoftnetRate struct {
	CPU         int     `json:"cpu"`
	Processed   float64 `json:"processed"`
	Dropped     float64 `json:"dropped"`
	TimeSqueeze float64 `json:"time_squeeze"`
	ReceivedRPS float64 `json:"received_rps"`
}

// NetDevRate is one interface's traffic per second.
type NetDevRate struct {
	RxBps    float64 `json:"rx_bps"`
	TxBps    float64 `json:"tx_bps"`
	RxPps    float64 `json:"rx_pps"`
	TxPps    float64 `json:"tx_pps"`
	RxDrops  float64 `json:"rx_drops"`
	TxDrops  float64 `json:"tx_drops"`
	RxErrors float64 `json:"rx_errors"`
	TxErrors float64 `json:"tx_errors"`
	RxFifo   float64 `json:"rx_fifo"`
}
