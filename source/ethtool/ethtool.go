// Package ethtool owns everything linerate knows about a NIC through the
// ethtool interface: driver info, link settings, offload features, rings,
// channels, interrupt coalescing, the RSS indirection table and hash, the
// rx-flow-hash fields and the driver's statistics.
//
// One narrow interface (Client, and Setter for changes) has two
// implementations: Live, over the SIOCETHTOOL ioctl, bound to the network
// namespace NewLive ran in; and Capture, which parses the text output of the
// ethtool command as a person would paste it (Parse* functions, one per
// item). Render* functions print values in ethtool's own text format, and
// CaptureFile renders one capture file from any Client, so that a capture
// made without the ethtool command installed reads back the same.
//
// Anything a driver does not implement is reported as an error wrapping
// ErrNotSupported; callers show it to the user as "unsupported", never crash.
// The parsers degrade rather than fail: a line they do not understand makes
// the one value it held unknown and is a Warning naming the line (Capture
// keeps them per file); layouts.md says what each ethtool release prints.
package ethtool

import (
	"errors"
	"sort"
	"strings"

	"linerate/source/feature"
)

// ErrNotSupported is wrapped by every error meaning "this driver (or this
// capture) does not provide that item"; the wrapping names the item.
// Test with errors.Is, against it or feature.ErrNotSupported.
var ErrNotSupported error = &feature.Error{Lack: "not supported by this driver"}

// ErrNotCaptured is wrapped when a capture has no file for the item.
var ErrNotCaptured = errors.New("not in the capture")

// ErrNoInterface is wrapped when the interface does not exist (ENODEV), in
// the network namespace the client was made in.
var ErrNoInterface = errors.New("no such interface")

// DriverInfo is `ethtool -i IFACE`.
type DriverInfo struct {
	Driver   string `json:"driver"`
	Version  string `json:"version"`
	Firmware string `json:"firmware"`
	BusInfo  string `json:"bus_info"`
	// ExpansionROM is the expansion-rom-version line, usually empty.
	ExpansionROM string `json:"expansion_rom,omitempty"`
	// The supports-* lines of `ethtool -i`.
	SupportsStatistics   bool `json:"supports_statistics"`
	SupportsTest         bool `json:"supports_test,omitempty"`
	SupportsEEPROM       bool `json:"supports_eeprom_access,omitempty"`
	SupportsRegisterDump bool `json:"supports_register_dump,omitempty"`
	SupportsPrivFlags    bool `json:"supports_priv_flags,omitempty"`
}

// LinkInfo is the part of `ethtool IFACE` linerate uses.
type LinkInfo struct {
	// SpeedMbps is the negotiated speed in Mb/s; 0 when unknown.
	SpeedMbps int `json:"speed_mbps"`
	// Duplex is "Full", "Half" or "Unknown".
	Duplex  string `json:"duplex"`
	Autoneg bool   `json:"autoneg"`
	Port    string `json:"port,omitempty"`
	// Link is "Link detected: yes".
	Link bool `json:"link"`
	// Supported, Advertised and Partner link modes, e.g. "1000baseT/Full".
	Supported  []string `json:"supported_modes,omitempty"`
	Advertised []string `json:"advertised_modes,omitempty"`
	Partner    []string `json:"partner_modes,omitempty"`

	// Ports lists the connectors of "Supported ports: [ TP MII ]".
	Ports []string `json:"ports,omitempty"`
	// Pause frame use as ethtool prints it: "No", "Symmetric",
	// "Transmit-only" or "Symmetric Receive-only". PartnerPause is empty
	// when the link partner advertised nothing.
	SupportedPause  string `json:"supported_pause,omitempty"`
	AdvertisedPause string `json:"advertised_pause,omitempty"`
	PartnerPause    string `json:"partner_pause,omitempty"`
	// Whether auto-negotiation is supported, advertised, and advertised by
	// the link partner (Autoneg above is whether it is on).
	SupportsAutoneg   bool `json:"supports_autoneg,omitempty"`
	AdvertisedAutoneg bool `json:"advertised_autoneg,omitempty"`
	PartnerAutoneg    bool `json:"partner_autoneg,omitempty"`
	// FEC modes ("None", "RS", "BASER", "LLRS").
	SupportedFEC  []string `json:"supported_fec,omitempty"`
	AdvertisedFEC []string `json:"advertised_fec,omitempty"`
	PartnerFEC    []string `json:"partner_fec,omitempty"`
	// PHYAD is the MDIO address of the PHY.
	PHYAD int `json:"phyad,omitempty"`
	// Transceiver is "internal" or "external".
	Transceiver string `json:"transceiver,omitempty"`
	// MDIX is the "MDI-X:" line of a twisted-pair port, e.g. "off (auto)".
	MDIX string `json:"mdix,omitempty"`
}

// HasSettings reports whether the driver reported link settings (speed,
// modes, port) rather than only whether the link is up.
func (l LinkInfo) HasSettings() bool { return l.Port != "" }

