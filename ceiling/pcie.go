package ceiling

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// The PCI Express facts below come from the PCI Express Base Specification
// (PCI-SIG), named by revision and section in each comment. "up" is the
// direction from the device to the root complex (the NIC writing received
// frames to memory); "down" is from the root complex to the device.

// Link is a PCIe link: generation and lane count.
type Link struct {
	Gen   int `json:"gen"`
	Lanes int `json:"lanes"`
}

// genRates are the transfer rates per lane in GT/s, by generation.
// Gen1 2.5 and Gen2 5.0 GT/s: Base Spec r2.0 section 4.2; Gen3 8.0 GT/s:
// r3.0; Gen4 16 GT/s: r4.0; Gen5 32 GT/s: r5.0.
var genRates = map[int]float64{1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0}

// validLanes are the link widths the Base Spec defines (r3.0 section 4.2.4.9).
var validLanes = map[int]bool{1: true, 2: true, 4: true, 8: true, 12: true, 16: true, 32: true}

// errGen6 explains why the model stops at Gen5.
const errGen6 = "PCIe Gen6 (64 GT/s) sends 256-byte FLITs with PAM4 signalling, FEC and a different framing (Base Spec r6.0 section 4.2.3); this model covers Gen1 to Gen5"

// Validate checks the generation and width.
func (l Link) Validate() error {
	if l.Gen >= 6 {
		return errors.New(errGen6)
	}
	if _, ok := genRates[l.Gen]; !ok {
		return fmt.Errorf("gen%d: want a PCIe generation from 1 to 5", l.Gen)
	}
	if !validLanes[l.Lanes] {
		return fmt.Errorf("x%d: want a link width of 1, 2, 4, 8, 12, 16 or 32 lanes", l.Lanes)
	}
	return nil
}

var linkRE = regexp.MustCompile(`^gen\s*([0-9]+)\s*x\s*([0-9]+)$`)

// ParseLink reads "gen2x1", "Gen3 x4" and the like.
func ParseLink(s string) (Link, error) {
	m := linkRE.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil {
		return Link{}, fmt.Errorf("bad PCIe link %q: want genNxM, e.g. gen2x1 or gen3x4", s)
	}
	g, _ := strconv.Atoi(m[1])
	w, _ := strconv.Atoi(m[2])
	l := Link{Gen: g, Lanes: w}
	if err := l.Validate(); err != nil {
		return Link{}, fmt.Errorf("bad PCIe link %q: %w", s, err)
	}
	return l, nil
}

// LinkFromGTs makes a Link from a speed in GT/s as sysfs and lspci show it
// (2.5, 5, 8, 16, 32) and a width.
func LinkFromGTs(gts float64, lanes int) (Link, error) {
	for g, r := range genRates {
		if math.Abs(r-gts) < 0.01 {
			l := Link{Gen: g, Lanes: lanes}
			return l, l.Validate()
		}
	}
	if math.Abs(gts-64) < 0.01 {
		return Link{}, fmt.Errorf("64 GT/s: %s", errGen6)
	}
	return Link{}, fmt.Errorf("%g GT/s is not a PCIe link speed (2.5, 5, 8, 16 or 32)", gts)
}

// GTs is the transfer rate per lane.
func (l Link) GTs() float64 { return genRates[l.Gen] }

// Encoding names the line code and its efficiency: 8b/10b for Gen1 and Gen2
// (Base Spec r2.1 section 4.2.1), 128b/130b for Gen3 to Gen5 (r3.0 section
// 4.2.2: a 2-bit sync header on every 128-bit block).
func (l Link) Encoding() (name string, data, total int) {
	if l.Gen <= 2 {
		return "8b/10b", 8, 10
	}
	return "128b/130b", 128, 130
}

// RawBps is the bit rate per direction after the line code, before any
// packet overhead: Gen2 x1 is 4 Gb/s.
func (l Link) RawBps() float64 {
	_, d, t := l.Encoding()
	return l.GTs() * 1e9 * float64(l.Lanes) * float64(d) / float64(t)
}

// SKPFraction is the share of link time taken by SKP ordered sets, sent for
// clock tolerance compensation. Gen1/2: a 4-symbol SKP ordered set
// scheduled every 1180 to 1538 symbol times (r2.1 section 4.2.7); we take
// the tighter 1180. Gen3+: a 16-symbol SKP ordered set (one block)
// every 370 to 375 blocks (r3.0 section 4.2.7.3); we take 370.
func (l Link) SKPFraction() float64 {
	if l.Gen <= 2 {
		return 4.0 / (1180 + 4)
	}
	return 1.0 / (370 + 1)
}

func (l Link) String() string {
	name, _, _ := l.Encoding()
	return fmt.Sprintf("Gen%d x%d (%g GT/s, %s)", l.Gen, l.Lanes, l.GTs(), name)
}

