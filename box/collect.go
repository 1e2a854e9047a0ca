package box

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"linerate/internal/usage"
	"linerate/source"
	"linerate/source/cpuset"
	"linerate/source/ethtool"
	"linerate/source/pci"
	"linerate/source/procfs"
	"linerate/source/sysfs"
	"linerate/source/tree"
)

// Collect builds the model of the box a source describes. ifaces limits the
// NICs to those named (all when empty); an unknown name is bad input.
//
// What the source cannot tell (the driver lacks it, it needs root, a
// capture does not hold the file) lands in the Unsupported map nearest to
// the item, with the reason. A capture is read as untrusted input that
// degrades rather than fails: a file it holds that cannot be parsed, or
// that is refused (a link out of the capture, a named pipe, a file over the
// size limit: docs/security.md), makes that item unknown, and a line a
// parser did not understand makes that one value unknown; each is also a
// Warning naming the file and line, so that nothing is hidden.
func Collect(ctx context.Context, src source.Source, ifaces ...string) (*Box, error) {
	c := &collector{
		src:     src,
		proc:    src.Proc(),
		sys:     src.Sys(),
		et:      src.Ethtool(),
		capture: strings.HasPrefix(src.Name(), "capture"),
	}
	m := src.Meta()
	b := &Box{
		Schema: SchemaVersion,
		Meta: Meta{
			Time: m.Time, Host: m.Host, Kernel: m.Kernel, Arch: m.Arch,
			Linerate: m.Linerate, MachineID: m.MachineID, Source: src.Name(),
		},
		NICs: []NIC{}, IRQs: []IRQ{}, CPUs: []CPU{}, PCIe: []PCIeDevice{},
		Thermal: []ThermalZone{}, Sysctls: []Sysctl{},
		Unsupported: map[string]string{},
	}
	c.box = b

	names, err := c.sys.NetDevices()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	if len(ifaces) > 0 {
		have := make(map[string]bool, len(names))
		for _, n := range names {
			have[n] = true
		}
		seen := map[string]bool{}
		var sel []string
		for _, n := range ifaces {
			if !have[n] {
				return nil, usage.Errorf("no interface %s (have: %s)", n, strings.Join(names, ", "))
			}
			if !seen[n] {
				seen[n] = true
				sel = append(sel, n)
			}
		}
		names = sel
	}

	irqs, err := c.proc.Interrupts()
	if lines, ok := tree.Skipped(err); ok {
		c.warnLines("interrupts", lines)
	} else if err != nil {
		c.unsupported(b.Unsupported, "interrupts", "interrupts", err)
	}
	c.interrupts = irqs
	if ll, ok := src.(source.LinkLister); ok {
		c.links, c.linksErr = ll.Links()
	} else {
		c.linksErr = fmt.Errorf("MTU range: %w", ethtool.ErrNotSupported)
	}

	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		nic, err := c.nic(name)
		if err != nil {
			return nil, err
		}
		b.NICs = append(b.NICs, nic)
	}
	steps := []func() error{c.irqs, c.pcie, c.cpus, c.thermal, c.throttle, c.irqbalance, c.sysctls, c.counters, c.kernel}
	for _, step := range steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := step(); err != nil {
			return nil, err
		}
	}
	if len(b.Unsupported) == 0 {
		b.Unsupported = nil
	}
	return b, nil
}

// ethtoolItems names the box item of each file of a capture's ethtool/IFACE/.
var ethtoolItems = map[string]string{
	"i.txt": "driver", "link.txt": "link", "k.txt": "features", "g.txt": "rings",
	"l.txt": "channels", "c.txt": "coalesce", "x.txt": "rss", "S.txt": "stats",
	"n-tcp4.txt": "flow_hash.tcp4", "n-udp4.txt": "flow_hash.udp4",
	"n-tcp6.txt": "flow_hash.tcp6", "n-udp6.txt": "flow_hash.udp6",
}

// warn records a warning about what, from err: the file and line of a
// *tree.ParseError or the file of a refusal, below the capture's top.
func (c *collector) warn(what string, err error) {
	w := Warning{Item: what, Why: err.Error()}
	var pe *tree.ParseError
	var re *tree.RefusedError
	switch {
	case errors.As(err, &pe):
		w.File, w.Line, w.Why = c.rel(pe.Path), pe.Line, pe.Err.Error()
	case errors.As(err, &re):
		w.File, w.Why = c.rel(re.Path), "refused: "+re.Why
	default:
		w.Why = c.strip(w.Why)
	}
	c.box.Warnings = append(c.box.Warnings, w)
}

