// Package pci decodes what linerate needs from a PCI function's
// configuration space: the PCI Express capability's link speed and width
// (current and maximum), Max Payload Size (supported and set) and Max Read
// Request Size.
//
// Register offsets and fields follow the PCI Local Bus and PCI Express Base
// specifications as the kernel names them in include/uapi/linux/pci_regs.h
// (PCI_STATUS_CAP_LIST, PCI_CAPABILITY_LIST, PCI_CAP_ID_EXP, PCI_EXP_FLAGS,
// PCI_EXP_DEVCAP, PCI_EXP_DEVCTL, PCI_EXP_LNKCAP, PCI_EXP_LNKSTA).
package pci

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"linerate/source/tree"
)

// ErrShort means the config space was cut before the PCIe capability (an
// unprivileged read of sysfs config returns only 64 bytes).
var ErrShort = errors.New("config space truncated (reading it whole needs root)")

// ErrNoExpress means the function has no PCI Express capability.
var ErrNoExpress = errors.New("no PCI Express capability")

// Express is the decoded PCI Express capability.
type Express struct {
	// PortType is the Device/Port Type field: 0 endpoint, 4 root port, ...
	PortType     int
	RootPort     bool
	MPSSupported int // bytes, from Device Capabilities
	MPS          int // bytes, from Device Control
	MRRS         int // bytes, from Device Control
	MaxSpeedGTs  float64
	MaxWidth     int
	CurSpeedGTs  float64
	CurWidth     int
	// Offset is where the capability sits in config space.
	Offset int
}

// Device/Port Type values (PCI_EXP_TYPE_*).
const (
	TypeEndpoint       = 0x0
	TypeLegacyEndpoint = 0x1
	TypeRootPort       = 0x4
	TypeUpstream       = 0x5 // upstream port of a switch
	TypeDownstream     = 0x6 // downstream port of a switch
	TypePCIeToPCI      = 0x7
	TypePCIToPCIe      = 0x8
	TypeRCEndpoint     = 0x9 // root complex integrated endpoint
	TypeRCEventColl    = 0xa
)

// Config space offsets and bits.
const (
	headerLen    = 0x40 // the standard header every function has
	regStatus    = 0x06 // 16-bit status register
	statusCapBit = 1 << 4
	regCapPtr    = 0x34
	capIDExpress = 0x10

	// Offsets inside the PCI Express capability.
	expFlags  = 0x02 // bits 7:4 Device/Port Type
	expDevCap = 0x04 // bits 2:0 Max_Payload_Size Supported
	expDevCtl = 0x08 // bits 7:5 Max_Payload_Size, bits 14:12 Max_Read_Request_Size
	expLnkCap = 0x0c // bits 3:0 Max Link Speed, bits 9:4 Maximum Link Width
	expLnkSta = 0x12 // bits 3:0 Current Link Speed, bits 9:4 Negotiated Link Width
	expEnd    = 0x14 // the registers above all lie before this
)

// linkSpeeds maps the Link Capabilities/Status speed code to GT/s
// (PCI_EXP_LNKCAP_SLS_2_5GB .. _64_0GB).
var linkSpeeds = map[uint16]float64{1: 2.5, 2: 5, 3: 8, 4: 16, 5: 32, 6: 64}

// ParseConfig finds and decodes the PCI Express capability in a config space.
// It returns ErrShort when b ends before the capability does, and
// ErrNoExpress when the function has none. Link fields are zero for
// functions without a link (root complex integrated endpoints) and for
// unknown speed codes.
func ParseConfig(b []byte) (Express, error) {
	if len(b) < headerLen {
		return Express{}, fmt.Errorf("%d bytes: %w", len(b), ErrShort)
	}
	if binary.LittleEndian.Uint16(b[regStatus:])&statusCapBit == 0 {
		return Express{}, ErrNoExpress
	}
	ptr := int(b[regCapPtr] &^ 3)
	// A capability list has at most (256-64)/4 entries; more means a loop.
	for range (256 - headerLen) / 4 {
		if ptr == 0 {
			return Express{}, ErrNoExpress
		}
		if ptr < headerLen {
			return Express{}, fmt.Errorf("capability pointer %#x points into the header: %w", ptr, ErrNoExpress)
		}
		if ptr+2 > len(b) {
			return Express{}, fmt.Errorf("capability at %#x beyond %d bytes: %w", ptr, len(b), ErrShort)
		}
		if b[ptr] == capIDExpress {
			return decodeExpress(b, ptr)
		}
		ptr = int(b[ptr+1] &^ 3)
	}
	return Express{}, fmt.Errorf("capability list loops: %w", ErrNoExpress)
}

func decodeExpress(b []byte, at int) (Express, error) {
	if at+expEnd > len(b) {
		return Express{}, fmt.Errorf("PCI Express capability at %#x ends beyond %d bytes: %w", at, len(b), ErrShort)
	}
	u16 := func(off int) uint16 { return binary.LittleEndian.Uint16(b[at+off:]) }
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(b[at+off:]) }
	e := Express{Offset: at}
	e.PortType = int(u16(expFlags)>>4) & 0xf
	e.RootPort = e.PortType == TypeRootPort
	e.MPSSupported = 128 << (u32(expDevCap) & 0x7)
	ctl := u16(expDevCtl)
	e.MPS = 128 << ((ctl >> 5) & 0x7)
	e.MRRS = 128 << ((ctl >> 12) & 0x7)
	lnkCap := u32(expLnkCap)
	e.MaxSpeedGTs = linkSpeeds[uint16(lnkCap&0xf)]
	e.MaxWidth = int(lnkCap>>4) & 0x3f
	sta := u16(expLnkSta)
	e.CurSpeedGTs = linkSpeeds[sta&0xf]
	e.CurWidth = int(sta>>4) & 0x3f
	return e, nil
}

// ParseSpeed turns sysfs link speed text ("5.0 GT/s PCIe", "2.5 GT/s") into GT/s.
func ParseSpeed(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) < 2 || f[1] != "GT/s" {
		return 0, fmt.Errorf("link speed %q is not \"N GT/s\"", tree.Clip(s))
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("link speed %q is not \"N GT/s\"", tree.Clip(s))
	}
	return v, nil
}
