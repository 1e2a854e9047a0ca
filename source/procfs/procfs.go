// Package procfs reads the files under /proc that linerate uses: CPU times,
// interrupts, softirqs, softnet statistics, interface and UDP counters, IRQ
// affinities and sysctls. Every reader is a method on an FS made from a mount
// point, so tests and captures point it at a copy of the tree; files are
// read through a tree.Tree (beneath the root, regular files only, capped).
// Parsers take an io.Reader and are pure; their errors are
// *tree.ParseErrors naming the file and line.
//
// The parsers are written here rather than taken from prometheus/procfs
// because linerate needs what that library does not give: the chip, hwirq
// and trigger columns of /proc/interrupts on ARM and x86, the CPU-id column
// of newer softnet_stat, and readers that work on a capture's copy of the
// tree with per-namespace net files.
package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"strconv"
	"strings"

	"linerate/source/cpuset"
	"linerate/source/tree"
)

// FS is a /proc tree at some root ("/proc", or a capture's "proc"). Every
// file is read through a tree.Tree: beneath the root, regular files only,
// under size limits (package tree).
type FS struct {
	t tree.Tree
	// net is where the per-namespace files are, when not t's net/.
	net *tree.Tree
}

// NewFS returns an FS rooted at the proc mount point root, read under
// tree.LiveLimits.
func NewFS(root string) FS { return FS{t: tree.New(root, tree.LiveLimits)} }

// NewTreeFS returns an FS over t (a capture's proc/, under its limits).
func NewTreeFS(t tree.Tree) FS { return FS{t: t} }

// WithNetDir returns a copy that reads the per-namespace files normally
// under root/net from dir instead (for a live netns: "/proc/thread-self/net").
func (fs FS) WithNetDir(dir string) FS {
	n := tree.New(dir, fs.t.Limits())
	fs.net = &n
	return fs
}

// Root is the mount point the FS was made from, as a path of this machine.
func (fs FS) Root() string { return fs.t.Path("") }

// Tree is the tree the FS reads its files through, for a reader of files
// it has no method for (the capture writer copies them).
func (fs FS) Tree() tree.Tree { return fs.t }

// NetTree is the tree of the per-namespace files (root/net unless
// WithNetDir).
func (fs FS) NetTree() tree.Tree {
	if fs.net != nil {
		return *fs.net
	}
	return fs.t.Sub("net")
}

// Path joins elements below the root, as a path of this machine.
func (fs FS) Path(elem ...string) string { return fs.t.Path(path.Join(elem...)) }

// NetPath joins elements below the net directory (root/net unless WithNetDir).
func (fs FS) NetPath(elem ...string) string {
	t, rel := fs.netFile(elem...)
	return t.Path(rel)
}

// netFile is the tree and path of a per-namespace file.
func (fs FS) netFile(elem ...string) (tree.Tree, string) {
	return fs.NetTree(), path.Join(elem...)
}

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
	// Counts has one entry per CPU column; the system-wide named rows ERR
	// and MIS have a single entry.
	Counts []uint64
	// Chip, HWIRQ and Actions are the text after the counts of numbered rows:
	// "PCI-MSI", "2097153-edge", "enp4s0-rx-0". Named rows put their
	// description in Actions.
	Chip, HWIRQ, Actions string
	// Trigger is "Level" or "Edge" on kernels that print it in a column of
	// its own (ARM: "GICv2 189 Level  eth0" has HWIRQ "189"); "" on x86,
	// where the flow handler is part of HWIRQ.
	Trigger string
}

// Row returns the row labelled label ("41", "LOC"), false when absent.
func (in Interrupts) Row(label string) (InterruptRow, bool) {
	for _, r := range in.Rows {
		if r.Label == label {
			return r, true
		}
	}
	return InterruptRow{}, false
}

// IRQAffinity is /proc/irq/N/{smp_affinity,smp_affinity_list,effective_affinity_list}.
type IRQAffinity struct {
	Mask string // smp_affinity as written
	List []int  // smp_affinity_list (or decoded from Mask)
	// Effective is nil when effective_affinity_list is absent.
	Effective []int
}

