package ethtool

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// The Render functions print values as the ethtool command (version 6.1,
// whose netlink code paths they follow) prints them, so that a capture
// written without the ethtool binary reads back through the Parse functions
// exactly as one written with it. Lines ethtool prints from facts linerate
// does not model (wake-on-LAN, message level, rings' "RX Buf Len", "TX
// Push", ...) are left out; the parsers skip them.

// naZero prints a value the netlink ethtool shows as "n/a" when the driver
// has no such ring or channel (maximum 0).
func naZero(max, v uint32) (string, string) {
	if max == 0 {
		return "n/a", "n/a"
	}
	return fmt.Sprint(max), fmt.Sprint(v)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// RenderError prints what ethtool prints when it cannot read an item: the
// unsupported case reads back as ErrNotSupported.
func RenderError(err error) string {
	if errors.Is(err, ErrNotSupported) {
		return "Operation not supported\n"
	}
	return "ethtool failed: " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n"
}

// RenderDriverInfo prints `ethtool -i IFACE`.
func RenderDriverInfo(iface string, d DriverInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "driver: %s\n", d.Driver)
	fmt.Fprintf(&b, "version: %s\n", d.Version)
	fmt.Fprintf(&b, "firmware-version: %s\n", d.Firmware)
	fmt.Fprintf(&b, "expansion-rom-version: %s\n", d.ExpansionROM)
	fmt.Fprintf(&b, "bus-info: %s\n", d.BusInfo)
	fmt.Fprintf(&b, "supports-statistics: %s\n", yesNo(d.SupportsStatistics))
	fmt.Fprintf(&b, "supports-test: %s\n", yesNo(d.SupportsTest))
	fmt.Fprintf(&b, "supports-eeprom-access: %s\n", yesNo(d.SupportsEEPROM))
	fmt.Fprintf(&b, "supports-register-dump: %s\n", yesNo(d.SupportsRegisterDump))
	fmt.Fprintf(&b, "supports-priv-flags: %s\n", yesNo(d.SupportsPrivFlags))
	return b.String()
}

// modeList prints a list of link modes after a label the way ethtool
// wraps them: one speed per line, aligned under the first.
func modeList(b *strings.Builder, label string, modes []string) {
	b.WriteString("\t" + label)
	if len(modes) == 0 {
		b.WriteString("Not reported\n")
		return
	}
	for i, m := range modes {
		switch {
		case i == 0:
		case sameSpeedLine(modes[i-1], m):
			b.WriteByte(' ')
		default:
			b.WriteString("\n\t" + strings.Repeat(" ", len(label)))
		}
		b.WriteString(m)
	}
	b.WriteByte('\n')
}

// wordList prints ports or FEC modes: ethtool separates them by a tab and
// a space.
func wordList(words []string, none string) string {
	if len(words) == 0 {
		return none
	}
	return strings.Join(words, "\t ")
}