// warnLines records each line that a parser of what left out. On a live
// machine they are warnings too: a kernel printing something new.
func (c *collector) warnLines(what string, lines []*tree.ParseError) {
	for _, l := range lines {
		c.warn(what, l)
	}
}

// ethtoolWarnings records the lines of iface's ethtool files that a parser
// did not understand.
func (c *collector) ethtoolWarnings(iface string) {
	cp, ok := c.src.(*source.Capture)
	if !ok {
		return
	}
	for _, fw := range cp.EthtoolWarnings(iface) {
		for _, w := range fw.Warnings {
			c.box.Warnings = append(c.box.Warnings, Warning{
				Item: iface + " " + ethtoolItems[fw.File], Value: w.Field,
				File: c.rel(fw.Path), Line: w.Line, Why: w.Why,
			})
		}
	}
}

// rel is path below the capture's top.
func (c *collector) rel(path string) string {
	if cp, ok := c.src.(*source.Capture); ok {
		if r, ok := strings.CutPrefix(path, cp.Dir()+"/"); ok {
			return r
		}
	}
	return path
}

// strip drops the capture's directory from a message, which for a tarball
// is a temporary directory that means nothing to the user.
func (c *collector) strip(msg string) string {
	if cp, ok := c.src.(*source.Capture); ok {
		return strings.ReplaceAll(msg, cp.Dir()+"/", "")
	}
	return msg
}

type collector struct {
	src        source.Source
	proc       procfs.FS
	sys        sysfs.FS
	et         ethtool.Client
	capture    bool
	box        *Box
	interrupts procfs.Interrupts
	links      map[string]source.Link
	linksErr   error
}

// Reason turns an error into the words inspect shows after "unsupported:"
// or "unknown:".
func (c *collector) reason(err error) string {
	switch {
	case errors.Is(err, ethtool.ErrNotCaptured):
		return "not in the capture"
	case errors.Is(err, ethtool.ErrNotSupported):
		return "not supported by this driver"
	case errors.Is(err, pci.ErrShort):
		return "needs root (config space truncated)"
	case errors.Is(err, fs.ErrNotExist):
		if c.capture {
			return "not in the capture"
		}
		return "not present on this system"
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EPERM):
		return "needs root"
	case errors.Is(err, tree.ErrRefused):
		var re *tree.RefusedError
		if errors.As(err, &re) {
			return "refused: " + c.rel(re.Path) + ": " + re.Why
		}
	case errors.As(err, new(*tree.ParseError)):
		return "unreadable: " + c.strip(err.Error())
	case errors.Is(err, ethtool.ErrFailed):
		// The capture holds ethtool's own failure; keep its words, not the
		// file's path.
		msg := err.Error()
		if i := strings.Index(msg, ethtool.ErrFailed.Error()); i >= 0 {
			msg = msg[i:]
		}
		if strings.Contains(msg, "not permitted") {
			return "needs root (" + msg + ")"
		}
		return msg
	}
	return c.strip(err.Error())
}

// absent reports whether err means the item could not be had rather than
// that a file is broken: a capture may record that the ethtool command
// itself failed (ethtool.ErrFailed, such as "Operation not permitted" when
// not run as root).
func absent(err error) bool {
	return errors.Is(err, ethtool.ErrNotCaptured) || errors.Is(err, ethtool.ErrNotSupported) ||
		errors.Is(err, ethtool.ErrFailed) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, pci.ErrShort) || errors.Is(err, pci.ErrNoExpress)
}

// unsupported records err under key in m. For a capture, an error other
// than "absent" means a file is there but broken or refused: what (a name
// for the item the user can read, "eth0 rings") is unknown, and a warning
// says where.
func (c *collector) unsupported(m map[string]string, key, what string, err error) {
	m[key] = c.reason(err)
	if c.capture && !absent(err) {
		c.warn(what, err)
	}
}

