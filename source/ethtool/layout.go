package ethtool

import (
	"bytes"
	"encoding/binary"
)

// This file holds the byte layouts of the SIOCETHTOOL structures linerate
// uses. Offsets come from the kernel's include/uapi/linux/ethtool.h (checked
// against the 6.1 header installed here, and a 6.17 one for the RSS, rxnfc
// and feature structures); every structure is encoded by hand with
// encoding/binary in native byte order, never by casting a Go struct, so the
// layout is written down once and tested.

// cmd is one ETHTOOL_* command: its number, its name for error messages,
// and whether EINVAL from the driver means "not supported" for it (drivers
// answer an unknown flow type that way).
type cmd struct {
	code              uint32
	name              string
	einvalUnsupported bool
}

// Command numbers from include/uapi/linux/ethtool.h.
var (
	cmdGSET          = cmd{0x01, "ETHTOOL_GSET", false}
	cmdGDRVINFO      = cmd{0x03, "ETHTOOL_GDRVINFO", false}
	cmdGLINK         = cmd{0x0a, "ETHTOOL_GLINK", false}
	cmdGCOALESCE     = cmd{0x0e, "ETHTOOL_GCOALESCE", false}
	cmdSCOALESCE     = cmd{0x0f, "ETHTOOL_SCOALESCE", false}
	cmdGRINGPARAM    = cmd{0x10, "ETHTOOL_GRINGPARAM", false}
	cmdSRINGPARAM    = cmd{0x11, "ETHTOOL_SRINGPARAM", false}
	cmdGSTRINGS      = cmd{0x1b, "ETHTOOL_GSTRINGS", false}
	cmdGSTATS        = cmd{0x1d, "ETHTOOL_GSTATS", false}
	cmdGRXFH         = cmd{0x29, "ETHTOOL_GRXFH", true}
	cmdSRXFH         = cmd{0x2a, "ETHTOOL_SRXFH", false}
	cmdGRXRINGS      = cmd{0x2d, "ETHTOOL_GRXRINGS", true}
	cmdGSSETINFO     = cmd{0x37, "ETHTOOL_GSSET_INFO", false}
	cmdGRXFHINDIR    = cmd{0x38, "ETHTOOL_GRXFHINDIR", false}
	cmdSRXFHINDIR    = cmd{0x39, "ETHTOOL_SRXFHINDIR", false}
	cmdGFEATURES     = cmd{0x3a, "ETHTOOL_GFEATURES", false}
	cmdSFEATURES     = cmd{0x3b, "ETHTOOL_SFEATURES", false}
	cmdGCHANNELS     = cmd{0x3c, "ETHTOOL_GCHANNELS", false}
	cmdSCHANNELS     = cmd{0x3d, "ETHTOOL_SCHANNELS", false}
	cmdGRSSH         = cmd{0x46, "ETHTOOL_GRSSH", false}
	cmdSRSSH         = cmd{0x47, "ETHTOOL_SRSSH", false}
	cmdGLINKSETTINGS = cmd{0x4c, "ETHTOOL_GLINKSETTINGS", false}
)

// String sets (enum ethtool_stringset).
const (
	ssStats         = 1
	ssFeatures      = 4
	ssRSSHashFuncs  = 5
	ssLinkModes     = 9
	gstringLen      = 32 // ETH_GSTRING_LEN
	ifNameSize      = 16 // IFNAMSIZ, with the terminating NUL
	rxnfcSize       = 192
	rxfhHeaderSize  = 24
	linkSettingsHdr = 48
)

var setNames = map[uint]string{
	ssStats: "ETH_SS_STATS", ssFeatures: "ETH_SS_FEATURES",
	ssRSSHashFuncs: "ETH_SS_RSS_HASH_FUNCS", ssLinkModes: "ETH_SS_LINK_MODES",
}

// Flow types of struct ethtool_rxnfc (TCP_V4_FLOW, ...).
var flowTypeCode = map[FlowType]uint32{TCP4: 1, UDP4: 2, TCP6: 5, UDP6: 6}

var ne = binary.NativeEndian

