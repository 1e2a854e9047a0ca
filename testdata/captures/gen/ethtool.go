package main

import (
	"fmt"
	"strings"
)

// The renderers below print what the ethtool of these boxes prints over the
// ioctl interface (ethtool 4.19 on Raspberry Pi OS buster, 5.4 on Ubuntu
// 20.04: the same text for these commands). The seed's enp4s0 output is the
// reference for the layout of -c, -g, -l, -x and -n. When the driver lacks an
// operation, ethtool prints its header line (if any) on stdout and a perror
// line on stderr; the file holds both, as a terminal shows them.

// drvinfo is `ethtool -i`.
type drvinfo struct {
	driver, version, firmware, bus         string
	stats, test, eeprom, regdump, privflag bool
}

func yn(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (d drvinfo) text() string {
	return fmt.Sprintf("driver: %s\nversion: %s\nfirmware-version: %s\nexpansion-rom-version: \nbus-info: %s\n"+
		"supports-statistics: %s\nsupports-test: %s\nsupports-eeprom-access: %s\nsupports-register-dump: %s\nsupports-priv-flags: %s\n",
		d.driver, d.version, d.firmware, d.bus, yn(d.stats), yn(d.test), yn(d.eeprom), yn(d.regdump), yn(d.privflag))
}

// coalesceText is `ethtool -c` (ethtool.c dump_coalesce).
func coalesceText(iface string, adaptiveRX, adaptiveTX bool, p map[string]uint32) string {
	onoff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	var s strings.Builder
	fmt.Fprintf(&s, "Coalesce parameters for %s:\n", iface)
	fmt.Fprintf(&s, "Adaptive RX: %s  TX: %s\n", onoff(adaptiveRX), onoff(adaptiveTX))
	groups := [][]string{
		{"stats-block-usecs", "sample-interval", "pkt-rate-low", "pkt-rate-high"},
		{"rx-usecs", "rx-frames", "rx-usecs-irq", "rx-frames-irq"},
		{"tx-usecs", "tx-frames", "tx-usecs-irq", "tx-frames-irq"},
		{"rx-usecs-low", "rx-frames-low", "tx-usecs-low", "tx-frames-low"},
		{"rx-usecs-high", "rx-frames-high", "tx-usecs-high", "tx-frames-high"},
	}
	for i, g := range groups {
		if i > 0 {
			s.WriteString("\n")
		}
		for _, k := range g {
			fmt.Fprintf(&s, "%s: %d\n", k, p[k])
		}
	}
	s.WriteString("\n")
	return s.String()
}

// ringText is `ethtool -g`.
func ringText(iface string, rxMax, txMax, rx, tx uint32) string {
	return fmt.Sprintf("Ring parameters for %s:\nPre-set maximums:\nRX:\t\t%d\nRX Mini:\t0\nRX Jumbo:\t0\nTX:\t\t%d\n"+
		"Current hardware settings:\nRX:\t\t%d\nRX Mini:\t0\nRX Jumbo:\t0\nTX:\t\t%d\n\n", iface, rxMax, txMax, rx, tx)
}

// channelText is `ethtool -l`: maximums and current RX, TX, Other, Combined.
func channelText(iface string, max, cur [4]uint32) string {
	return fmt.Sprintf("Channel parameters for %s:\nPre-set maximums:\nRX:\t\t%d\nTX:\t\t%d\nOther:\t\t%d\nCombined:\t%d\n"+
		"Current hardware settings:\nRX:\t\t%d\nTX:\t\t%d\nOther:\t\t%d\nCombined:\t%d\n\n",
		iface, max[0], max[1], max[2], max[3], cur[0], cur[1], cur[2], cur[3])
}

// rssText is `ethtool -x` for a driver without a readable hash key.
func rssText(iface string, rings int, table []int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "RX flow hash indirection table for %s with %d RX ring(s):\n", iface, rings)
	for i, q := range table {
		if i%8 == 0 {
			fmt.Fprintf(&s, "%5d: ", i)
		}
		fmt.Fprintf(&s, " %5d", q)
		if i%8 == 7 {
			s.WriteString("\n")
		}
	}
	s.WriteString("RSS hash key:\nOperation not supported\nRSS hash function:\n    toeplitz: on\n    xor: off\n    crc32: off\n")
	return s.String()
}