func (c *collector) nic(name string) (NIC, error) {
	nd, err := c.sys.NetDevice(name)
	sysErr := err
	if err != nil {
		if !c.capture || absent(err) {
			return NIC{}, fmt.Errorf("interface %s: %w", name, err)
		}
		// A capture whose sysfs files for the interface are broken: what
		// sysfs says is unknown, what ethtool says is still read.
		nd = sysfs.NetDevice{Name: name}
	}
	n := NIC{
		Name: name, Index: nd.Ifindex, MAC: nd.Address, OperState: nd.OperState,
		MTU: nd.MTU, TxQueueLen: nd.TxQueueLen, PCIAddr: nd.PCIAddr, IRQDevice: nd.IRQDevice,
		RXQueues: []RXQueue{}, TXQueues: []TXQueue{}, IRQs: []int{},
		Unsupported: map[string]string{},
	}
	u := n.Unsupported
	if sysErr != nil {
		c.unsupported(u, "sysfs", name+" sysfs", sysErr)
	}
	if nd.Carrier != nil {
		n.Carrier = *nd.Carrier
	} else {
		u["carrier"] = "unreadable (the kernel hides it while the interface is down)"
	}

	if c.linksErr != nil {
		c.unsupported(u, "max_mtu", name+" MTU range", c.linksErr)
	} else if l, ok := c.links[name]; ok {
		n.MinMTU, n.MaxMTU = l.MinMTU, l.MaxMTU
		if l.MaxMTU == 0 {
			u["max_mtu"] = "no limit reported by the driver"
		}
	} else {
		u["max_mtu"] = "not in the link list"
	}

	// Every ethtool item: a value, or a reason.
	item := func(key string, err error) bool {
		if err != nil {
			c.unsupported(u, key, name+" "+key, err)
		}
		return err == nil
	}
	if d, err := c.et.DriverInfo(name); item("driver", err) {
		n.Driver = &d
	}
	if l, err := c.et.LinkInfo(name); item("link", err) {
		n.Link = &l
	}
	if f, err := c.et.Features(name); item("features", err) {
		n.Features = f
	}
	if ch, err := c.et.Channels(name); item("channels", err) {
		n.Channels = &ch
	}
	if r, err := c.et.Rings(name); item("rings", err) {
		n.Rings = &r
	}
	if co, err := c.et.Coalesce(name); item("coalesce", err) {
		n.Coalesce = &co
	}
	if r, err := c.et.RSS(name); item("rss", err) {
		n.RSS = &r
	}
	for _, ft := range ethtool.FlowTypes {
		if h, err := c.et.FlowHash(name, ft); item("flow_hash."+string(ft), err) {
			if n.FlowHash == nil {
				n.FlowHash = map[string]string{}
			}
			n.FlowHash[string(ft)] = h.Letters()
		}
	}
	if s, err := c.et.Stats(name); item("stats", err) {
		n.Stats = s
	}
	c.ethtoolWarnings(name)

	n.Kind = kind(nd, n.Driver)
	c.queues(&n, nd)
	c.nicIRQs(&n, nd)
	if nd.PCIAddr != "" {
		path, err := c.sys.PCIPath(nd.PCIAddr)
		if err != nil {
			c.unsupported(u, "pcie_path", name+" PCIe path", err)
		}
		n.PCIePath = path
	}
	if len(u) == 0 {
		n.Unsupported = nil
	}
	return n, nil
}

// kind names what sort of interface nd is.
func kind(nd sysfs.NetDevice, d *ethtool.DriverInfo) NICKind {
	switch {
	case nd.Type == 772: // ARPHRD_LOOPBACK
		return KindLoopback
	case !nd.Virtual || nd.PCIAddr != "" || nd.Driver != "":
		return KindPhysical
	case d == nil:
		return KindVirtual
	}
	switch d.Driver {
	case "veth", "bridge", "tun", "macvlan", "ipvlan", "ifb", "dummy", "wireguard", "vxlan", "geneve", "vrf":
		return NICKind(d.Driver)
	case "bonding":
		return "bond"
	case "802.1Q VLAN Support":
		return "vlan"
	}
	return KindVirtual
}