// Per-packet overheads in bytes. The framing of a TLP costs the same 8 bytes
// in both encodings, but the pieces differ:
//   - Gen1/2 (r2.1 sections 4.2.2 and 3.5.2): STP symbol 1 + sequence
//     number 2 + LCRC 4 + END symbol 1.
//   - Gen3+ (r3.0 section 4.2.2.3): STP token 4 (it carries the 12-bit
//     sequence number and the TLP length) + LCRC 4; there is no END.
//
// A DLLP is 6 bytes (4 of content, 16-bit CRC; r3.0 section 3.4) plus SDP
// and END symbols (Gen1/2) or a 2-byte SDP token (Gen3+): 8 bytes.
const (
	tlpFramingGen12 = 1 + 2 + 4 + 1
	tlpFramingGen3  = 4 + 4
	dllpBytes       = 8
	// TLP headers (r3.0 section 2.2.1): memory requests to a 64-bit address
	// take 4 DW, to an address below 4 GB 3 DW (section 2.2.4.1 forbids the
	// 4 DW form there); completions take 3 DW.
	hdr3DW = 12
	hdr4DW = 16
	// ECRC, the optional end-to-end CRC (r3.0 section 2.7).
	ecrcBytes = 4
)

func (l Link) tlpFraming() int {
	if l.Gen <= 2 {
		return tlpFramingGen12
	}
	return tlpFramingGen3
}

// AckFactor is how many maximum-size TLPs a receiver may take in before it
// must return an Ack DLLP: the AckFactor column of "Ack Transmission Latency
// Limit and AckFactor" (r2.1 section 3.5.3.1, Table 3-7). UpdateFC DLLPs
// follow the same guideline (r2.1 section 2.6.1.2, UpdateFactor), so the
// model uses the same factor for both.
func AckFactor(mps, lanes int) float64 {
	switch {
	case lanes <= 4:
		if mps <= 256 {
			return 1.4
		}
		return 1.0
	case lanes <= 8:
		if mps <= 256 {
			return 2.5
		}
		return 1.0
	default:
		if mps <= 256 {
			return 3.0
		}
		return 2.0
	}
}

// validSizes are the Max Payload Size and Max Read Request Size encodings of
// the Device Control register (r3.0 section 7.8.4): 128 to 4096 bytes.
var validSizes = map[int]bool{128: true, 256: true, 512: true, 1024: true, 2048: true, 4096: true}

// DefaultMRRS is the reset value of Max Read Request Size (r3.0 section
// 7.8.4: 010b, 512 bytes).
const DefaultMRRS = 512

// Bus is a PCIe link with the sizes that shape its packets.
type Bus struct {
	Link Link `json:"link"`
	// MPS is the Max Payload Size set (Device Control), bytes.
	MPS int `json:"mps"`
	// MRRS is the Max Read Request Size set on the device, bytes.
	MRRS int `json:"mrrs"`
	// Addr32 says DMA addresses sit below 4 GB, so memory requests use 3 DW
	// headers. The default (false) is 4 DW: on the Raspberry Pi 4 and CM4
	// all of RAM appears at PCIe bus address 0x4_0000_0000 and up (the
	// dma-ranges of pcie@7d500000 in the Raspberry Pi device tree), and on
	// x86 with more than 4 GB of RAM most buffers sit above 4 GB too.
	Addr32 bool `json:"addr32,omitempty"`
	// ECRC adds the optional end-to-end CRC to every TLP.
	ECRC bool `json:"ecrc,omitempty"`
}

// Validate checks the link and the sizes.
func (b Bus) Validate() error {
	if err := b.Link.Validate(); err != nil {
		return err
	}
	if err := ValidateSize(b.MPS); err != nil {
		return fmt.Errorf("MPS %d: %w", b.MPS, err)
	}
	if err := ValidateSize(b.MRRS); err != nil {
		return fmt.Errorf("MRRS %d: %w", b.MRRS, err)
	}
	return nil
}

// ValidateSize checks a Max Payload Size or Max Read Request Size.
func ValidateSize(n int) error {
	if !validSizes[n] {
		return fmt.Errorf("want 128, 256, 512, 1024, 2048 or 4096 bytes")
	}
	return nil
}

// BytesPerSec is what each direction of the link carries per second as
// packets (TLPs and DLLPs, framing included): the raw rate after the line
// code, less SKP ordered sets. Gen2 x1: 498.3 MB/s.
func (b Bus) BytesPerSec() float64 {
	return b.Link.RawBps() / 8 * (1 - b.Link.SKPFraction())
}

// memHeader is the header of a memory request (read or write) to RAM.
func (b Bus) memHeader() int {
	if b.Addr32 {
		return hdr3DW
	}
	return hdr4DW
}

// tlpBytes is one TLP on the link: framing, header, data, optional ECRC.
func (b Bus) tlpBytes(header, data int) int {
	n := b.Link.tlpFraming() + header + data
	if b.ECRC {
		n += ecrcBytes
	}
	return n
}

// dllpPerTLP is the DLLP bytes a receiver returns per TLP it takes in: one
// Ack per AckFactor TLPs, and as many UpdateFC when the TLP used flow
// control credits the receiver must give back.
func (b Bus) dllpPerTLP(updateFC bool) float64 {
	f := AckFactor(b.MPS, b.Link.Lanes)
	n := float64(dllpBytes) / f
	if updateFC {
		n += float64(dllpBytes) / f
	}
	return n
}