// flowHashText is `ethtool -n IFACE rx-flow-hash FLOW` (ethtool.c dump_rxfhash).
func flowHashText(flow, letters string) string {
	names := map[string]string{
		"tcp4": "TCP over IPV4 flows", "udp4": "UDP over IPV4 flows",
		"tcp6": "TCP over IPV6 flows", "udp6": "UDP over IPV6 flows",
	}
	lines := map[byte]string{
		's': "IP SA", 'd': "IP DA",
		'f': "L4 bytes 0 & 1 [TCP/UDP src port]", 'n': "L4 bytes 2 & 3 [TCP/UDP dst port]",
	}
	var s strings.Builder
	s.WriteString(names[flow] + " use these fields for computing Hash flow key:\n")
	for i := 0; i < len(letters); i++ {
		s.WriteString(lines[letters[i]] + "\n")
	}
	s.WriteString("\n")
	return s.String()
}

// The error texts ethtool 4.19 / 5.4 print (perror adds ": " and strerror;
// 4.19's do_gchannels passes a message ending in a newline, hence the odd
// second line). The files hold both streams as `ethtool ... >FILE 2>&1`
// writes them: the unbuffered stderr line first, then the title line that
// waited in stdout's buffer until exit.
const (
	eopnotsupp       = "Operation not supported"
	ringUnsupported  = "Cannot get device ring settings: " + eopnotsupp + "\nRing parameters for %s:\n"
	chanUnsupported  = "Cannot get device channel parameters\n: " + eopnotsupp + "\nChannel parameters for %s:\n"
	rxRingsUnsupp    = "Cannot get RX rings: " + eopnotsupp + "\n"
	indirUnsupported = "Cannot get RX flow hash indirection table size: " + eopnotsupp + "\n"
	flowUnsupported  = "Cannot get RX network flow hashing options: " + eopnotsupp + "\n"
)

// linkText is `ethtool IFACE` for a twisted-pair gigabit port.
type linkText struct {
	ports, supported, advertised, partner []string
	pause                                 string // "Symmetric", "Symmetric Receive-only"
	partnerPause                          string
	speed, duplex, port                   string // "1000Mb/s", "Full", "Twisted Pair"
	phyad                                 int
	transceiver                           string
	mdix                                  string // "" when the driver does not report it
	wolSupported, wol                     string
	msglvl                                uint32
	msgNames                              string // "drv probe link"
	link                                  bool
}

var gigModes = []string{"10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Full"}
var gigModesHalf = []string{"10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Half", "1000baseT/Full"}

// modes prints link modes the way ethtool's dump_link_caps wraps them: a
// new line whenever the speed changes.
func modes(label string, m []string) string {
	var s strings.Builder
	width := 24
	if len(label)+2 > width {
		width = len(label) + 2
	}
	fmt.Fprintf(&s, "\t%-*s", width, label)
	if len(m) == 0 {
		s.WriteString("Not reported\n")
		return s.String()
	}
	prev := ""
	for i, x := range m {
		sp := x[:strings.IndexByte(x, 'b')]
		if i > 0 && sp != prev {
			s.WriteString("\n\t" + strings.Repeat(" ", width))
		}
		s.WriteString(x + " ")
		prev = sp
	}
	s.WriteString("\n")
	return s.String()
}