// queues fills the rx and tx queues from sysfs and the driver's per-queue
// counters. A CPU mask that cannot be read leaves that queue's CPU list
// empty, with a warning.
func (c *collector) queues(n *NIC, nd sysfs.NetDevice) {
	driver := ""
	if n.Driver != nil {
		driver = n.Driver.Driver
	}
	rx, tx := ethtool.QueueStats(n.Stats, driver)
	for _, q := range nd.RXQueues {
		r := RXQueue{Index: q.Index, RPSCPUs: q.RPSCPUs, RPSFlowCnt: q.RPSFlowCnt, RPSCPUList: []int{}}
		if q.RPSCPUs != "" {
			l, err := cpuset.ParseMask(q.RPSCPUs)
			if err != nil {
				c.maskWarning(n.Name, fmt.Sprintf("queues/rx-%d/rps_cpus", q.Index), err)
			}
			if l != nil {
				r.RPSCPUList = l
			}
		}
		if s, ok := rx[q.Index]; ok {
			r.Packets, r.Bytes = s.Packets, s.Bytes
		}
		n.RXQueues = append(n.RXQueues, r)
	}
	for _, q := range nd.TXQueues {
		t := TXQueue{Index: q.Index, XPSCPUs: q.XPSCPUs, XPSCPUList: []int{}}
		if q.XPSCPUs != "" {
			l, err := cpuset.ParseMask(q.XPSCPUs)
			if err != nil {
				c.maskWarning(n.Name, fmt.Sprintf("queues/tx-%d/xps_cpus", q.Index), err)
			}
			if l != nil {
				t.XPSCPUList = l
			}
		}
		if s, ok := tx[q.Index]; ok {
			t.Packets, t.Bytes = s.Packets, s.Bytes
		}
		n.TXQueues = append(n.TXQueues, t)
	}
	counted := false
	for _, s := range rx {
		counted = counted || s.Packets != nil
	}
	if len(nd.RXQueues) > 0 && !counted && n.Stats != nil {
		n.Unsupported["queue_counters"] = "the driver has no per-queue packet counters"
	}
}

// maskWarning records a queue's CPU mask that could not be read. On a live
// box it cannot happen (the kernel prints the masks); in a capture it is a
// file the capture holds.
func (c *collector) maskWarning(iface, file string, err error) {
	c.warn(iface+" "+file, &tree.ParseError{Path: c.sys.Root() + "/class/net/" + iface + "/" + file, Err: err})
}

// nicIRQs finds a NIC's interrupts (procfs.NICIRQs: msi_irqs, else the
// /proc/interrupts lines that name it, else those whose chip names its PCI
// address).
func (c *collector) nicIRQs(n *NIC, nd sysfs.NetDevice) {
	var irqs []int
	irqs, n.IRQSource = procfs.NICIRQs(n.Name, n.IRQDevice, n.PCIAddr, nd.MSIIRQs, &c.interrupts)
	n.IRQs = append(n.IRQs, irqs...)
	sort.Ints(n.IRQs)
	if len(n.IRQs) == 0 && n.Kind == KindPhysical {
		n.Unsupported["irqs"] = "no msi_irqs and no /proc/interrupts line names " + n.Name
	}
}

// irqs describes every interrupt of the NICs.
func (c *collector) irqs() error {
	rows := make(map[int]*procfs.InterruptRow, len(c.interrupts.Rows))
	for i := range c.interrupts.Rows {
		r := &c.interrupts.Rows[i]
		if r.Number >= 0 {
			rows[r.Number] = r
		}
	}
	actions := make(map[int]string, len(rows))
	for n, r := range rows {
		actions[n] = r.Actions
	}
	seen := map[int]bool{}
	for _, n := range c.box.NICs {
		refs := map[int]string{}
		for _, q := range procfs.NameIRQs(n.Name, n.IRQDevice, n.IRQs, actions) {
			refs[q.Number] = q.Ref
		}
		for _, num := range n.IRQs {
			if seen[num] {
				continue
			}
			seen[num] = true
			q := IRQ{Number: num, NIC: n.Name, Ref: refs[num], AffinityList: []int{}, Unsupported: map[string]string{}}
			if r, ok := rows[num]; ok {
				q.Chip, q.HWIRQ, q.Name, q.PerCPU = r.Chip, r.HWIRQ, r.Actions, r.Counts
			} else {
				q.Unsupported["per_cpu"] = "not in /proc/interrupts"
			}
			a, err := c.proc.IRQAffinity(num)
			if err != nil {
				c.unsupported(q.Unsupported, "affinity", fmt.Sprintf("irq %d affinity", num), err)
			} else {
				q.SMPAffinity, q.Effective = a.Mask, a.Effective
				if a.List != nil {
					q.AffinityList = a.List
				}
			}
			if len(q.Unsupported) == 0 {
				q.Unsupported = nil
			}
			c.box.IRQs = append(c.box.IRQs, q)
		}
	}
	sort.Slice(c.box.IRQs, func(i, j int) bool { return c.box.IRQs[i].Number < c.box.IRQs[j].Number })
	return nil
}