// RenderLinkInfo prints `ethtool IFACE`.
func RenderLinkInfo(iface string, l LinkInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Settings for %s:\n", iface)
	if l.HasSettings() {
		fmt.Fprintf(&b, "\tSupported ports: [ %s ]\n", wordList(l.Ports, ""))
		modeList(&b, "Supported link modes:   ", l.Supported)
		fmt.Fprintf(&b, "\tSupported pause frame use: %s\n", orNo(l.SupportedPause))
		fmt.Fprintf(&b, "\tSupports auto-negotiation: %s\n", yesNoCap(l.SupportsAutoneg))
		fmt.Fprintf(&b, "\tSupported FEC modes: %s\n", wordList(l.SupportedFEC, "Not reported"))
		modeList(&b, "Advertised link modes:  ", l.Advertised)
		fmt.Fprintf(&b, "\tAdvertised pause frame use: %s\n", orNo(l.AdvertisedPause))
		fmt.Fprintf(&b, "\tAdvertised auto-negotiation: %s\n", yesNoCap(l.AdvertisedAutoneg))
		fmt.Fprintf(&b, "\tAdvertised FEC modes: %s\n", wordList(l.AdvertisedFEC, "Not reported"))
		if l.PartnerPause != "" {
			modeList(&b, "Link partner advertised link modes:  ", l.Partner)
			fmt.Fprintf(&b, "\tLink partner advertised pause frame use: %s\n", l.PartnerPause)
			fmt.Fprintf(&b, "\tLink partner advertised auto-negotiation: %s\n", yesNoCap(l.PartnerAutoneg))
			fmt.Fprintf(&b, "\tLink partner advertised FEC modes: %s\n", wordList(l.PartnerFEC, "Not reported"))
		}
		if l.SpeedMbps > 0 {
			fmt.Fprintf(&b, "\tSpeed: %dMb/s\n", l.SpeedMbps)
		} else {
			b.WriteString("\tSpeed: Unknown!\n")
		}
		switch l.Duplex {
		case "Half", "Full":
			fmt.Fprintf(&b, "\tDuplex: %s\n", l.Duplex)
		default:
			b.WriteString("\tDuplex: Unknown! (255)\n")
		}
		fmt.Fprintf(&b, "\tAuto-negotiation: %s\n", onOff(l.Autoneg))
		fmt.Fprintf(&b, "\tPort: %s\n", l.Port)
		fmt.Fprintf(&b, "\tPHYAD: %d\n", l.PHYAD)
		if l.Transceiver != "" {
			fmt.Fprintf(&b, "\tTransceiver: %s\n", l.Transceiver)
		}
		if l.MDIX != "" {
			fmt.Fprintf(&b, "\tMDI-X: %s\n", l.MDIX)
		}
	}
	fmt.Fprintf(&b, "\tLink detected: %s\n", yesNo(l.Link))
	return b.String()
}

func orNo(s string) string {
	if s == "" {
		return "No"
	}
	return s
}

