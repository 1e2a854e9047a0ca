// Package sysfs reads the files under /sys that linerate uses: network
// interfaces and their queues, PCI devices and their place in the PCIe
// tree, CPU frequency, thermal zones and the Raspberry Pi firmware's
// throttle flags. Every reader is a method on an FS made from a mount point
// ("/sys", or a capture's "sys"); a missing optional file is absent (nil or
// an Unsupported entry), not an error.
package sysfs

import "errors"

var errTodo = errors.New("todo")

// FS is a /sys tree at some root.
type FS struct{ root string }

// NewFS returns an FS rooted at the sysfs mount point root.
func NewFS(root string) FS { return FS{root: root} }

// Root is the mount point the FS was made from.
func (fs FS) Root() string { return fs.root }

// NetDevice is class/net/NAME.
type NetDevice struct {
	Name       string
	Ifindex    int
	Type       int // ARPHRD_*, 1 for Ethernet, 772 for loopback
	Address    string
	MTU        int
	TxQueueLen int
	OperState  string
	// Carrier, SpeedMbps and Duplex are nil/"" when the file is absent or
	// unreadable (link down makes speed unreadable).
	Carrier   *bool
	SpeedMbps *int
	Duplex    string
	// Virtual is true when the device lives under devices/virtual.
	Virtual bool
	// Driver is the basename of device/driver, "" when there is none.
	Driver string
	// PCIAddr is the PCI address of the device when its device link resolves
	// into a PCI path ("0000:01:00.0").
	PCIAddr string
	// MSIIRQs lists device/msi_irqs entries; nil when absent.
	MSIIRQs  []int
	RXQueues []RXQueue
	TXQueues []TXQueue
}

// RXQueue is queues/rx-N.
type RXQueue struct {
	Index      int
	RPSCPUs    string // hex mask as the kernel prints it
	RPSFlowCnt int
}

// TXQueue is queues/tx-N.
type TXQueue struct {
	Index int
	// XPSCPUs is "" when xps_cpus is absent or unreadable.
	XPSCPUs string
}

// NetDevices lists class/net, sorted.
func (fs FS) NetDevices() ([]string, error) { return nil, errTodo }

// NetDevice reads class/net/NAME; an error wrapping fs.ErrNotExist when the
// interface does not exist.
func (fs FS) NetDevice(name string) (NetDevice, error) { return NetDevice{}, errTodo }

// PCIDevice is bus/pci/devices/ADDR.
type PCIDevice struct {
	Addr   string
	Vendor string // "0x8086"
	Device string
	Class  string // "0x020000"
	Driver string
	// Upstream is the parent bridge's address, "" for a device on a root bus.
	Upstream string
	// Link attributes as printed ("5.0 GT/s PCIe", "1"); "" when absent.
	CurrentLinkSpeed, CurrentLinkWidth, MaxLinkSpeed, MaxLinkWidth string
}

// PCIDevice reads bus/pci/devices/ADDR.
func (fs FS) PCIDevice(addr string) (PCIDevice, error) { return PCIDevice{}, errTodo }

// PCIPath lists addresses from addr up to (and including) its root port,
// following the resolved bus/pci/devices/ADDR link.
func (fs FS) PCIPath(addr string) ([]string, error) { return nil, errTodo }

// PCIConfig reads bus/pci/devices/ADDR/config (only the first 64 bytes when
// not root).
func (fs FS) PCIConfig(addr string) ([]byte, error) { return nil, errTodo }

// CPU is devices/system/cpu/cpuN.
type CPU struct {
	ID     int
	Online bool
	// CPUFreq is nil when cpufreq is absent for this CPU.
	CPUFreq *CPUFreq
}

// CPUFreq is cpuN/cpufreq.
type CPUFreq struct {
	CurKHz, MinKHz, MaxKHz int64 // scaling_cur_freq, cpuinfo_min_freq, cpuinfo_max_freq
	Governor               string
}

// CPUs lists the CPUs (present ones, online or not), by id.
func (fs FS) CPUs() ([]CPU, error) { return nil, errTodo }

// ThermalZone is class/thermal/thermal_zoneN.
type ThermalZone struct {
	Name         string // "thermal_zone0"
	Type         string
	MilliCelsius int64
}

// ThermalZones lists class/thermal/thermal_zone*; empty when there are none.
func (fs FS) ThermalZones() ([]ThermalZone, error) { return nil, errTodo }

// RPiThrottled reads the Raspberry Pi firmware's get_throttled value and the
// path it came from; an error wrapping fs.ErrNotExist when not a Pi.
func (fs FS) RPiThrottled() (uint32, string, error) { return 0, "", errTodo }