// pcie describes every device on the NICs' PCIe paths.
func (c *collector) pcie() error {
	seen := map[string]bool{}
	for _, n := range c.box.NICs {
		for i, addr := range n.PCIePath {
			if seen[addr] {
				continue
			}
			seen[addr] = true
			d, err := c.pciDevice(addr, i == len(n.PCIePath)-1)
			if err != nil {
				return err
			}
			c.box.PCIe = append(c.box.PCIe, d)
		}
	}
	sort.Slice(c.box.PCIe, func(i, j int) bool { return c.box.PCIe[i].Addr < c.box.PCIe[j].Addr })
	return nil
}

func (c *collector) pciDevice(addr string, top bool) (PCIeDevice, error) {
	d := PCIeDevice{Addr: addr, Unsupported: map[string]string{}}
	u := d.Unsupported
	p, err := c.sys.PCIDevice(addr)
	if err != nil {
		c.unsupported(u, "sysfs", "PCI device "+addr, err)
	} else {
		d.Vendor, d.Device, d.Class, d.Driver, d.Upstream = p.Vendor, p.Device, p.Class, p.Driver, p.Upstream
		var perr error
		d.CurSpeedGTs, perr = speed(p.CurrentLinkSpeed, perr)
		d.MaxSpeedGTs, perr = speed(p.MaxLinkSpeed, perr)
		d.CurWidth, perr = width(p.CurrentLinkWidth, perr)
		d.MaxWidth, perr = width(p.MaxLinkWidth, perr)
		if perr != nil {
			if !c.capture {
				return d, fmt.Errorf("PCI device %s: %w", addr, perr)
			}
			d.CurSpeedGTs, d.MaxSpeedGTs, d.CurWidth, d.MaxWidth = 0, 0, 0, 0
			c.unsupported(u, "link", "PCI device "+addr+" link", &tree.ParseError{Path: c.sys.Root() + "/bus/pci/devices/" + addr, Err: perr})
		}
		if p.CurrentLinkSpeed == "" && p.MaxLinkSpeed == "" {
			u["link"] = "no link attributes in sysfs"
		}
	}
	cfg, err := c.src.PCIConfig(addr)
	var x pci.Express
	if err == nil {
		x, err = pci.ParseConfig(cfg)
	}
	if err != nil {
		if errors.Is(err, pci.ErrNoExpress) {
			u["mps"], u["mrrs"] = "not a PCI Express function", "not a PCI Express function"
		} else {
			c.unsupported(u, "mps", "PCI device "+addr+" config", err)
			u["mrrs"] = u["mps"]
		}
		// Without the capability, a bridge at the top of the path with no
		// upstream is taken for the root port.
		d.RootPort = top && d.Upstream == "" && strings.HasPrefix(d.Class, "0x0604")
	} else {
		d.MPSSupported, d.MPS, d.MRRS, d.RootPort = x.MPSSupported, x.MPS, x.MRRS, x.RootPort
		if d.CurSpeedGTs == 0 && d.CurWidth == 0 {
			d.CurSpeedGTs, d.CurWidth = x.CurSpeedGTs, x.CurWidth
		}
		if d.MaxSpeedGTs == 0 && d.MaxWidth == 0 {
			d.MaxSpeedGTs, d.MaxWidth = x.MaxSpeedGTs, x.MaxWidth
		}
		if d.CurSpeedGTs != 0 || d.MaxSpeedGTs != 0 {
			delete(u, "link")
		}
	}
	if len(u) == 0 {
		d.Unsupported = nil
	}
	return d, nil
}

func speed(s string, prev error) (float64, error) {
	if prev != nil || s == "" || strings.HasPrefix(s, "Unknown") {
		return 0, prev
	}
	v, err := pci.ParseSpeed(s)
	if err != nil {
		return 0, err // names the text
	}
	return v, nil
}

func width(s string, prev error) (int, error) {
	if prev != nil || s == "" {
		return 0, prev
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("link width %q: %w", tree.Clip(s), errors.Unwrap(err))
	}
	return v, nil
}

func (c *collector) cpus() error {
	cpus, err := c.sys.CPUs()
	if err != nil {
		c.unsupported(c.box.Unsupported, "cpus", "cpus", err)
		return nil
	}
	for _, x := range cpus {
		cpu := CPU{ID: x.ID, Online: x.Online}
		if f := x.CPUFreq; f != nil {
			cpu.CurKHz, cpu.MinKHz, cpu.MaxKHz, cpu.Governor = f.CurKHz, f.MinKHz, f.MaxKHz, f.Governor
		} else {
			cpu.Unsupported = map[string]string{"cpufreq": "no cpufreq directory"}
		}
		c.box.CPUs = append(c.box.CPUs, cpu)
	}
	return nil
}

