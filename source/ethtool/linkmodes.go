package ethtool

import (
	"fmt"
	"strings"
)

// Link-mode bits that are not speeds (enum ethtool_link_mode_bit_indices in
// include/uapi/linux/ethtool.h). ethtool sorts the bits of a link-mode
// bitmap into these classes the same way (netlink/settings.c).
const (
	bitAutoneg   = 6
	bitPause     = 13
	bitAsymPause = 14
)

var portBits = map[int]bool{7: true, 8: true, 9: true, 10: true, 11: true, 16: true} // TP AUI MII FIBRE BNC Backplane
var fecBits = map[int]bool{49: true, 50: true, 51: true, 74: true}                   // None RS BASER LLRS

// legacyLinkModes names bits 0-31, the only ones older kernels (without the
// ETH_SS_LINK_MODES string set) can report; names as the kernel's
// link_mode_names.
var legacyLinkModes = []string{
	"10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full",
	"1000baseT/Half", "1000baseT/Full", "Autoneg", "TP", "AUI", "MII",
	"FIBRE", "BNC", "10000baseT/Full", "Pause", "Asym_Pause",
	"2500baseX/Full", "Backplane", "1000baseKX/Full", "10000baseKX4/Full",
	"10000baseKR/Full", "10000baseR_FEC", "20000baseMLD2/Full",
	"20000baseKR2/Full", "40000baseKR4/Full", "40000baseCR4/Full",
	"40000baseSR4/Full", "40000baseLR4/Full", "56000baseKR4/Full",
	"56000baseCR4/Full", "56000baseSR4/Full", "56000baseLR4/Full",
	"25000baseCR/Full",
}

// Names ethtool prints for enum values (netlink/settings.c).
var portNames = map[uint8]string{
	0x00: "Twisted Pair", 0x01: "AUI", 0x02: "MII", 0x03: "FIBRE", 0x04: "BNC",
	0x05: "Direct Attach Copper", 0xef: "None", 0xff: "Other",
}

const portTP = 0x00

// Values of eth_tp_mdix and eth_tp_mdix_ctrl (ETH_TP_MDI_*).
const (
	mdiInvalid = 0
	mdiOff     = 1 // ETH_TP_MDI
	mdiX       = 2 // ETH_TP_MDI_X
	mdiAuto    = 3
)

func bitSet(words []uint32, i int) bool {
	return i/32 < len(words) && words[i/32]&(1<<(i%32)) != 0
}

// modeName names bit i as ethtool would: the kernel's string, or "BITn".
func modeName(names []string, i int) string {
	if i < len(names) && names[i] != "" {
		return names[i]
	}
	return fmt.Sprintf("BIT%d", i)
}

// speedModes lists the speed/duplex modes set in words, in bit order.
func speedModes(words []uint32, names []string) []string {
	var out []string
	for i := 0; i < 32*len(words); i++ {
		if bitSet(words, i) && !portBits[i] && !fecBits[i] && i != bitAutoneg && i != bitPause && i != bitAsymPause {
			out = append(out, modeName(names, i))
		}
	}
	return out
}

func classModes(words []uint32, names []string, class map[int]bool) []string {
	var out []string
	for i := 0; i < 32*len(words); i++ {
		if bitSet(words, i) && class[i] {
			out = append(out, modeName(names, i))
		}
	}
	return out
}

// pauseText is how ethtool prints the Pause and Asym_Pause bits.
func pauseText(words []uint32) string {
	pause, asym := bitSet(words, bitPause), bitSet(words, bitAsymPause)
	switch {
	case pause && asym:
		return "Symmetric Receive-only"
	case pause:
		return "Symmetric"
	case asym:
		return "Transmit-only"
	}
	return "No"
}

func enumText(names map[uint8]string, v uint8) string {
	if s, ok := names[v]; ok {
		return s
	}
	return fmt.Sprintf("Unknown! (%d)", v)
}

// mdixText is the "MDI-X:" value ethtool prints (common.c dump_mdix).
func mdixText(mdix, ctrl uint8) string {
	switch ctrl {
	case mdiOff:
		return "off (forced)"
	case mdiX:
		return "on (forced)"
	}
	s := "Unknown"
	switch mdix {
	case mdiOff:
		s = "off"
	case mdiX:
		s = "on"
	}
	if ctrl == mdiAuto {
		s += " (auto)"
	}
	return s
}

// decodeLink names the bits of r. names are the kernel's link-mode strings
// by bit (nil for the legacy table).
func decodeLink(r rawLink, names []string) LinkInfo {
	if names == nil {
		names = legacyLinkModes
	}
	li := LinkInfo{
		Autoneg:           r.autoneg != 0,
		Port:              enumText(portNames, r.port),
		Supported:         speedModes(r.supported, names),
		Advertised:        speedModes(r.advertising, names),
		Ports:             classModes(r.supported, names, portBits),
		SupportedPause:    pauseText(r.supported),
		AdvertisedPause:   pauseText(r.advertising),
		SupportsAutoneg:   bitSet(r.supported, bitAutoneg),
		AdvertisedAutoneg: bitSet(r.advertising, bitAutoneg),
		SupportedFEC:      classModes(r.supported, names, fecBits),
		AdvertisedFEC:     classModes(r.advertising, names, fecBits),
		PHYAD:             int(r.phyad),
		Transceiver:       enumText(map[uint8]string{0: "internal", 1: "external"}, r.xcvr),
	}
	// ethtool prints Unknown! for 0, (u16)-1 and (u32)-1.
	if r.speed != 0 && r.speed != 0xffff && r.speed != 0xffffffff {
		li.SpeedMbps = int(r.speed)
	}
	switch r.duplex {
	case 0:
		li.Duplex = "Half"
	case 1:
		li.Duplex = "Full"
	default:
		li.Duplex = "Unknown"
	}
	// The kernel reports the partner only when it advertised something.
	for _, w := range r.lpAdvertising {
		if w != 0 {
			li.Partner = speedModes(r.lpAdvertising, names)
			li.PartnerPause = pauseText(r.lpAdvertising)
			li.PartnerAutoneg = bitSet(r.lpAdvertising, bitAutoneg)
			li.PartnerFEC = classModes(r.lpAdvertising, names, fecBits)
			break
		}
	}
	if r.port == portTP {
		li.MDIX = mdixText(r.mdix, r.mdixCtrl)
	}
	return li
}

// sameSpeedLine reports whether ethtool prints mode next after prev on the
// same line: it does so only for the Full mode right after the Half mode of
// the same speed ("10baseT/Half 10baseT/Full").
func sameSpeedLine(prev, mode string) bool {
	p, ok := strings.CutSuffix(prev, "/Half")
	if !ok {
		return false
	}
	m, ok := strings.CutSuffix(mode, "/Full")
	return ok && m == p
}