func (l linkText) text(iface string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "Settings for %s:\n", iface)
	fmt.Fprintf(&s, "\tSupported ports: [ %s ]\n", strings.Join(l.ports, " "))
	s.WriteString(modes("Supported link modes:", l.supported))
	fmt.Fprintf(&s, "\tSupported pause frame use: %s\n", l.pause)
	s.WriteString("\tSupports auto-negotiation: Yes\n\tSupported FEC modes: Not reported\n")
	s.WriteString(modes("Advertised link modes:", l.advertised))
	fmt.Fprintf(&s, "\tAdvertised pause frame use: %s\n", l.pause)
	s.WriteString("\tAdvertised auto-negotiation: Yes\n\tAdvertised FEC modes: Not reported\n")
	if len(l.partner) > 0 {
		s.WriteString(modes("Link partner advertised link modes:", l.partner))
		fmt.Fprintf(&s, "\tLink partner advertised pause frame use: %s\n", l.partnerPause)
		s.WriteString("\tLink partner advertised auto-negotiation: Yes\n\tLink partner advertised FEC modes: Not reported\n")
	}
	fmt.Fprintf(&s, "\tSpeed: %s\n\tDuplex: %s\n\tPort: %s\n\tPHYAD: %d\n\tTransceiver: %s\n\tAuto-negotiation: on\n",
		l.speed, l.duplex, l.port, l.phyad, l.transceiver)
	if l.mdix != "" {
		fmt.Fprintf(&s, "\tMDI-X: %s\n", l.mdix)
	}
	fmt.Fprintf(&s, "\tSupports Wake-on: %s\n\tWake-on: %s\n", l.wolSupported, l.wol)
	fmt.Fprintf(&s, "\tCurrent message level: 0x%08x (%d)\n\t\t\t       %s\n", l.msglvl, l.msglvl, l.msgNames)
	fmt.Fprintf(&s, "\tLink detected: %s\n", yn(l.link))
	return s.String()
}

// Feature names of netdev_features_strings, in feature-bit order, for the
// two kernel series (net/core/ethtool.c in 5.4, net/ethtool/common.c in
// 5.10). tx-gso-list and rx-gro-list arrived in 5.6, macsec-hw-offload in 5.7.
func kernelFeatures(kv int) []string {
	f := []string{
		"tx-scatter-gather", "tx-checksum-ipv4", "tx-checksum-ip-generic", "tx-checksum-ipv6",
		"highdma", "tx-scatter-gather-fraglist", "tx-vlan-hw-insert", "rx-vlan-hw-parse",
		"rx-vlan-filter", "vlan-challenged", "tx-generic-segmentation", "tx-lockless",
		"netns-local", "rx-gro", "rx-lro", "tx-tcp-segmentation", "tx-gso-robust",
		"tx-tcp-ecn-segmentation", "tx-tcp-mangleid-segmentation", "tx-tcp6-segmentation",
		"tx-fcoe-segmentation", "tx-gre-segmentation", "tx-gre-csum-segmentation",
		"tx-ipxip4-segmentation", "tx-ipxip6-segmentation", "tx-udp_tnl-segmentation",
		"tx-udp_tnl-csum-segmentation", "tx-gso-partial", "tx-tunnel-remcsum-segmentation",
		"tx-sctp-segmentation", "tx-esp-segmentation", "tx-udp-segmentation",
	}
	if kv >= 510 {
		f = append(f, "tx-gso-list")
	}
	f = append(f,
		"tx-checksum-fcoe-crc", "tx-checksum-sctp", "fcoe-mtu", "rx-ntuple-filter", "rx-hashing",
		"rx-checksum", "tx-nocache-copy", "loopback", "rx-fcs", "rx-all",
		"tx-vlan-stag-hw-insert", "rx-vlan-stag-hw-parse", "rx-vlan-stag-filter",
		"l2-fwd-offload", "hw-tc-offload", "esp-hw-offload", "esp-tx-csum-hw-offload",
		"rx-udp_tunnel-port-offload", "tls-hw-tx-offload", "tls-hw-rx-offload", "rx-gro-hw",
		"tls-hw-record")
	if kv >= 510 {
		f = append(f, "rx-gro-list", "macsec-hw-offload")
	}
	return f
}