// u32s is a structure made only of __u32 fields (ethtool_ringparam,
// ethtool_channels, ethtool_coalesce, ethtool_value): field i is at 4*i.
type u32s []byte

func newU32s(n int, c cmd) u32s {
	b := make(u32s, 4*n)
	ne.PutUint32(b, c.code)
	return b
}

func (b u32s) get(i int) uint32    { return ne.Uint32(b[4*i:]) }
func (b u32s) set(i int, v uint32) { ne.PutUint32(b[4*i:], v) }

// struct ethtool_ringparam: cmd, rx_max_pending, rx_mini_max_pending,
// rx_jumbo_max_pending, tx_max_pending, rx_pending, rx_mini_pending,
// rx_jumbo_pending, tx_pending.
const ringFields = 9

func decodeRings(b u32s) Rings {
	return Rings{
		RXMax: b.get(1), RXMiniMax: b.get(2), RXJumboMax: b.get(3), TXMax: b.get(4),
		RX: b.get(5), RXMini: b.get(6), RXJumbo: b.get(7), TX: b.get(8),
	}
}

// struct ethtool_channels: cmd, max_rx, max_tx, max_other, max_combined,
// rx_count, tx_count, other_count, combined_count.
const channelFields = 9

func decodeChannels(b u32s) Channels {
	return Channels{
		MaxRX: b.get(1), MaxTX: b.get(2), MaxOther: b.get(3), MaxCombined: b.get(4),
		RX: b.get(5), TX: b.get(6), Other: b.get(7), Combined: b.get(8),
	}
}

// struct ethtool_coalesce is 23 __u32 fields. coalesceField maps each name
// of CoalesceParams to its field index; 10 and 11 are the adaptive flags.
const (
	coalesceFields     = 23
	coalesceAdaptiveRX = 10
	coalesceAdaptiveTX = 11
)

var coalesceField = map[string]int{
	"rx-usecs":          1,  // rx_coalesce_usecs
	"rx-frames":         2,  // rx_max_coalesced_frames
	"rx-usecs-irq":      3,  // rx_coalesce_usecs_irq
	"rx-frames-irq":     4,  // rx_max_coalesced_frames_irq
	"tx-usecs":          5,  // tx_coalesce_usecs
	"tx-frames":         6,  // tx_max_coalesced_frames
	"tx-usecs-irq":      7,  // tx_coalesce_usecs_irq
	"tx-frames-irq":     8,  // tx_max_coalesced_frames_irq
	"stats-block-usecs": 9,  // stats_block_coalesce_usecs
	"pkt-rate-low":      12, // pkt_rate_low
	"rx-usecs-low":      13, // rx_coalesce_usecs_low
	"rx-frames-low":     14, // rx_max_coalesced_frames_low
	"tx-usecs-low":      15, // tx_coalesce_usecs_low
	"tx-frames-low":     16, // tx_max_coalesced_frames_low
	"pkt-rate-high":     17, // pkt_rate_high
	"rx-usecs-high":     18, // rx_coalesce_usecs_high
	"rx-frames-high":    19, // rx_max_coalesced_frames_high
	"tx-usecs-high":     20, // tx_coalesce_usecs_high
	"tx-frames-high":    21, // tx_max_coalesced_frames_high
	"sample-interval":   22, // rate_sample_interval
}

func decodeCoalesce(b u32s) Coalesce {
	c := Coalesce{
		AdaptiveRX: b.get(coalesceAdaptiveRX) != 0,
		AdaptiveTX: b.get(coalesceAdaptiveTX) != 0,
		Params:     make(map[string]uint32, len(coalesceField)),
	}
	for name, i := range coalesceField {
		c.Params[name] = b.get(i)
	}
	return c
}

// struct ethtool_drvinfo: cmd; driver[32] at 4; version[32] at 36;
// fw_version[32] at 68; bus_info[32] at 100; erom_version[32] at 132;
// reserved2[12] at 164; n_priv_flags at 176, n_stats 180, testinfo_len 184,
// eedump_len 188, regdump_len 192; 196 bytes.
const drvinfoSize = 196