// Feature is one line of `ethtool -k IFACE`.
type Feature struct {
	Name string `json:"name"`
	On   bool   `json:"on"`
	// Fixed is true when the driver does not let the feature change. For a
	// group line (tx-checksumming, ...) it is true when no feature of the
	// group can change.
	Fixed bool `json:"fixed"`
	// Parent is the group `ethtool -k` lists the feature under (indented),
	// e.g. "tx-checksumming" for "tx-checksum-ipv4"; empty at top level.
	Parent string `json:"parent,omitempty"`
	// Requested is "on" or "off" when the driver has not applied what was
	// asked for (ethtool's "[requested on]"); empty otherwise.
	Requested string `json:"requested,omitempty"`
}

// Features keeps ethtool's order.
type Features []Feature

// Get returns the named feature.
func (fs Features) Get(name string) (Feature, bool) {
	for _, f := range fs {
		if f.Name == name {
			return f, true
		}
	}
	return Feature{}, false
}

// Rings is `ethtool -g IFACE`: pre-set maximums and current settings.
type Rings struct {
	RXMax      uint32 `json:"rx_max"`
	RXMiniMax  uint32 `json:"rx_mini_max"`
	RXJumboMax uint32 `json:"rx_jumbo_max"`
	TXMax      uint32 `json:"tx_max"`
	RX         uint32 `json:"rx"`
	RXMini     uint32 `json:"rx_mini"`
	RXJumbo    uint32 `json:"rx_jumbo"`
	TX         uint32 `json:"tx"`
}

// Channels is `ethtool -l IFACE`.
type Channels struct {
	MaxRX       uint32 `json:"max_rx"`
	MaxTX       uint32 `json:"max_tx"`
	MaxOther    uint32 `json:"max_other"`
	MaxCombined uint32 `json:"max_combined"`
	RX          uint32 `json:"rx"`
	TX          uint32 `json:"tx"`
	Other       uint32 `json:"other"`
	Combined    uint32 `json:"combined"`
}

// RXQueues is the number of queues that receive: combined plus rx-only.
func (c Channels) RXQueues() uint32 { return c.Combined + c.RX }

// CoalesceParams lists, in ethtool's print order, the numeric parameters of
// `ethtool -c`. A driver reports a subset; Coalesce.Params holds what it
// reported.
var CoalesceParams = []string{
	"stats-block-usecs", "sample-interval", "pkt-rate-low", "pkt-rate-high",
	"rx-usecs", "rx-frames", "rx-usecs-irq", "rx-frames-irq",
	"tx-usecs", "tx-frames", "tx-usecs-irq", "tx-frames-irq",
	"rx-usecs-low", "rx-frames-low", "tx-usecs-low", "tx-frames-low",
	"rx-usecs-high", "rx-frames-high", "tx-usecs-high", "tx-frames-high",
}

// Coalesce is `ethtool -c IFACE`.
type Coalesce struct {
	AdaptiveRX bool `json:"adaptive_rx"`
	AdaptiveTX bool `json:"adaptive_tx"`
	// Params maps a name from CoalesceParams to its value.
	Params map[string]uint32 `json:"params"`
}

// RSS is `ethtool -x IFACE`.
type RSS struct {
	// RXRings is the ring count ethtool prints in the table's header.
	RXRings int `json:"rx_rings"`
	// Indirection maps a hash bucket to an rx queue; empty when the driver
	// has no table.
	Indirection []uint32 `json:"indirection"`
	// Key is the hash key; nil when the driver does not report it.
	Key []byte `json:"key,omitempty"`
	// HashFuncs maps "toeplitz", "xor", "crc32" to whether it is on.
	HashFuncs map[string]bool `json:"hash_funcs,omitempty"`
}

// QueueShare counts indirection entries per queue, indexed by queue.
func (r RSS) QueueShare() []int {
	var n []int
	for _, q := range r.Indirection {
		for int(q) >= len(n) {
			n = append(n, 0)
		}
		n[q]++
	}
	return n
}

// FlowType is an argument of `ethtool -n IFACE rx-flow-hash`.
type FlowType string

// The flow types linerate reads.
const (
	TCP4 FlowType = "tcp4"
	UDP4 FlowType = "udp4"
	TCP6 FlowType = "tcp6"
	UDP6 FlowType = "udp6"
)

// FlowTypes lists the flow types linerate reads, in order.
var FlowTypes = []FlowType{TCP4, UDP4, TCP6, UDP6}

// FlowHash is a set of RXH_* bits: which header fields feed the RSS hash.
type FlowHash uint64