// legacyFlags are ethtool's own names (off_flag_def) and the kernel
// features each one stands for; ethtool prints them first, each followed
// by its features when it stands for more than one, then every other
// feature in kernel order.
var legacyFlags = []struct {
	name  string
	match func(string) bool
}{
	{"rx-checksumming", func(f string) bool { return f == "rx-checksum" }},
	{"tx-checksumming", func(f string) bool { return strings.HasPrefix(f, "tx-checksum-") }},
	{"scatter-gather", func(f string) bool { return strings.HasPrefix(f, "tx-scatter-gather") }},
	{"tcp-segmentation-offload", func(f string) bool {
		return strings.HasPrefix(f, "tx-tcp") && strings.HasSuffix(f, "-segmentation")
	}},
	{"generic-segmentation-offload", func(f string) bool { return f == "tx-generic-segmentation" }},
	{"generic-receive-offload", func(f string) bool { return f == "rx-gro" }},
	{"large-receive-offload", func(f string) bool { return f == "rx-lro" }},
	{"rx-vlan-offload", func(f string) bool { return f == "rx-vlan-hw-parse" }},
	{"tx-vlan-offload", func(f string) bool { return f == "tx-vlan-hw-insert" }},
	{"ntuple-filters", func(f string) bool { return f == "rx-ntuple-filter" }},
	{"receive-hashing", func(f string) bool { return f == "rx-hashing" }},
}

// featuresText is `ethtool -k`: on is the set of active features, changeable
// the set the user may toggle (hw_features plus what the core adds at
// register_netdevice); everything else is printed "[fixed]".
func featuresText(iface string, kv int, on, changeable []string) string {
	isOn := map[string]bool{}
	for _, f := range on {
		isOn[f] = true
	}
	canChange := map[string]bool{}
	for _, f := range changeable {
		canChange[f] = true
	}
	state := func(f string) string {
		v := "off"
		if isOn[f] {
			v = "on"
		}
		if !canChange[f] {
			v += " [fixed]"
		}
		return v
	}
	all := kernelFeatures(kv)
	used := map[string]bool{}
	var s strings.Builder
	fmt.Fprintf(&s, "Features for %s:\n", iface)
	for _, lf := range legacyFlags {
		var m []string
		for _, f := range all {
			if lf.match(f) {
				m = append(m, f)
			}
		}
		anyOn, allFixed := false, true
		for _, f := range m {
			used[f] = true
			anyOn = anyOn || isOn[f]
			allFixed = allFixed && !canChange[f]
		}
		v := "off"
		if anyOn {
			v = "on"
		}
		if allFixed {
			v += " [fixed]"
		}
		fmt.Fprintf(&s, "%s: %s\n", lf.name, v)
		if len(m) > 1 {
			for _, f := range m {
				fmt.Fprintf(&s, "\t%s: %s\n", f, state(f))
			}
		}
	}
	for _, f := range all {
		if !used[f] {
			fmt.Fprintf(&s, "%s: %s\n", f, state(f))
		}
	}
	return s.String()
}

// softFeatures are what register_netdevice turns on or makes changeable for
// every device (NETIF_F_SOFT_FEATURES, and from 5.6 NETIF_F_GRO_FRAGLIST
// changeable but off; tx-nocache-copy changeable unless loopback).
func softFeatures(kv int) (on, changeable []string) {
	on = []string{"tx-generic-segmentation", "rx-gro"}
	changeable = []string{"tx-generic-segmentation", "rx-gro", "tx-nocache-copy"}
	if kv >= 510 {
		changeable = append(changeable, "rx-gro-list")
	}
	return on, changeable
}

func union(sets ...[]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range sets {
		for _, x := range s {
			if !seen[x] {
				seen[x] = true
				out = append(out, x)
			}
		}
	}
	return out
}