func decodeDriverInfo(b []byte) DriverInfo {
	return DriverInfo{
		Driver:               cString(b[4:36]),
		Version:              cString(b[36:68]),
		Firmware:             cString(b[68:100]),
		BusInfo:              cString(b[100:132]),
		ExpansionROM:         cString(b[132:164]),
		SupportsPrivFlags:    ne.Uint32(b[176:]) != 0,
		SupportsStatistics:   ne.Uint32(b[180:]) != 0,
		SupportsTest:         ne.Uint32(b[184:]) != 0,
		SupportsEEPROM:       ne.Uint32(b[188:]) != 0,
		SupportsRegisterDump: ne.Uint32(b[192:]) != 0,
	}
}

// cString returns the bytes of b up to the first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// rawLink is what struct ethtool_link_settings (or the older struct
// ethtool_cmd) says, before link-mode bits get names.
type rawLink struct {
	speed                                 uint32
	duplex, port, phyad, autoneg, xcvr    uint8
	mdix, mdixCtrl                        uint8
	supported, advertising, lpAdvertising []uint32
}

// struct ethtool_link_settings: cmd 0, speed 4, duplex 8, port 9,
// phy_address 10, autoneg 11, mdio_support 12, eth_tp_mdix 13,
// eth_tp_mdix_ctrl 14, link_mode_masks_nwords (s8) 15, transceiver 16,
// master_slave_cfg 17, master_slave_state 18, rate_matching 19,
// reserved[7] 20..47, then three bitmaps of nwords __u32 each.
func decodeLinkSettings(b []byte, nwords int) rawLink {
	r := rawLink{
		speed: ne.Uint32(b[4:]), duplex: b[8], port: b[9], phyad: b[10],
		autoneg: b[11], mdix: b[13], mdixCtrl: b[14], xcvr: b[16],
	}
	words := func(k int) []uint32 {
		w := make([]uint32, nwords)
		for i := range w {
			w[i] = ne.Uint32(b[linkSettingsHdr+4*(k*nwords+i):])
		}
		return w
	}
	r.supported, r.advertising, r.lpAdvertising = words(0), words(1), words(2)
	return r
}

// struct ethtool_cmd (ETHTOOL_GSET, deprecated): cmd 0, supported 4,
// advertising 8, speed (u16) 12, duplex 14, port 15, phy_address 16,
// transceiver 17, autoneg 18, mdio_support 19, maxtxpkt 20, maxrxpkt 24,
// speed_hi (u16) 28, eth_tp_mdix 30, eth_tp_mdix_ctrl 31,
// lp_advertising 32, reserved[2] 36; 44 bytes.
const ethtoolCmdSize = 44

func decodeGSet(b []byte) rawLink {
	return rawLink{
		speed:         uint32(ne.Uint16(b[12:])) | uint32(ne.Uint16(b[28:]))<<16,
		duplex:        b[14],
		port:          b[15],
		phyad:         b[16],
		xcvr:          b[17],
		autoneg:       b[18],
		mdix:          b[30],
		mdixCtrl:      b[31],
		supported:     []uint32{ne.Uint32(b[4:])},
		advertising:   []uint32{ne.Uint32(b[8:])},
		lpAdvertising: []uint32{ne.Uint32(b[32:])},
	}
}

// splitStrings cuts the data of struct ethtool_gstrings into n names.
func splitStrings(data []byte, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = cString(data[i*gstringLen : (i+1)*gstringLen])
	}
	return out
}

// featureState is one feature of struct ethtool_get_features_block.
type featureState struct {
	available, requested, active, neverChanged bool
}

// decodeFeatureBlocks reads n features from the blocks of struct
// ethtool_gfeatures: each block is available, requested, active,
// never_changed (__u32 each) for 32 features.
func decodeFeatureBlocks(blocks []byte, n int) []featureState {
	out := make([]featureState, n)
	for i := range out {
		blk := blocks[16*(i/32):]
		bit := uint32(1) << (i % 32)
		out[i] = featureState{
			available:    ne.Uint32(blk[0:])&bit != 0,
			requested:    ne.Uint32(blk[4:])&bit != 0,
			active:       ne.Uint32(blk[8:])&bit != 0,
			neverChanged: ne.Uint32(blk[12:])&bit != 0,
		}
	}
	return out
}
