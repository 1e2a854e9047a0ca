package main

import "encoding/binary"

// pciConfig describes one function's configuration space. The layout follows
// the PCI Local Bus and PCI Express Base specifications: a type 0 (endpoint)
// or type 1 (bridge) header, a capability list from the pointer at 0x34, and
// the PCI Express capability (ID 0x10) with Device Capabilities at +0x04,
// Device Control at +0x08, Link Capabilities at +0x0C, Link Status at +0x12,
// Link Capabilities 2 at +0x2C and Link Control 2 at +0x30.
type pciConfig struct {
	vendor, device         uint16
	rev                    uint8
	class                  uint32 // 0x020000
	multiFunction          bool
	bridge                 bool
	priBus, secBus, subBus uint8
	subVendor, subDevice   uint16
	bars                   []uint32 // BAR0.. for endpoints
	irqLine, irqPin        uint8

	pmOff, msiOff, msixOff, expOff uint8
	msiEnabled, msi64              bool
	msiAddr                        uint64
	msiData                        uint16
	msixEnabled                    bool
	msixTable                      int // entries

	portType         int // Device/Port Type: 0 endpoint, 4 root port
	mpsSupported     int // bytes
	mps, mrrs        int // bytes, Device Control
	flr              bool
	maxSpeed         int // 1 = 2.5 GT/s, 2 = 5 GT/s, 3 = 8 GT/s
	maxWidth         int
	curSpeed         int
	curWidth         int
	dllActiveCapable bool
}

// sizeCode encodes 128..4096 bytes as the 3-bit field (128 << code).
func sizeCode(bytes int) uint16 {
	c := uint16(0)
	for v := 128; v < bytes; v <<= 1 {
		c++
	}
	return c
}

// bytes renders 4096 bytes of configuration space.
func (c pciConfig) bytes() []byte {
	b := make([]byte, 4096)
	le16 := func(off int, v uint16) { binary.LittleEndian.PutUint16(b[off:], v) }
	le32 := func(off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }
	le16(0x00, c.vendor)
	le16(0x02, c.device)
	// Command: memory space, bus master; INTx disabled when MSI/MSI-X is on
	cmd := uint16(0x0006)
	if c.msiEnabled || c.msixEnabled {
		cmd |= 0x0400
	}
	le16(0x04, cmd)
	le16(0x06, 0x0010) // Status: capabilities list
	b[0x08] = c.rev
	b[0x09] = byte(c.class)
	b[0x0a] = byte(c.class >> 8)
	b[0x0b] = byte(c.class >> 16)
	b[0x0c] = 0x10 // cache line size, 64 bytes
	hdr := byte(0)
	if c.bridge {
		hdr = 1
	}
	if c.multiFunction {
		hdr |= 0x80
	}
	b[0x0e] = hdr
	if c.bridge {
		b[0x18], b[0x19], b[0x1a] = c.priBus, c.secBus, c.subBus
		le16(0x3e, 0x0002) // Bridge Control: SERR# enable
	} else {
		for i, bar := range c.bars {
			le32(0x10+4*i, bar)
		}
		le16(0x2c, c.subVendor)
		le16(0x2e, c.subDevice)
	}
	b[0x3c], b[0x3d] = c.irqLine, c.irqPin

	// capability list, in address order
	type capw struct {
		off  uint8
		emit func(off int, next uint8)
	}
	var caps []capw
	if c.pmOff != 0 {
		caps = append(caps, capw{c.pmOff, func(o int, next uint8) {
			b[o], b[o+1] = 0x01, next
			le16(o+2, 0x0003|0xc800) // PMC: version 3, PME from D0/D3hot/D3cold
			le16(o+4, 0x0008)        // PMCSR: D0, No_Soft_Reset
		}})
	}
	if c.msiOff != 0 {
		caps = append(caps, capw{c.msiOff, func(o int, next uint8) {
			b[o], b[o+1] = 0x05, next
			ctl := uint16(0)
			if c.msiEnabled {
				ctl |= 1
			}
			if c.msi64 {
				ctl |= 1 << 7
			}
			le16(o+2, ctl)
			le32(o+4, uint32(c.msiAddr))
			if c.msi64 {
				le32(o+8, uint32(c.msiAddr>>32))
				le16(o+12, c.msiData)
			} else {
				le16(o+8, c.msiData)
			}
		}})
	}
	if c.msixOff != 0 {
		caps = append(caps, capw{c.msixOff, func(o int, next uint8) {
			b[o], b[o+1] = 0x11, next
			ctl := uint16(c.msixTable - 1)
			if c.msixEnabled {
				ctl |= 1 << 15
			}
			le16(o+2, ctl)
			le32(o+4, 0x00000003) // table in BAR3 at offset 0
			le32(o+8, 0x00002003) // PBA in BAR3 at 0x2000
		}})
	}
	if c.expOff != 0 {
		caps = append(caps, capw{c.expOff, func(o int, next uint8) {
			b[o], b[o+1] = 0x10, next
			le16(o+0x02, uint16(2)|uint16(c.portType)<<4) // capability version 2
			devcap := uint32(sizeCode(c.mpsSupported)) |
				1<<5 | // extended tag field supported
				6<<6 | 6<<9 | // acceptable L0s / L1 latency
				1<<15 // role-based error reporting
			if c.flr {
				devcap |= 1 << 28
			}
			le32(o+0x04, devcap)
			devctl := uint16(1<<4) | // relaxed ordering
				sizeCode(c.mps)<<5 |
				uint16(1<<11) | // no snoop
				sizeCode(c.mrrs)<<12
			le16(o+0x08, devctl)
			linkcap := uint32(c.maxSpeed) | uint32(c.maxWidth)<<4 |
				3<<10 | // ASPM L0s and L1 supported
				4<<12 | 6<<15 // exit latencies
			if c.dllActiveCapable {
				linkcap |= 1 << 20
			}
			le32(o+0x0c, linkcap)
			le16(o+0x10, 0x0040)                                          // Link Control: common clock
			linksta := uint16(c.curSpeed) | uint16(c.curWidth)<<4 | 1<<12 // slot clock
			if c.dllActiveCapable {
				linksta |= 1 << 13 // data link layer active
			}
			le16(o+0x12, linksta)
			// Link Capabilities 2: supported speeds vector, bit 1 = 2.5 GT/s ...
			vec := uint32(0)
			for s := 1; s <= c.maxSpeed; s++ {
				vec |= 1 << s
			}
			le32(o+0x2c, vec)
			le16(o+0x30, uint16(c.maxSpeed)) // Link Control 2: target link speed
		}})
	}
	if len(caps) > 0 {
		b[0x34] = caps[0].off
	}
	for i, cp := range caps {
		next := uint8(0)
		if i+1 < len(caps) {
			next = caps[i+1].off
		}
		cp.emit(int(cp.off), next)
	}
	if c.expOff != 0 {
		// extended capabilities: Advanced Error Reporting (ID 1, version 2), last
		le32(0x100, 0x0001|2<<16)
	}
	return b
}
