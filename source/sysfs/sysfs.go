// Package sysfs reads the files under /sys that linerate uses: network
// interfaces and their queues, PCI devices and their place in the PCIe
// tree, CPU frequency, thermal zones and the Raspberry Pi firmware's
// throttle flags. Every reader is a method on an FS made from a mount point
// ("/sys", or a capture's "sys"); a missing optional file is absent (nil or
// an Unsupported entry), not an error.
//
// Symbolic links are followed inside the tree, never out of it: a capture
// holds relative links such as class/net/eth1 →
// ../../devices/pci0000:00/0000:00:00.0/0000:01:00.0/net/eth1, and they are
// resolved against the FS root as the kernel resolves them against /sys.
// Files are read through a tree.Tree: beneath the root, regular files only,
// under its size limits.
package sysfs

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"linerate/internal/order"
	"linerate/source/cpuset"
	"linerate/source/tree"
)

// FS is a /sys tree at some root. Every file is read through a tree.Tree:
// beneath the root, regular files only, under size limits (package tree).
type FS struct{ t tree.Tree }

// NewFS returns an FS rooted at the sysfs mount point root, read under
// tree.LiveLimits.
func NewFS(root string) FS { return FS{t: tree.New(root, tree.LiveLimits)} }

// NewTreeFS returns an FS over t (a capture's sys/, under its limits).
func NewTreeFS(t tree.Tree) FS { return FS{t: t} }

// Root is the mount point the FS was made from, as a path of this machine.
func (fs FS) Root() string { return fs.t.Path("") }

// Tree is the tree the FS reads its files through, for a reader of files
// it has no method for (the capture writer copies them).
func (fs FS) Tree() tree.Tree { return fs.t }

// host turns a slash path below the root into a path of this machine, for
// messages.
func (fs FS) host(rel string) string { return fs.t.Path(rel) }

// maxLinks bounds how many symbolic links one resolution follows, as the
// kernel's MAXSYMLINKS (40) does.
const maxLinks = 40

// resolve follows the symbolic links along rel, a slash path below the root,
// and returns the path they lead to, also below the root and free of links.
// A relative link target is taken from the link's directory; an absolute one
// is a path on the machine the tree came from, so a leading "/sys" is dropped
// and the rest is taken from the root. ".." never climbs above the root.
// A missing component gives an error wrapping fs.ErrNotExist.
func (fs FS) resolve(rel string) (string, error) {
	pending := strings.Split(rel, "/")
	var done []string
	links := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		done = append(done, c)
		p := strings.Join(done, "/")
		fi, err := fs.t.Lstat(p)
		if err != nil {
			// Name the path asked for, not the component that failed.
			var pe *iofs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			if errors.Is(err, tree.ErrRefused) {
				return "", err
			}
			return "", &iofs.PathError{Op: "open", Path: fs.host(rel), Err: err}
		}
		if fi.Mode()&iofs.ModeSymlink == 0 {
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: %w", fs.host(rel), syscall.ELOOP)
		}
		target, err := fs.t.Readlink(p)
		if err != nil {
			return "", err
		}
		done = done[:len(done)-1]
		if strings.HasPrefix(target, "/") {
			done = nil
			if target == "/sys" || strings.HasPrefix(target, "/sys/") {
				target = target[len("/sys"):]
			}
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	return strings.Join(done, "/"), nil
}

// absent says whether a read error means "this attribute has no value
// here": the file is missing, or the kernel refuses to produce it (speed and
// carrier of a down link give EINVAL, xps_cpus of a single-queue device
// ENOENT, phys_port_name EOPNOTSUPP, a sleeping sensor ENODATA).
func absent(err error) bool {
	return errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.EINVAL) ||
		errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.EOPNOTSUPP) ||
		errors.Is(err, syscall.ENODATA) || errors.Is(err, syscall.ENXIO)
}

// read returns the content of rel with surrounding white space removed.
func (fs FS) read(rel string) (string, error) {
	p, err := fs.resolve(rel)
	if err != nil {
		return "", err
	}
	b, err := fs.t.ReadFile(p)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// optional reads rel; ok is false when the value is absent.
func (fs FS) optional(rel string) (s string, ok bool, err error) {
	s, err = fs.read(rel)
	if err != nil {
		if absent(err) {
			return "", false, nil
		}
		return "", false, err
	}
	return s, true, nil
}

// optionalInt reads a decimal integer from rel; ok is false when absent.
func (fs FS) optionalInt(rel string) (n int64, ok bool, err error) {
	s, ok, err := fs.optional(rel)
	if !ok || err != nil {
		return 0, false, err
	}
	n, err = strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false, &tree.ParseError{Path: fs.host(rel), Err: fmt.Errorf("%q is not a number", tree.Clip(s))}
	}
	return n, true, nil
}