// The RXH_* bits of linux/ethtool.h.
const (
	HashL2DA    FlowHash = 1 << 1 // m: L2 destination address
	HashVLAN    FlowHash = 1 << 2 // v: VLAN tag
	HashL3Proto FlowHash = 1 << 3 // t: L3 protocol
	HashIPSrc   FlowHash = 1 << 4 // s: IP source address
	HashIPDst   FlowHash = 1 << 5 // d: IP destination address
	HashL4B01   FlowHash = 1 << 6 // f: L4 bytes 0 & 1 (source port)
	HashL4B23   FlowHash = 1 << 7 // n: L4 bytes 2 & 3 (destination port)
	HashGTPTEID FlowHash = 1 << 8 // e: the TEID of GTP (ethtool and Linux 6.9+)
	HashDiscard FlowHash = 1 << 31
)

var hashLetters = []struct {
	bit    FlowHash
	letter byte
	text   string
}{
	{HashL2DA, 'm', "L2DA"},
	{HashVLAN, 'v', "VLAN tag"},
	{HashL3Proto, 't', "L3 proto"},
	{HashIPSrc, 's', "IP SA"},
	{HashIPDst, 'd', "IP DA"},
	{HashL4B01, 'f', "L4 bytes 0 & 1 [TCP/UDP src port]"},
	{HashL4B23, 'n', "L4 bytes 2 & 3 [TCP/UDP dst port]"},
	{HashGTPTEID, 'e', "GTP TEID"},
}

// Letters renders the set as `ethtool -N ... rx-flow-hash T LETTERS` does,
// e.g. "sdfn".
func (h FlowHash) Letters() string {
	var b strings.Builder
	for _, l := range hashLetters {
		if h&l.bit != 0 {
			b.WriteByte(l.letter)
		}
	}
	return b.String()
}

// Lines returns the field descriptions `ethtool -n` prints, one per bit set.
func (h FlowHash) Lines() []string {
	var out []string
	for _, l := range hashLetters {
		if h&l.bit != 0 {
			out = append(out, l.text)
		}
	}
	return out
}

// ParseFlowHashLetters parses "sdfn" and the like.
func ParseFlowHashLetters(s string) (FlowHash, error) {
	var h FlowHash
	for i := 0; i < len(s); i++ {
		found := false
		for _, l := range hashLetters {
			if l.letter == s[i] {
				h |= l.bit
				found = true
			}
		}
		if !found {
			return 0, errors.New("unknown rx-flow-hash letter " + string(s[i]) + " (want some of m v t s d f n e)")
		}
	}
	return h, nil
}

// ParseFlowHashLine maps one line that `ethtool -n` prints to its bit; ok is
// false for a line that names no field.
func ParseFlowHashLine(line string) (FlowHash, bool) {
	line = strings.TrimSpace(line)
	for _, l := range hashLetters {
		if line == l.text {
			return l.bit, true
		}
	}
	return 0, false
}

// Stat is one line of `ethtool -S IFACE`.
type Stat struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// Stats keeps the driver's order.
type Stats []Stat

// Map returns the statistics by name.
func (s Stats) Map() map[string]uint64 {
	m := make(map[string]uint64, len(s))
	for _, st := range s {
		m[st.Name] = st.Value
	}
	return m
}

// Names returns the sorted statistic names.
func (s Stats) Names() []string {
	out := make([]string, 0, len(s))
	for _, st := range s {
		out = append(out, st.Name)
	}
	sort.Strings(out)
	return out
}

// Client reads ethtool facts about an interface. Every method returns an
// error wrapping ErrNotSupported when the driver (or capture) lacks the item.
type Client interface {
	DriverInfo(iface string) (DriverInfo, error)
	LinkInfo(iface string) (LinkInfo, error)
	Features(iface string) (Features, error)
	Rings(iface string) (Rings, error)
	Channels(iface string) (Channels, error)
	Coalesce(iface string) (Coalesce, error)
	RSS(iface string) (RSS, error)
	FlowHash(iface string, ft FlowType) (FlowHash, error)
	Stats(iface string) (Stats, error)
	Close() error
}

// Setter changes ethtool settings on a live interface. Each call changes
// only what it is given and returns an error wrapping ErrNotSupported when
// the driver refuses the operation itself.
type Setter interface {
	// SetFeatures turns the named features on or off (names as `ethtool -k`).
	SetFeatures(iface string, want map[string]bool) error
	// SetRings sets the current RX and TX ring sizes (maximums are ignored).
	SetRings(iface string, r Rings) error
	// SetChannels sets the current channel counts (maximums are ignored).
	SetChannels(iface string, c Channels) error
	// SetCoalesce sets adaptive flags and the given parameters; parameters
	// absent from c.Params keep their value.
	SetCoalesce(iface string, c Coalesce) error
	// SetIndirection writes the RSS indirection table.
	SetIndirection(iface string, table []uint32) error
	// SetFlowHash sets the fields hashed for a flow type.
	SetFlowHash(iface string, ft FlowType, h FlowHash) error
}

// EqualTable is the table `ethtool -X IFACE equal N` writes: bucket i goes to
// queue i mod n.
func EqualTable(size, n int) []uint32 {
	t := make([]uint32, size)
	if n <= 0 {
		return t
	}
	for i := range t {
		t[i] = uint32(i % n)
	}
	return t
}