// parseFile reads rel from t and hands it to parse; parse errors are
// prefixed with the file's path (read errors already name it). Lines the
// parser left out come back as a *tree.SkippedError with the value of the
// rest of the file.
func parseFile[T any](t tree.Tree, rel string, parse func(io.Reader) (T, error)) (T, error) {
	b, err := t.ReadFile(rel)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := parse(bytes.NewReader(b))
	if err != nil {
		var sk *tree.SkippedError
		if errors.As(err, &sk) {
			for _, l := range sk.Lines {
				l.Path = t.Path(rel)
			}
			return v, sk
		}
		var pe *tree.ParseError
		if errors.As(err, &pe) && pe.Path == "" {
			return v, &tree.ParseError{Path: t.Path(rel), Line: pe.Line, Err: pe.Err}
		}
		return v, &tree.ParseError{Path: t.Path(rel), Err: err}
	}
	return v, nil
}

// BootID is sys/kernel/random/boot_id: random for each boot of the kernel,
// the same in every namespace of one machine.
func (fs FS) BootID() (string, error) {
	b, err := fs.t.ReadFile("sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// SelfPeakRSS is the peak resident memory of the calling process since
// its exec (self/status's VmHWM), in bytes.
func (fs FS) SelfPeakRSS() (int64, error) { return parseFile(fs.t, "self/status", ParsePeakRSS) }

// SelfCPU is the CPU time the calling process has used, every thread of
// it, from self/stat (ParseProcessStat).
func (fs FS) SelfCPU() (ProcessTimes, error) { return parseFile(fs.t, "self/stat", ParseProcessStat) }

// Stat returns the per-CPU lines of /proc/stat (the aggregate "cpu" line is dropped).
func (fs FS) Stat() ([]CPUTimes, error) { return parseFile(fs.t, "stat", ParseStat) }

// Interrupts reads /proc/interrupts.
func (fs FS) Interrupts() (Interrupts, error) {
	return parseFile(fs.t, "interrupts", ParseInterrupts)
}

// SoftIRQs reads /proc/softirqs: row name → count per CPU.
func (fs FS) SoftIRQs() (map[string][]uint64, error) {
	return parseFile(fs.t, "softirqs", ParseSoftIRQs)
}

// Softnet reads net/softnet_stat.
func (fs FS) Softnet() ([]Softnet, error) {
	t, rel := fs.netFile("softnet_stat")
	return parseFile(t, rel, ParseSoftnet)
}

// NetDev reads net/dev.
func (fs FS) NetDev() (map[string]NetDev, error) {
	t, rel := fs.netFile("dev")
	return parseFile(t, rel, ParseNetDev)
}

// SNMP reads net/snmp: section ("Ip", "Tcp", "Udp", ...) → field → value.
func (fs FS) SNMP() (map[string]map[string]uint64, error) {
	t, rel := fs.netFile("snmp")
	return parseFile(t, rel, ParseSNMP)
}

// SysctlPath is the file behind a sysctl name: dots become slashes
// ("net.core.rmem_max" → sys/net/core/rmem_max). A name holding a slash is
// taken as a path already, as sysctl(8) does, so that an interface name
// with a dot can be written ("net/ipv4/conf/eth0.100/rp_filter").
func (fs FS) SysctlPath(name string) (string, error) {
	rel, err := sysctlRel(name)
	if err != nil {
		return "", err
	}
	return fs.t.Path(rel), nil
}

// sysctlRel is SysctlPath below the root.
func sysctlRel(name string) (string, error) {
	sep := "."
	if strings.Contains(name, "/") {
		sep = "/"
	}
	parts := strings.Split(strings.Trim(name, sep), sep)
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || strings.ContainsAny(p, "/\x00 ") {
			return "", fmt.Errorf("sysctl %q: not a sysctl name", name)
		}
	}
	return path.Join(append([]string{"sys"}, parts...)...), nil
}

// Sysctl reads sys/NAME with dots turned into slashes, white space folded to
// single spaces ("4096\t131072\t6291456" → "4096 131072 6291456"). A sysctl
// that does not exist gives an error wrapping fs.ErrNotExist.
func (fs FS) Sysctl(name string) (string, error) {
	rel, err := sysctlRel(name)
	if err != nil {
		return "", err
	}
	b, err := fs.t.ReadFile(rel)
	if err != nil {
		return "", err
	}
	return strings.Join(strings.Fields(string(b)), " "), nil
}

// readOptional reads a file that may be absent: ok is false then.
func (fs FS) readOptional(rel string) (s string, ok bool, err error) {
	b, err := fs.t.ReadFile(rel)
	if errors.Is(err, iofs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(string(b)), true, nil
}

// IRQAffinity reads irq/N. Either smp_affinity or smp_affinity_list is
// enough (each is derived from the other when missing); an IRQ with neither
// gives an error wrapping fs.ErrNotExist.
func (fs FS) IRQAffinity(n int) (IRQAffinity, error) {
	dir := path.Join("irq", strconv.Itoa(n))
	var a IRQAffinity
	maskRel, listRel := path.Join(dir, "smp_affinity"), path.Join(dir, "smp_affinity_list")
	mask, haveMask, err := fs.readOptional(maskRel)
	if err != nil {
		return a, err
	}
	list, haveList, err := fs.readOptional(listRel)
	if err != nil {
		return a, err
	}
	switch {
	case haveList:
		if a.List, err = cpuset.ParseList(list); err != nil {
			return a, &tree.ParseError{Path: fs.t.Path(listRel), Err: err}
		}
	case haveMask:
		if a.List, err = cpuset.ParseMask(mask); err != nil {
			return a, &tree.ParseError{Path: fs.t.Path(maskRel), Err: err}
		}
	default:
		return a, fmt.Errorf("%s: %w", fs.t.Path(maskRel), iofs.ErrNotExist)
	}
	a.Mask = mask
	if !haveMask {
		a.Mask = cpuset.FormatMask(a.List)
	}
	effRel := path.Join(dir, "effective_affinity_list")
	eff, haveEff, err := fs.readOptional(effRel)
	if err != nil {
		return a, err
	}
	if haveEff {
		if a.Effective, err = cpuset.ParseList(eff); err != nil {
			return a, &tree.ParseError{Path: fs.t.Path(effRel), Err: err}
		}
	}
	return a, nil
}

// commLen is the kernel's TASK_COMM_LEN less its terminating NUL: comm
// holds at most 15 bytes of a process name (include/linux/sched.h).
const commLen = 15

// Running reports whether a process whose comm is name exists (scans N/comm).
// Names longer than comm can hold are compared on their first 15 bytes.
func (fs FS) Running(name string) (bool, error) {
	if len(name) > commLen {
		name = name[:commLen]
	}
	entries, err := fs.t.ReadDir("")
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		// A process can exit between ReadDir and ReadFile; that is not an
		// error, nor is a comm file a capture holds but that is refused.
		b, err := fs.t.ReadFile(path.Join(e.Name(), "comm"))
		if err != nil {
			continue
		}
		if strings.TrimSuffix(string(b), "\n") == name {
			return true, nil
		}
	}
	return false, nil
}

// Hostname reads sys/kernel/hostname.
func (fs FS) Hostname() (string, error) { return fs.readTrim("sys", "kernel", "hostname") }

// Kernel reads sys/kernel/osrelease, the kernel's release ("6.8.0-45-generic").
func (fs FS) Kernel() (string, error) { return fs.readTrim("sys", "kernel", "osrelease") }

func (fs FS) readTrim(elem ...string) (string, error) {
	b, err := fs.t.ReadFile(path.Join(elem...))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

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

// ProcessTimes is the CPU time a process's threads have used, in USER_HZ
// ticks, the unit of /proc/stat: in user mode and in the kernel on its
// behalf (what softirqs do for it in another context is not counted).
type ProcessTimes struct {
	User   uint64 `json:"user"`
	System uint64 `json:"system"`
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
	// InputQLen and ProcessQLen split BacklogLen (15-column kernels, 6.x).
	InputQLen   uint64 `json:"input_qlen,omitempty"`
	ProcessQLen uint64 `json:"process_qlen,omitempty"`
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
