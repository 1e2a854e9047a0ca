package ceiling

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"linerate/box"
	"linerate/internal/units"
)

// Report is the ceiling of a whole box: each NIC's line rate, and each
// group of NICs that share a PCIe link with what that link carries.
type Report struct {
	Host   string    `json:"host,omitempty"`
	Source string    `json:"source,omitempty"`
	NICs   []NICRate `json:"nics"`
	Groups []Group   `json:"groups"`
	// Assumptions name what the figures take for granted.
	Assumptions []string `json:"assumptions"`
}

// NICRate is one interface's line rate.
type NICRate struct {
	Name   string `json:"name"`
	Driver string `json:"driver,omitempty"`
	// SpeedBps is the line rate; 0 when unknown (Unknown says why).
	SpeedBps int64 `json:"speed_bps,omitempty"`
	// SpeedFrom is "link" (negotiated) or "supported modes" (the fastest
	// mode the NIC supports, when no link is up).
	SpeedFrom string `json:"speed_from,omitempty"`
	Unknown   string `json:"unknown,omitempty"`
	MTU       int    `json:"mtu"`
	// Full is the line rate in full-size frames at the MTU; Small in
	// 64-byte frames. Both nil when the speed is unknown.
	Full  *Rate `json:"full,omitempty"`
	Small *Rate `json:"small,omitempty"`
	// PCIAddr and Group (the ID of its bus group) are empty when the NIC is
	// not on PCIe; NotPCIe then says so.
	PCIAddr string `json:"pci_addr,omitempty"`
	Group   string `json:"group,omitempty"`
	NotPCIe string `json:"not_pcie,omitempty"`
}