// intInto stores the integer in rel into *dst when present.
func (fs FS) intInto(rel string, dst *int) error {
	n, ok, err := fs.optionalInt(rel)
	if ok {
		*dst = int(n)
	}
	return err
}

// linkBase returns the base name of the symbolic link rel points to ("igb"
// for device/driver → ../../../bus/pci/drivers/igb), "" when rel is not a
// link. The target need not exist in the tree.
func (fs FS) linkBase(rel string) (string, error) {
	dir, err := fs.resolve(path.Dir(rel))
	if err != nil {
		if absent(err) {
			return "", nil
		}
		return "", err
	}
	target, err := fs.t.Readlink(path.Join(dir, path.Base(rel)))
	if err != nil {
		if absent(err) {
			return "", nil // missing, or not a link
		}
		return "", err
	}
	return path.Base(target), nil
}

// validName rejects names that would leave the directory they name an entry of.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// pciAddr matches a PCI function address, DDDD:BB:DD.F; VMD domains have
// five hex digits ("10000:e1:00.0").
var pciAddr = regexp.MustCompile(`^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// pciChain returns the PCI address components of a device path, nearest
// (last) first.
func pciChain(p string) []string {
	parts := strings.Split(p, "/")
	var out []string
	for i := len(parts) - 1; i >= 0; i-- {
		if pciAddr.MatchString(parts[i]) {
			out = append(out, parts[i])
		}
	}
	return out
}

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
	// unreadable (link down makes speed unreadable). SpeedMbps is also nil
	// when the driver reports the speed as unknown (-1).
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
	// MSIIRQs lists device/msi_irqs entries; nil when absent. When the
	// device is a child of a PCI function rather than the function itself
	// (virtio: device → 0000:00:03.0/virtio2), the function's msi_irqs are
	// listed.
	MSIIRQs []int
	// IRQDevice names the device the interface's interrupts are named
	// after when that is not the interface: a virtio NIC's vectors are
	// its virtio device's ("virtio2-input.0", device → 0000:00:03.0/virtio2).
	// "" otherwise.
	IRQDevice string
	RXQueues  []RXQueue
	TXQueues  []TXQueue
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

// entries lists the names in directory rel (links followed); a missing
// directory gives an error wrapping fs.ErrNotExist.
func (fs FS) entries(rel string) ([]iofs.DirEntry, error) {
	p, err := fs.resolve(rel)
	if err != nil {
		return nil, err
	}
	return fs.t.ReadDir(p)
}

// NetDevices lists class/net, sorted. Regular files there (bonding_masters)
// are not interfaces and are left out.
func (fs FS) NetDevices() ([]string, error) {
	ents, err := fs.entries("class/net")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() || e.Type()&iofs.ModeSymlink != 0 {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

// NetDevice reads class/net/NAME; an error wrapping fs.ErrNotExist when the
// interface does not exist.
func (fs FS) NetDevice(name string) (NetDevice, error) {
	d := NetDevice{Name: name}
	rel := "class/net/" + name
	if !validName(name) {
		return d, fmt.Errorf("%s: %q is not an interface name: %w", fs.host("class/net"), name, iofs.ErrNotExist)
	}
	dir, err := fs.resolve(rel)
	if err != nil {
		return d, err
	}
	if fi, err := fs.t.Stat(dir); err != nil {
		return d, err
	} else if !fi.IsDir() {
		return d, fmt.Errorf("%s: not a directory: %w", fs.host(rel), iofs.ErrNotExist)
	}
	at := func(f string) string { return dir + "/" + f }

	for f, dst := range map[string]*int{"ifindex": &d.Ifindex, "type": &d.Type, "mtu": &d.MTU, "tx_queue_len": &d.TxQueueLen} {
		if err := fs.intInto(at(f), dst); err != nil {
			return d, err
		}
	}
	for f, dst := range map[string]*string{"address": &d.Address, "operstate": &d.OperState, "duplex": &d.Duplex} {
		if *dst, _, err = fs.optional(at(f)); err != nil {
			return d, err
		}
	}
	if n, ok, err := fs.optionalInt(at("carrier")); err != nil {
		return d, err
	} else if ok {
		up := n != 0
		d.Carrier = &up
	}
	// Unknown speed reads as -1, or as 4294967295 on kernels that printed
	// it unsigned (SPEED_UNKNOWN, include/uapi/linux/ethtool.h).
	if n, ok, err := fs.optionalInt(at("speed")); err != nil {
		return d, err
	} else if ok && n >= 0 && n < 1<<31-1 {
		mbps := int(n)
		d.SpeedMbps = &mbps
	}
	d.Virtual = strings.Contains("/"+dir+"/", "/devices/virtual/")

	if d.Driver, err = fs.linkBase(at("device/driver")); err != nil {
		return d, err
	}
	if d.PCIAddr, d.MSIIRQs, d.IRQDevice, err = fs.deviceIRQs(dir); err != nil {
		return d, err
	}

	if d.RXQueues, d.TXQueues, err = fs.queues(dir + "/queues"); err != nil {
		return d, err
	}
	return d, nil
}

// DeviceIRQs reads what the interrupts of the interface name hang on: its
// device's PCI address ("" when it is not on PCI), its MSI vectors (nil
// when it has none) and the device they are named after when that is not
// the interface, as NetDevice fills PCIAddr, MSIIRQs and IRQDevice.
func (fs FS) DeviceIRQs(name string) (pci string, msi []int, irqDevice string, err error) {
	if !validName(name) {
		return "", nil, "", fmt.Errorf("%s: %q is not an interface name: %w", fs.host("class/net"), name, iofs.ErrNotExist)
	}
	dir, err := fs.resolve("class/net/" + name)
	if err != nil {
		return "", nil, "", err
	}
	return fs.deviceIRQs(dir)
}

// deviceIRQs is DeviceIRQs of the resolved class/net directory dir.
func (fs FS) deviceIRQs(dir string) (pci string, msi []int, irqDevice string, err error) {
	dev, err := fs.resolve(dir + "/device")
	switch {
	case err == nil:
		if c := pciChain(dev); len(c) > 0 {
			pci = c[0]
		}
		if msi, err = fs.msiIRQs(dev); err != nil {
			return pci, nil, "", err
		}
		if parent := path.Dir(dev); msi == nil && pciAddr.MatchString(path.Base(parent)) {
			// A child of a PCI function (virtio): the function's vectors,
			// named by the driver after the child ("virtio2-input.0").
			if msi, err = fs.msiIRQs(parent); err != nil {
				return pci, nil, "", err
			}
			irqDevice = path.Base(dev)
		}
	case absent(err):
		if c := pciChain(dir); len(c) > 0 {
			pci = c[0]
		}
	default:
		return "", nil, "", err
	}
	return pci, msi, irqDevice, nil
}

// msiIRQs lists dir/msi_irqs, nil when absent.
func (fs FS) msiIRQs(dir string) ([]int, error) {
	ents, err := fs.entries(dir + "/msi_irqs")
	if err != nil {
		if absent(err) {
			return nil, nil
		}
		return nil, err
	}
	irqs := []int{}
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			irqs = append(irqs, n)
		}
	}
	slices.Sort(irqs)
	return irqs, nil
}

// queues reads the rx-N and tx-N directories under rel, by index.
func (fs FS) queues(rel string) ([]RXQueue, []TXQueue, error) {
	ents, err := fs.entries(rel)
	if err != nil {
		if absent(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	var rx []RXQueue
	var tx []TXQueue
	for _, e := range ents {
		kind, num, ok := strings.Cut(e.Name(), "-")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || n < 0 {
			continue
		}
		q := rel + "/" + e.Name() + "/"
		switch kind {
		case "rx":
			r := RXQueue{Index: n}
			if r.RPSCPUs, _, err = fs.optional(q + "rps_cpus"); err != nil {
				return nil, nil, err
			}
			if err := fs.intInto(q+"rps_flow_cnt", &r.RPSFlowCnt); err != nil {
				return nil, nil, err
			}
			rx = append(rx, r)
		case "tx":
			t := TXQueue{Index: n}
			// Any failure leaves XPSCPUs empty, as documented: xps_cpus is
			// unreadable in more ways than other attributes.
			t.XPSCPUs, _ = fs.read(q + "xps_cpus")
			tx = append(tx, t)
		}
	}
	order.Sort(rx, func(a, b RXQueue) int { return a.Index - b.Index })
	order.Sort(tx, func(a, b TXQueue) int { return a.Index - b.Index })
	return rx, tx, nil
}

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

// pciRel is the directory of a PCI function below the root.
func pciRel(addr string) string { return "bus/pci/devices/" + addr }

// PCIDevice reads bus/pci/devices/ADDR; an error wrapping fs.ErrNotExist
// when there is no such device.
func (fs FS) PCIDevice(addr string) (PCIDevice, error) {
	d := PCIDevice{Addr: addr}
	chain, err := fs.PCIPath(addr)
	if err != nil {
		return d, err
	}
	if len(chain) > 1 {
		d.Upstream = chain[1]
	}
	dir, err := fs.resolve(pciRel(addr))
	if err != nil {
		return d, err
	}
	for f, dst := range map[string]*string{
		"vendor": &d.Vendor, "device": &d.Device, "class": &d.Class,
		"current_link_speed": &d.CurrentLinkSpeed, "current_link_width": &d.CurrentLinkWidth,
		"max_link_speed": &d.MaxLinkSpeed, "max_link_width": &d.MaxLinkWidth,
	} {
		if *dst, _, err = fs.optional(dir + "/" + f); err != nil {
			return d, err
		}
	}
	d.Driver, err = fs.linkBase(dir + "/driver")
	return d, err
}

// PCIPath lists addresses from addr up to (and including) its root port,
// following the resolved bus/pci/devices/ADDR link.
func (fs FS) PCIPath(addr string) ([]string, error) {
	rel := pciRel(addr)
	if !validName(addr) {
		return nil, fmt.Errorf("%s: %q is not a PCI address: %w", fs.host("bus/pci/devices"), addr, iofs.ErrNotExist)
	}
	dir, err := fs.resolve(rel)
	if err != nil {
		return nil, err
	}
	chain := pciChain(dir)
	if len(chain) == 0 {
		return nil, fmt.Errorf("%s: resolves to %s, which holds no PCI address", fs.host(rel), dir)
	}
	return chain, nil
}

// PCIConfig reads bus/pci/devices/ADDR/config (only the first 64 bytes when
// not root).
func (fs FS) PCIConfig(addr string) ([]byte, error) {
	rel := pciRel(addr) + "/config"
	if !validName(addr) {
		return nil, fmt.Errorf("%s: %q is not a PCI address: %w", fs.host("bus/pci/devices"), addr, iofs.ErrNotExist)
	}
	p, err := fs.resolve(rel)
	if err != nil {
		return nil, err
	}
	return fs.t.ReadFile(p)
}

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

// CPUs lists the CPUs (present ones, online or not), by id. A CPU without
// an online file (cpu0 usually, or any CPU that cannot be unplugged) is
// online when devices/system/cpu/online names it or that file is absent.
func (fs FS) CPUs() ([]CPU, error) {
	const dir = "devices/system/cpu"
	ents, err := fs.entries(dir)
	if err != nil {
		return nil, err
	}
	var onlineList []int
	if s, ok, err := fs.optional(dir + "/online"); err != nil {
		return nil, err
	} else if ok {
		if onlineList, err = cpuset.ParseList(s); err != nil {
			return nil, &tree.ParseError{Path: fs.host(dir + "/online"), Err: err}
		}
	}
	var cpus []CPU
	for _, e := range ents {
		num, ok := strings.CutPrefix(e.Name(), "cpu")
		id, err := strconv.Atoi(num)
		if !ok || err != nil || id < 0 || num != strconv.Itoa(id) {
			continue
		}
		c := CPU{ID: id, Online: onlineList == nil || slices.Contains(onlineList, id)}
		cpuDir := dir + "/" + e.Name()
		if n, ok, err := fs.optionalInt(cpuDir + "/online"); err != nil {
			return nil, err
		} else if ok {
			c.Online = n != 0
		}
		if c.CPUFreq, err = fs.cpuFreq(cpuDir + "/cpufreq"); err != nil {
			return nil, err
		}
		cpus = append(cpus, c)
	}
	order.Sort(cpus, func(a, b CPU) int { return a.ID - b.ID })
	return cpus, nil
}

// cpuFreq reads a cpufreq directory, nil when it is absent.
func (fs FS) cpuFreq(rel string) (*CPUFreq, error) {
	dir, err := fs.resolve(rel)
	if err != nil {
		if absent(err) {
			return nil, nil
		}
		return nil, err
	}
	var f CPUFreq
	for name, dst := range map[string]*int64{"scaling_cur_freq": &f.CurKHz, "cpuinfo_min_freq": &f.MinKHz, "cpuinfo_max_freq": &f.MaxKHz} {
		if *dst, _, err = fs.optionalInt(dir + "/" + name); err != nil {
			return nil, err
		}
	}
	if f.Governor, _, err = fs.optional(dir + "/scaling_governor"); err != nil {
		return nil, err
	}
	return &f, nil
}

// ThermalZone is class/thermal/thermal_zoneN.
type ThermalZone struct {
	Name         string // "thermal_zone0"
	Type         string
	MilliCelsius int64
}

// ThermalZones lists class/thermal/thermal_zone*; empty when there are none.
// A zone whose temp cannot be read (absent, or a sensor that is asleep and
// answers ENODATA) is left out, since it has no temperature to report.
func (fs FS) ThermalZones() ([]ThermalZone, error) {
	const dir = "class/thermal"
	ents, err := fs.entries(dir)
	if err != nil {
		if absent(err) {
			return nil, nil
		}
		return nil, err
	}
	type numbered struct {
		n int
		z ThermalZone
	}
	var zs []numbered
	for _, e := range ents {
		num, ok := strings.CutPrefix(e.Name(), "thermal_zone")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			continue
		}
		z := ThermalZone{Name: e.Name()}
		zdir := dir + "/" + e.Name()
		temp, ok, err := fs.optionalInt(zdir + "/temp")
		if err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EIO) {
			return nil, err
		}
		if !ok {
			continue
		}
		z.MilliCelsius = temp
		if z.Type, _, err = fs.optional(zdir + "/type"); err != nil {
			return nil, err
		}
		zs = append(zs, numbered{n, z})
	}
	order.Sort(zs, func(a, b numbered) int { return a.n - b.n })
	out := make([]ThermalZone, len(zs))
	for i := range zs {
		out[i] = zs[i].z
	}
	return out, nil
}

// throttledRel is where the Raspberry Pi firmware driver puts its
// get_throttled attribute (drivers/firmware/raspberrypi.c in the
// raspberrypi/linux tree).
const throttledRel = "devices/platform/soc/soc:firmware/get_throttled"

// RPiThrottled reads the Raspberry Pi firmware's get_throttled value and the
// path it came from; an error wrapping fs.ErrNotExist when not a Pi. The
// driver prints the value in hex without a prefix ("50005"); "0x50005" and
// vcgencmd's "throttled=0x50005", which people paste into captures, are
// read the same way.
func (fs FS) RPiThrottled() (uint32, string, error) {
	rel := throttledRel
	if _, err := fs.resolve(rel); errors.Is(err, iofs.ErrNotExist) {
		// A board whose SoC node has another name.
		if r, ok := fs.findThrottled(); ok {
			rel = r
		}
	}
	p := fs.host(rel)
	s, err := fs.read(rel)
	if err != nil {
		return 0, p, err
	}
	v, err := ParseThrottled(s)
	if err != nil {
		return 0, p, &tree.ParseError{Path: p, Err: err}
	}
	return v, p, nil
}

// findThrottled looks for devices/platform/*/*:firmware/get_throttled.
func (fs FS) findThrottled() (string, bool) {
	const platform = "devices/platform"
	socs, err := fs.entries(platform)
	if err != nil {
		return "", false
	}
	for _, soc := range socs {
		kids, err := fs.entries(platform + "/" + soc.Name())
		if err != nil {
			continue
		}
		for _, k := range kids {
			if !strings.HasSuffix(k.Name(), ":firmware") {
				continue
			}
			rel := platform + "/" + soc.Name() + "/" + k.Name() + "/get_throttled"
			if _, err := fs.resolve(rel); err == nil {
				return rel, true
			}
		}
	}
	return "", false
}

// ParseThrottled parses get_throttled text: hex, with or without "0x" and
// vcgencmd's "throttled=" prefix.
func ParseThrottled(s string) (uint32, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(t, "throttled=")
	t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
	v, err := strconv.ParseUint(t, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a hex throttle value", tree.Clip(s))
	}
	return uint32(v), nil
}

// UnboundNIC is an Ethernet PCI function (class 0x0200xx) that no driver
// is bound to: the kernel sees the card, and no interface exists for it.
type UnboundNIC struct {
	PCIDevice
	// Modalias is bus/pci/devices/ADDR/modalias, what modprobe matches
	// against modules.alias.
	Modalias string
}

// UnboundNICs lists the Ethernet PCI functions without a driver, by
// address.
func (fs FS) UnboundNICs() ([]UnboundNIC, error) {
	ents, err := fs.entries("bus/pci/devices")
	if err != nil {
		if absent(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []UnboundNIC
	for _, e := range ents {
		addr := e.Name()
		if !pciAddr.MatchString(addr) {
			continue
		}
		class, _, err := fs.optional(pciRel(addr) + "/class")
		if err != nil || !strings.HasPrefix(class, "0x0200") {
			continue
		}
		d, err := fs.PCIDevice(addr)
		if err != nil {
			return out, err
		}
		if d.Driver != "" {
			continue
		}
		u := UnboundNIC{PCIDevice: d}
		if u.Modalias, _, err = fs.optional(pciRel(addr) + "/modalias"); err != nil {
			return out, err
		}
		out = append(out, u)
	}
	return out, nil
}