func yesNoCap(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

// RenderFeatures prints `ethtool -k IFACE`.
func RenderFeatures(iface string, fs Features) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Features for %s:\n", iface)
	for i, f := range fs {
		if f.Parent != "" {
			b.WriteByte('\t')
		}
		fmt.Fprintf(&b, "%s: %s", f.Name, onOff(f.On))
		group := i+1 < len(fs) && fs[i+1].Parent == f.Name && f.Parent == ""
		switch {
		case group:
		case f.Fixed:
			b.WriteString(" [fixed]")
		case f.Requested != "":
			fmt.Fprintf(&b, " [requested %s]", f.Requested)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// RenderRings prints `ethtool -g IFACE`.
func RenderRings(iface string, r Rings) string {
	var b strings.Builder
	rxMax, rx := naZero(r.RXMax, r.RX)
	miniMax, mini := naZero(r.RXMiniMax, r.RXMini)
	jumboMax, jumbo := naZero(r.RXJumboMax, r.RXJumbo)
	txMax, tx := naZero(r.TXMax, r.TX)
	fmt.Fprintf(&b, "Ring parameters for %s:\n", iface)
	fmt.Fprintf(&b, "Pre-set maximums:\nRX:\t\t%s\nRX Mini:\t%s\nRX Jumbo:\t%s\nTX:\t\t%s\n", rxMax, miniMax, jumboMax, txMax)
	fmt.Fprintf(&b, "Current hardware settings:\nRX:\t\t%s\nRX Mini:\t%s\nRX Jumbo:\t%s\nTX:\t\t%s\n", rx, mini, jumbo, tx)
	return b.String()
}

// RenderChannels prints `ethtool -l IFACE`.
func RenderChannels(iface string, c Channels) string {
	var b strings.Builder
	rxMax, rx := naZero(c.MaxRX, c.RX)
	txMax, tx := naZero(c.MaxTX, c.TX)
	otherMax, other := naZero(c.MaxOther, c.Other)
	combMax, comb := naZero(c.MaxCombined, c.Combined)
	fmt.Fprintf(&b, "Channel parameters for %s:\n", iface)
	fmt.Fprintf(&b, "Pre-set maximums:\nRX:\t\t%s\nTX:\t\t%s\nOther:\t\t%s\nCombined:\t%s\n", rxMax, txMax, otherMax, combMax)
	fmt.Fprintf(&b, "Current hardware settings:\nRX:\t\t%s\nTX:\t\t%s\nOther:\t\t%s\nCombined:\t%s\n", rx, tx, other, comb)
	return b.String()
}

// coalesceLabel is the label ethtool 6.1 prints for a parameter: its
// netlink code says "frame" where the option and the ioctl code say
// "frames" for the -low and -high parameters.
func coalesceLabel(name string) string {
	for _, s := range []string{"-low", "-high"} {
		if strings.HasSuffix(name, "-frames"+s) {
			return strings.TrimSuffix(name, "s"+s) + s
		}
	}
	return name
}

// RenderCoalesce prints `ethtool -c IFACE`; parameters absent from
// c.Params print as n/a.
func RenderCoalesce(iface string, c Coalesce) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Coalesce parameters for %s:\n", iface)
	fmt.Fprintf(&b, "Adaptive RX: %s  TX: %s\n", onOff(c.AdaptiveRX), onOff(c.AdaptiveTX))
	for i, name := range CoalesceParams {
		if i > 0 && i%4 == 0 {
			b.WriteByte('\n')
		}
		v, ok := c.Params[name]
		if ok {
			fmt.Fprintf(&b, "%s: %d\n", coalesceLabel(name), v)
		} else {
			fmt.Fprintf(&b, "%s: n/a\n", coalesceLabel(name))
		}
	}
	b.WriteString("\nCQE mode RX: n/a  TX: n/a\n\n")
	return b.String()
}

// hashFuncOrder is the kernel's order of ETH_SS_RSS_HASH_FUNCS.
var hashFuncOrder = []string{"toeplitz", "xor", "crc32"}

// RenderRSS prints `ethtool -x IFACE`.
func RenderRSS(iface string, r RSS) string {
	var b strings.Builder
	fmt.Fprintf(&b, "RX flow hash indirection table for %s with %d RX ring(s):\n", iface, r.RXRings)
	if len(r.Indirection) == 0 {
		b.WriteString("Operation not supported\n")
	}
	for i, q := range r.Indirection {
		if i%8 == 0 {
			fmt.Fprintf(&b, "%5d: ", i)
		}
		fmt.Fprintf(&b, " %5d", q)
		if i%8 == 7 || i == len(r.Indirection)-1 {
			b.WriteByte('\n')
		}
	}
	b.WriteString("RSS hash key:\n")
	if len(r.Key) == 0 {
		b.WriteString("Operation not supported\n")
	} else {
		hex := make([]string, len(r.Key))
		for i, k := range r.Key {
			hex[i] = fmt.Sprintf("%02x", k)
		}
		b.WriteString(strings.Join(hex, ":") + "\n")
	}
	b.WriteString("RSS hash function:\n")
	if len(r.HashFuncs) == 0 {
		b.WriteString("    Operation not supported\n")
		return b.String()
	}
	names := append([]string(nil), hashFuncOrder...)
	var extra []string
	for n := range r.HashFuncs {
		if !contains(hashFuncOrder, n) {
			extra = append(extra, n)
		}
	}
	sort.Strings(extra)
	for _, n := range append(names, extra...) {
		if on, ok := r.HashFuncs[n]; ok {
			fmt.Fprintf(&b, "    %s: %s\n", n, onOff(on))
		}
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// flowTitle is how ethtool names a flow type in `ethtool -n`.
var flowTitle = map[FlowType]string{
	TCP4: "TCP over IPV4 flows",
	UDP4: "UDP over IPV4 flows",
	TCP6: "TCP over IPV6 flows",
	UDP6: "UDP over IPV6 flows",
}

// RenderFlowHash prints `ethtool -n IFACE rx-flow-hash FT`.
func RenderFlowHash(iface string, ft FlowType, h FlowHash) string {
	title := flowTitle[ft]
	if title == "" {
		title = string(ft) + " flows"
	}
	if h&HashDiscard != 0 {
		return title + " - All matching flows discarded on RX\n"
	}
	lines := h.Lines()
	if len(lines) == 0 {
		lines = []string{"None"}
	}
	return title + " use these fields for computing Hash flow key:\n" + strings.Join(lines, "\n") + "\n"
}

// RenderStats prints `ethtool -S IFACE`; no statistics print as ethtool's
// "no stats available", which reads back as ErrNotSupported.
func RenderStats(iface string, s Stats) string {
	if len(s) == 0 {
		return "no stats available\n"
	}
	var b strings.Builder
	b.WriteString("NIC statistics:\n")
	for _, st := range s {
		fmt.Fprintf(&b, "     %s: %d\n", st.Name, st.Value)
	}
	return b.String()
}