// Group is NICs that share a PCIe link, and that link's ceiling.
type Group struct {
	// ID is the root port the NICs sit under (or the NIC's own address
	// when no path is known).
	ID   string   `json:"id"`
	NICs []string `json:"nics"`
	// Bottleneck names the narrowest, slowest link all of them cross, as
	// "UPPER > LOWER" addresses; Link is how it runs now and MaxLink the
	// best both its ends support.
	Bottleneck string `json:"bottleneck,omitempty"`
	Link       *Link  `json:"link,omitempty"`
	MaxLink    *Link  `json:"max_link,omitempty"`
	// MPS is the smallest Max Payload Size set on the path; MPSSupported
	// the smallest supported, which pci=pcie_bus_perf would set. MRRS is
	// the smallest Max Read Request Size of the NICs.
	MPS          int `json:"mps,omitempty"`
	MPSSupported int `json:"mps_supported,omitempty"`
	MRRS         int `json:"mrrs,omitempty"`
	// Frame is the full-size frame of the largest MTU in the group.
	Frame Frame `json:"frame"`
	// Full is the bus ceiling in those frames, Small in 64-byte frames;
	// nil when Unknown says why there is none.
	Full  *BusCeiling `json:"full,omitempty"`
	Small *BusCeiling `json:"small,omitempty"`
	// TCP is an iperf-style TCP stream into the box at that MTU (its ACKs
	// going out over the same link): the goodput iperf would show.
	TCP *Figure `json:"tcp_receive,omitempty"`
	// PortsBps is the sum of the known line rates of the group's NICs.
	PortsBps int64    `json:"ports_bps"`
	Unknown  string   `json:"unknown,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// goodputHeaders is what the box report counts as goodput: TCP over IPv4
// with timestamps, as Linux sends it.
var goodputHeaders = Headers{Proto: TCP, TCPTimestamps: true}

// Assumptions behind every box report.
var boxAssumptions = []string{
	"full-size frames at each NIC's MTU; goodput is TCP/IPv4 payload with timestamps (the Linux default)",
	"bus ceilings use the DMA of Intel's igb driver (16-byte descriptors, fetched 8 and written back 4 at a time) and 64-bit DMA addresses (4 DW TLP headers)",
	"receive = every port takes frames in at once; transmit = every port sends at once; each direction of a PCIe link is counted on its own",
}

// ForBox works out each NIC's line rate, groups the NICs that share a PCIe
// link, and gives each group's bus ceiling with warnings when the ports can
// outrun it.
func ForBox(b *box.Box) Report {
	r := Report{Assumptions: append([]string(nil), boxAssumptions...)}
	if b == nil {
		return r
	}
	r.Host, r.Source = b.Meta.Host, b.Meta.Source
	groups := map[string]*Group{}
	paths := map[string][][]string{}
	var order []string
	for i := range b.NICs {
		n := &b.NICs[i]
		if n.Kind == box.KindLoopback || n.Name == "lo" {
			continue
		}
		nr := nicRate(n)
		switch {
		case n.PCIAddr == "":
			nr.NotPCIe = "not on PCIe"
			if n.Kind != "" && n.Kind != box.KindPhysical {
				nr.NotPCIe += " (" + string(n.Kind) + ")"
			}
		default:
			id := n.PCIAddr
			if len(n.PCIePath) > 0 {
				id = n.PCIePath[len(n.PCIePath)-1]
			}
			nr.Group = id
			g := groups[id]
			if g == nil {
				g = &Group{ID: id}
				groups[id] = g
				order = append(order, id)
			}
			g.NICs = append(g.NICs, n.Name)
			g.PortsBps += nr.SpeedBps
			if nr.SpeedBps == 0 {
				g.Notes = append(g.Notes, fmt.Sprintf("%s: line rate unknown (%s), not counted in the ports' total", n.Name, nr.Unknown))
			}
			if nr.MTU > g.Frame.Bytes-HeaderBytes-FCSBytes {
				g.Frame = fullFrame(nr.MTU)
			}
			path := n.PCIePath
			if len(path) == 0 {
				path = []string{n.PCIAddr}
			}
			paths[id] = append(paths[id], path)
		}
		r.NICs = append(r.NICs, nr)
	}
	sort.Strings(order)
	for _, id := range order {
		g := groups[id]
		fillGroup(b, g, paths[id])
		r.Groups = append(r.Groups, *g)
	}
	return r
}

// fullFrame is the full-size frame of an MTU, or of 1500 when the MTU is
// missing or out of range.
func fullFrame(mtu int) Frame {
	f, err := MTUFrame(mtu, goodputHeaders)
	if err != nil {
		f, _ = MTUFrame(1500, goodputHeaders)
	}
	return f
}

func nicRate(n *box.NIC) NICRate {
	nr := NICRate{Name: n.Name, MTU: n.MTU, PCIAddr: n.PCIAddr}
	if n.Driver != nil {
		nr.Driver = n.Driver.Driver
	}
	switch {
	case n.Link != nil && n.Link.SpeedMbps > 0:
		nr.SpeedBps, nr.SpeedFrom = int64(n.Link.SpeedMbps)*1e6, "link"
	case n.Link != nil && bestMode(n.Link.Supported) > 0:
		nr.SpeedBps, nr.SpeedFrom = int64(bestMode(n.Link.Supported))*1e6, "supported modes"
	case n.Link != nil:
		nr.Unknown = "the driver reports no speed and no supported link modes"
	default:
		nr.Unknown = "link settings not read"
		if why := n.Unsupported["link"]; why != "" {
			nr.Unknown = "link settings: " + why
		}
	}
	if nr.SpeedBps > 0 {
		full := LineRate(nr.SpeedBps, fullFrame(n.MTU))
		small, _ := RawFrame(MinFrameBytes)
		sr := LineRate(nr.SpeedBps, small)
		nr.Full, nr.Small = &full, &sr
	}
	return nr
}

// bestMode is the fastest of ethtool link modes such as "1000baseT/Full"
// or "2500baseT/Full", in Mb/s; 0 when none parses.
func bestMode(modes []string) int {
	best := 0
	for _, m := range modes {
		i := strings.Index(m, "base")
		if i <= 0 {
			continue
		}
		if v, err := strconv.Atoi(m[:i]); err == nil && v > best {
			best = v
		}
	}
	return best
}

// pcieLink is one link on a path: between an upper device (root or switch
// port) and the device (all functions of it) below.
type pcieLink struct {
	key          string // "UPPER > BUS:DEV"
	cur, max     Link
	curOK, maxOK bool
	why          string
	upper, lower string
	lowerMax     Link
	upperMax     Link
}

func devSlot(addr string) string {
	if i := strings.LastIndexByte(addr, '.'); i > 0 {
		return addr[:i]
	}
	return addr
}

func linkOf(b *box.Box, upper, lower string) pcieLink {
	l := pcieLink{key: upper + " > " + devSlot(lower), upper: upper, lower: lower}
	lo, _ := b.PCIeDev(lower)
	up, _ := b.PCIeDev(upper)
	// Both ends describe the link in their Link Status register; take the
	// lower end's word first (the endpoint's, or the switch's upstream port's).
	for _, d := range []*box.PCIeDevice{lo, up} {
		if d == nil || d.CurSpeedGTs == 0 || d.CurWidth == 0 {
			continue
		}
		if c, err := LinkFromGTs(d.CurSpeedGTs, d.CurWidth); err == nil {
			l.cur, l.curOK = c, true
			break
		} else if l.why == "" {
			l.why = fmt.Sprintf("%s: %v", d.Addr, err)
		}
	}
	if !l.curOK && l.why == "" {
		l.why = "current link speed and width of " + lower + " not known"
		for _, d := range []*box.PCIeDevice{lo, up} {
			if d != nil {
				for _, k := range []string{"link", "current_link_speed", "config"} {
					if why := d.Unsupported[k]; why != "" {
						l.why += " (" + why + ")"
						break
					}
				}
			}
		}
	}
	// The best the link could do is the lesser of what its two ends support.
	var ends []Link
	for i, d := range []*box.PCIeDevice{lo, up} {
		if d == nil || d.MaxSpeedGTs == 0 || d.MaxWidth == 0 {
			continue
		}
		m, err := LinkFromGTs(d.MaxSpeedGTs, d.MaxWidth)
		if err != nil {
			continue
		}
		if i == 0 {
			l.lowerMax = m
		} else {
			l.upperMax = m
		}
		ends = append(ends, m)
	}
	if len(ends) > 0 {
		l.max, l.maxOK = ends[0], true
		for _, e := range ends[1:] {
			l.max.Gen = min(l.max.Gen, e.Gen)
			l.max.Lanes = min(l.max.Lanes, e.Lanes)
		}
	}
	return l
}

func pathLinks(b *box.Box, path []string) []pcieLink {
	var out []pcieLink
	for i := 0; i+1 < len(path); i++ {
		out = append(out, linkOf(b, path[i+1], path[i]))
	}
	return out
}

func fillGroup(b *box.Box, g *Group, paths [][]string) {
	// Links every NIC in the group crosses, and every link any crosses.
	count := map[string]int{}
	all := map[string]pcieLink{}
	var allOrder []string
	for _, p := range paths {
		seen := map[string]bool{}
		for _, l := range pathLinks(b, p) {
			if seen[l.key] {
				continue
			}
			seen[l.key] = true
			count[l.key]++
			if _, ok := all[l.key]; !ok {
				all[l.key] = l
				allOrder = append(allOrder, l.key)
			}
		}
	}
	var shared []pcieLink
	for _, k := range allOrder {
		if count[k] == len(paths) {
			shared = append(shared, all[k])
		}
	}
	for _, k := range allOrder {
		if n := linkNote(all[k]); n != "" {
			g.Notes = append(g.Notes, n)
		}
	}

	// MPS and MRRS along the paths.
	mps, sup, mrrs := 0, 0, 0
	nics := map[string]bool{}
	for _, p := range paths {
		nics[p[0]] = true
		for _, a := range p {
			d, ok := b.PCIeDev(a)
			if !ok {
				continue
			}
			if d.MPS > 0 && (mps == 0 || d.MPS < mps) {
				mps = d.MPS
			}
			if d.MPSSupported > 0 && (sup == 0 || d.MPSSupported < sup) {
				sup = d.MPSSupported
			}
			if nics[a] && d.MRRS > 0 && (mrrs == 0 || d.MRRS < mrrs) {
				mrrs = d.MRRS
			}
		}
	}
	g.MPS, g.MPSSupported, g.MRRS = mps, sup, mrrs
	if g.Frame.Bytes == 0 {
		g.Frame = fullFrame(1500)
	}

	if len(shared) == 0 {
		g.Unknown = "no PCIe link above " + paths[0][0] + " is known: it sits directly on a root bus"
		if d, ok := b.PCIeDev(paths[0][0]); ok {
			for _, k := range []string{"mps", "link"} {
				if why := d.Unsupported[k]; why != "" {
					g.Unknown += " (" + why + ")"
					break
				}
			}
		}
		return
	}
	var bott *pcieLink
	for i := range shared {
		l := &shared[i]
		if !l.curOK {
			g.Unknown = l.why
			return
		}
		if bott == nil || l.cur.RawBps() < bott.cur.RawBps() {
			bott = l
		}
	}
	g.Bottleneck = bott.key
	cur := bott.cur
	g.Link = &cur
	if bott.maxOK {
		m := bott.max
		g.MaxLink = &m
	}
	bus := Bus{Link: cur, MPS: mps, MRRS: mrrs}
	if bus.MPS == 0 {
		bus.MPS = 128
		g.Notes = append(g.Notes, "Max Payload Size not known (reading PCI config space needs root): assumed 128, the reset value")
	}
	if bus.MRRS == 0 {
		bus.MRRS = DefaultMRRS
		g.Notes = append(g.Notes, fmt.Sprintf("Max Read Request Size not known: assumed %d, the reset value", DefaultMRRS))
	}
	full, err := bus.Ceiling(DefaultDMA, g.Frame)
	if err != nil {
		g.Unknown = err.Error()
		return
	}
	small, _ := RawFrame(MinFrameBytes)
	sc, err := bus.Ceiling(DefaultDMA, small)
	if err != nil {
		g.Unknown = err.Error()
		return
	}
	g.Full, g.Small = &full, &sc
	if tcp, err := bus.TCPReceive(DefaultDMA, g.Frame.Bytes-HeaderBytes-FCSBytes); err == nil {
		g.TCP = &tcp
	}

	names := strings.Join(g.NICs, ", ")
	where := fmt.Sprintf("PCIe %s at %s, MPS %d", shortLink(cur), bott.key, bus.MPS)
	if g.PortsBps > 0 {
		for _, f := range []Figure{full.Receive, full.Transmit} {
			if float64(g.PortsBps) <= f.LineBps {
				continue
			}
			m := fmt.Sprintf("%s can %s %s together, but their %s carries about %s of %d-byte frames",
				names, verb(f.Pattern), units.Bps(float64(g.PortsBps)), where, units.Bps(f.LineBps), g.Frame.Bytes)
			if f.Pattern == string(Receive) && g.TCP != nil {
				m += fmt.Sprintf(" (iperf TCP into the box: about %s)", units.Bps(g.TCP.GoodputBps))
			}
			g.Warnings = append(g.Warnings, m+": the bus is the ceiling, not the ports")
		}
		if fr := full.Receive; float64(g.PortsBps) <= fr.LineBps && float64(g.PortsBps) > sc.Receive.LineBps {
			g.Notes = append(g.Notes, fmt.Sprintf("in 64-byte frames the bus takes %s frames/s, short of the %s the ports can receive",
				units.Count(sc.Receive.FPS), units.Count(float64(g.PortsBps)/float64(8*(MinFrameBytes+WireExtraBytes)))))
		}
	}
	if sup > mps && mps > 0 {
		note := fmt.Sprintf("MPS is %d but every device on the path supports %d: booting with pci=pcie_bus_perf would set %d", mps, sup, sup)
		up := bus
		up.MPS = sup
		if c, err := up.Ceiling(DefaultDMA, g.Frame); err == nil {
			note += fmt.Sprintf(" (receive ceiling %s → %s)", units.Bps(full.Receive.LineBps), units.Bps(c.Receive.LineBps))
		}
		g.Notes = append(g.Notes, note)
	}
}

// linkNote says when a link runs below what it could.
func linkNote(l pcieLink) string {
	if !l.curOK || !l.maxOK {
		return ""
	}
	c, m := l.cur, l.max
	if c.Gen < m.Gen || c.Lanes < m.Lanes {
		return fmt.Sprintf("link %s runs at %s, below the %s both ends support: a degraded link (riser, cable, power saving); lspci -vv shows it as LnkSta \"downgraded\"",
			l.key, shortLink(c), shortLink(m))
	}
	for _, e := range []struct {
		addr, other string
		max         Link
	}{{l.lower, l.upper, l.lowerMax}, {l.upper, l.lower, l.upperMax}} {
		if e.max.Gen > c.Gen || e.max.Lanes > c.Lanes {
			return fmt.Sprintf("%s supports %s but its link runs at %s: %s (or the slot between them) allows no more",
				e.addr, shortLink(e.max), shortLink(c), e.other)
		}
	}
	return ""
}

func shortLink(l Link) string {
	return fmt.Sprintf("Gen%d x%d (%g GT/s)", l.Gen, l.Lanes, l.GTs())
}

func verb(pattern string) string {
	if pattern == string(Transmit) {
		return "send"
	}
	return "receive"
}