func (c *collector) thermal() error {
	zones, err := c.sys.ThermalZones()
	if err != nil {
		c.unsupported(c.box.Unsupported, "thermal", "thermal", err)
		return nil
	}
	if len(zones) == 0 {
		c.box.Unsupported["thermal"] = "no thermal zones"
	}
	for _, z := range zones {
		c.box.Thermal = append(c.box.Thermal, ThermalZone{Name: z.Name, Type: z.Type, Celsius: float64(z.MilliCelsius) / 1000})
	}
	return nil
}

// Bits of the Raspberry Pi firmware's get_throttled value, as documented
// for `vcgencmd get_throttled` in the Raspberry Pi documentation
// (raspberrypi.com/documentation/computers/os.html#get_throttled).
const (
	thUnderVoltage   = 1 << 0
	thFreqCapped     = 1 << 1
	thThrottled      = 1 << 2
	thSoftTempLimit  = 1 << 3
	thUnderVoltageEv = 1 << 16
	thFreqCappedEv   = 1 << 17
	thThrottledEv    = 1 << 18
	thSoftTempEv     = 1 << 19
)

// DecodeThrottle decodes a get_throttled value.
func DecodeThrottle(raw uint32, source string) *Throttle {
	return &Throttle{
		Raw: raw, Source: source,
		UnderVoltage:          raw&thUnderVoltage != 0,
		FreqCapped:            raw&thFreqCapped != 0,
		Throttled:             raw&thThrottled != 0,
		SoftTempLimit:         raw&thSoftTempLimit != 0,
		UnderVoltageOccurred:  raw&thUnderVoltageEv != 0,
		FreqCappedOccurred:    raw&thFreqCappedEv != 0,
		ThrottledOccurred:     raw&thThrottledEv != 0,
		SoftTempLimitOccurred: raw&thSoftTempEv != 0,
	}
}

func (c *collector) throttle() error {
	raw, path, err := c.sys.RPiThrottled()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			c.box.Unsupported["throttle"] = "no Raspberry Pi firmware get_throttled"
			return nil
		}
		c.unsupported(c.box.Unsupported, "throttle", "throttle", err)
		return nil
	}
	c.box.Throttle = DecodeThrottle(raw, path)
	return nil
}

func (c *collector) irqbalance() error {
	on, err := c.proc.Running("irqbalance")
	if err != nil {
		c.unsupported(c.box.Unsupported, "irqbalance", "irqbalance", err)
		return nil
	}
	c.box.IRQBalance = &on
	return nil
}

func (c *collector) sysctls() error {
	for _, name := range Sysctls {
		v, err := source.Sysctl(c.src, name)
		s := Sysctl{Name: name, Value: v, HostWide: source.SysctlHostWide(c.src, name)}
		if err != nil {
			s.Value, s.Err = "", c.reason(err)
			if c.capture && !absent(err) {
				c.warn("sysctl "+name, err)
			}
		}
		c.box.Sysctls = append(c.box.Sysctls, s)
	}
	return nil
}

// counters takes the snapshot of counters; the ethtool statistics already
// read per NIC are reused rather than fetched again.
func (c *collector) counters() error {
	cs, err := ReadCounters(c.proc, nil, nil)
	if err != nil {
		c.unsupported(c.box.Unsupported, "counters", "counters", err)
		return nil
	}
	// /proc/interrupts' left-out lines were told when it was read first.
	var others []*tree.ParseError
	for _, l := range cs.Skipped {
		if !strings.HasSuffix(l.Path, "/interrupts") {
			others = append(others, l)
		}
	}
	c.warnLines("counters", others)
	ReadGauges(c.sys, &cs)
	if c.capture || !c.box.Meta.Time.IsZero() {
		cs.Time = c.box.Meta.Time
	}
	if cs.Time.IsZero() {
		cs.Time = time.Now()
	}
	for _, n := range c.box.NICs {
		if n.Stats == nil {
			continue
		}
		if cs.Ethtool == nil {
			cs.Ethtool = map[string]map[string]uint64{}
		}
		cs.Ethtool[n.Name] = n.Stats.Map()
	}
	c.box.Counters = &cs
	return nil
}
