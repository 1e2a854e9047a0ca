// Package procfs reads the files under /proc that linerate uses: CPU times,
// interrupts, softirqs, softnet statistics, interface and UDP counters, IRQ
// affinities and sysctls. Every reader is a method on an FS made from a mount
// point, so tests and captures point it at a copy of the tree. Parsers take
// an io.Reader and are pure; errors name the file they came from.
package procfs

import "errors"

var errTodo = errors.New("todo")

// FS is a /proc tree at some root ("/proc", or a capture's "proc").
type FS struct {
	root   string
	netDir string
}

// NewFS returns an FS rooted at the proc mount point root.
func NewFS(root string) FS { return FS{root: root} }

// WithNetDir returns a copy that reads the per-namespace files normally
// under root/net from dir instead (for a live netns: "/proc/thread-self/net").
func (fs FS) WithNetDir(dir string) FS { fs.netDir = dir; return fs }

// Root is the mount point the FS was made from.
func (fs FS) Root() string { return fs.root }

// Path joins elements below the root.
func (fs FS) Path(elem ...string) string { panic("todo: H1") }

// NetPath joins elements below the net directory (root/net unless WithNetDir).
func (fs FS) NetPath(elem ...string) string { panic("todo: H1") }

// Interrupts is /proc/interrupts.
type Interrupts struct {
	// CPUs is the header: CPU ids of the count columns ("CPU0 CPU1" → 0, 1).
	CPUs []int
	Rows []InterruptRow
}

// InterruptRow is one line of /proc/interrupts.
type InterruptRow struct {
	// Label is what precedes the colon: "41", "NMI", "LOC".
	Label string
	// Number is Label as a number, -1 for named rows.
	Number int
	// Counts has one entry per CPU column.
	Counts []uint64
	// Chip, HWIRQ and Actions are the text after the counts of numbered rows:
	// "PCI-MSI", "2097153-edge", "enp4s0-rx-0". Named rows put their
	// description in Actions.
	Chip, HWIRQ, Actions string
}

// IRQAffinity is /proc/irq/N/{smp_affinity,smp_affinity_list,effective_affinity_list}.
type IRQAffinity struct {
	Mask string // smp_affinity as written
	List []int  // smp_affinity_list (or decoded from Mask)
	// Effective is nil when effective_affinity_list is absent.
	Effective []int
}

// Stat returns the per-CPU lines of /proc/stat (the aggregate "cpu" line is dropped).
func (fs FS) Stat() ([]CPUTimes, error) { return nil, errTodo }

// Interrupts reads /proc/interrupts.
func (fs FS) Interrupts() (Interrupts, error) { return Interrupts{}, errTodo }

// SoftIRQs reads /proc/softirqs: row name → count per CPU.
func (fs FS) SoftIRQs() (map[string][]uint64, error) { return nil, errTodo }

// Softnet reads net/softnet_stat.
func (fs FS) Softnet() ([]Softnet, error) { return nil, errTodo }

// NetDev reads net/dev.
func (fs FS) NetDev() (map[string]NetDev, error) { return nil, errTodo }

// SNMP reads net/snmp: section ("Ip", "Tcp", "Udp", ...) → field → value.
func (fs FS) SNMP() (map[string]map[string]uint64, error) { return nil, errTodo }

// Sysctl reads sys/NAME with dots turned into slashes, white space folded to
// single spaces ("4096\t131072\t6291456" → "4096 131072 6291456").
func (fs FS) Sysctl(name string) (string, error) { return "", errTodo }

// IRQAffinity reads irq/N.
func (fs FS) IRQAffinity(n int) (IRQAffinity, error) { return IRQAffinity{}, errTodo }

// Running reports whether a process whose comm is name exists (scans N/comm).
func (fs FS) Running(name string) (bool, error) { return false, errTodo }

// Hostname and Kernel read sys/kernel/hostname and sys/kernel/osrelease.
func (fs FS) Hostname() (string, error) { return "", errTodo }
func (fs FS) Kernel() (string, error)   { return "", errTodo }

// CPUTimes is one cpuN line of /proc/stat, in ticks.
type CPUTimes struct {
	ID      int    `json:"id"`
	User    uint64 `json:"user"`
	Nice    uint64 `json:"nice"`
	System  uint64 `json:"system"`
	Idle    uint64 `json:"idle"`
	IOWait  uint64 `json:"iowait"`
	IRQ     uint64 `json:"irq"`
	SoftIRQ uint64 `json:"softirq"`
	Steal   uint64 `json:"steal"`
}

// Total is the sum of all fields.
func (c CPUTimes) Total() uint64 {
	return c.User + c.Nice + c.System + c.Idle + c.IOWait + c.IRQ + c.SoftIRQ + c.Steal
}

// Busy is the sum of all fields except idle and iowait.
func (c CPUTimes) Busy() uint64 { return c.Total() - c.Idle - c.IOWait }

// Softnet is one row of /proc/net/softnet_stat.
type Softnet struct {
	CPU         int    `json:"cpu"`
	Processed   uint64 `json:"processed"`
	Dropped     uint64 `json:"dropped"`
	TimeSqueeze uint64 `json:"time_squeeze"`
	ReceivedRPS uint64 `json:"received_rps"`
	FlowLimit   uint64 `json:"flow_limit"`
	BacklogLen  uint64 `json:"backlog_len"`
}

// NetDev is one line of /proc/net/dev.
type NetDev struct {
	RxBytes      uint64 `json:"rx_bytes"`
	RxPackets    uint64 `json:"rx_packets"`
	RxErrs       uint64 `json:"rx_errs"`
	RxDrop       uint64 `json:"rx_drop"`
	RxFifo       uint64 `json:"rx_fifo"`
	RxFrame      uint64 `json:"rx_frame"`
	RxCompressed uint64 `json:"rx_compressed"`
	RxMulticast  uint64 `json:"rx_multicast"`
	TxBytes      uint64 `json:"tx_bytes"`
	TxPackets    uint64 `json:"tx_packets"`
	TxErrs       uint64 `json:"tx_errs"`
	TxDrop       uint64 `json:"tx_drop"`
	TxFifo       uint64 `json:"tx_fifo"`
	TxColls      uint64 `json:"tx_colls"`
	TxCarrier    uint64 `json:"tx_carrier"`
	TxCompressed uint64 `json:"tx_compressed"`
}
