package ethtool

import (
	"reflect"
	"testing"
)

// The fields of struct ethtool_coalesce in the order of
// include/uapi/linux/ethtool.h, with the ethtool -C name of each.
var uapiCoalesce = []struct{ field, param string }{
	{"cmd", ""},
	{"rx_coalesce_usecs", "rx-usecs"},
	{"rx_max_coalesced_frames", "rx-frames"},
	{"rx_coalesce_usecs_irq", "rx-usecs-irq"},
	{"rx_max_coalesced_frames_irq", "rx-frames-irq"},
	{"tx_coalesce_usecs", "tx-usecs"},
	{"tx_max_coalesced_frames", "tx-frames"},
	{"tx_coalesce_usecs_irq", "tx-usecs-irq"},
	{"tx_max_coalesced_frames_irq", "tx-frames-irq"},
	{"stats_block_coalesce_usecs", "stats-block-usecs"},
	{"use_adaptive_rx_coalesce", "adaptive-rx"},
	{"use_adaptive_tx_coalesce", "adaptive-tx"},
	{"pkt_rate_low", "pkt-rate-low"},
	{"rx_coalesce_usecs_low", "rx-usecs-low"},
	{"rx_max_coalesced_frames_low", "rx-frames-low"},
	{"tx_coalesce_usecs_low", "tx-usecs-low"},
	{"tx_max_coalesced_frames_low", "tx-frames-low"},
	{"pkt_rate_high", "pkt-rate-high"},
	{"rx_coalesce_usecs_high", "rx-usecs-high"},
	{"rx_max_coalesced_frames_high", "rx-frames-high"},
	{"tx_coalesce_usecs_high", "tx-usecs-high"},
	{"tx_max_coalesced_frames_high", "tx-frames-high"},
	{"rate_sample_interval", "sample-interval"},
}

func TestCoalesceLayout(t *testing.T) {
	if len(uapiCoalesce) != coalesceFields {
		t.Fatalf("struct has %d fields, layout says %d", len(uapiCoalesce), coalesceFields)
	}
	b := newU32s(coalesceFields, cmdGCOALESCE)
	for i := 1; i < coalesceFields; i++ {
		b.set(i, uint32(1000+i))
	}
	b.set(coalesceAdaptiveRX, 1)
	b.set(coalesceAdaptiveTX, 0)
	c := decodeCoalesce(b)
	if len(c.Params) != len(CoalesceParams) {
		t.Errorf("%d params, want every one of CoalesceParams", len(c.Params))
	}
	for i, f := range uapiCoalesce {
		switch f.param {
		case "", "adaptive-rx", "adaptive-tx":
			continue
		}
		if got := c.Params[f.param]; got != uint32(1000+i) {
			t.Errorf("%s (%s): read %d, want field %d", f.param, f.field, got, i)
		}
	}
	if !c.AdaptiveRX || c.AdaptiveTX {
		t.Errorf("adaptive rx %v tx %v, want on off", c.AdaptiveRX, c.AdaptiveTX)
	}
	if b.get(0) != 0x0e {
		t.Errorf("cmd %#x, want ETHTOOL_GCOALESCE", b.get(0))
	}
}

func TestRingChannelLayout(t *testing.T) {
	b := newU32s(ringFields, cmdGRINGPARAM)
	for i := 1; i < ringFields; i++ {
		b.set(i, uint32(i))
	}
	if got, want := decodeRings(b), (Rings{1, 2, 3, 4, 5, 6, 7, 8}); got != want {
		t.Errorf("rings %+v, want %+v", got, want)
	}
	if got, want := decodeChannels(b), (Channels{1, 2, 3, 4, 5, 6, 7, 8}); got != want {
		t.Errorf("channels %+v, want %+v", got, want)
	}
}

func TestDriverInfoLayout(t *testing.T) {
	b := make([]byte, drvinfoSize)
	copy(b[4:], "igb")
	copy(b[36:], "5.4.0-k")
	copy(b[68:], "3.16, 0x800004d6")
	copy(b[100:], "0000:01:00.0")
	copy(b[132:], "rom")
	ne.PutUint32(b[180:], 91) // n_stats
	ne.PutUint32(b[184:], 5)  // testinfo_len
	ne.PutUint32(b[192:], 740)
	want := DriverInfo{Driver: "igb", Version: "5.4.0-k", Firmware: "3.16, 0x800004d6", BusInfo: "0000:01:00.0",
		ExpansionROM: "rom", SupportsStatistics: true, SupportsTest: true, SupportsRegisterDump: true}
	if got := decodeDriverInfo(b); got != want {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
}

func setBits(words []uint32, bits ...int) {
	for _, b := range bits {
		words[b/32] |= 1 << (b % 32)
	}
}

func TestLinkSettingsLayout(t *testing.T) {
	const nwords = 4
	b := make([]byte, linkSettingsHdr+3*4*nwords)
	ne.PutUint32(b[4:], 1000)
	b[8], b[9], b[10], b[11] = 1, 0x00, 1, 1 // full, TP, PHY 1, autoneg on
	b[13], b[14] = 2, 3                      // MDI-X on, auto
	b[15] = nwords
	b[16] = 0 // internal
	sup, adv, lp := make([]uint32, nwords), make([]uint32, nwords), make([]uint32, nwords)
	setBits(sup, 0, 1, 2, 3, 5, 6, 7, 13, 50)
	setBits(adv, 0, 1, 2, 3, 5, 6, 13)
	setBits(lp, 3, 5, 6, 13, 14)
	for k, w := range [][]uint32{sup, adv, lp} {
		for i, v := range w {
			ne.PutUint32(b[linkSettingsHdr+4*(k*nwords+i):], v)
		}
	}
	raw := decodeLinkSettings(b, nwords)
	names := append([]string(nil), legacyLinkModes...)
	for len(names) < 75 {
		names = append(names, "")
	}
	names[49], names[50], names[51], names[74] = "None", "RS", "BASER", "LLRS"
	got := decodeLink(raw, names)
	want := LinkInfo{
		SpeedMbps: 1000, Duplex: "Full", Autoneg: true, Port: "Twisted Pair",
		Supported:  []string{"10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Full"},
		Advertised: []string{"10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Full"},
		Partner:    []string{"100baseT/Full", "1000baseT/Full"},
		Ports:      []string{"TP"}, SupportedPause: "Symmetric", AdvertisedPause: "Symmetric",
		PartnerPause: "Symmetric Receive-only", SupportsAutoneg: true, AdvertisedAutoneg: true,
		PartnerAutoneg: true, SupportedFEC: []string{"RS"}, PHYAD: 1, Transceiver: "internal",
		MDIX: "on (auto)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
	// Unknown speed and duplex, no partner, not twisted pair.
	ne.PutUint32(b[4:], 0xffffffff)
	b[8], b[9] = 0xff, 0xff
	for i := linkSettingsHdr + 2*4*nwords; i < len(b); i++ {
		b[i] = 0
	}
	got = decodeLink(decodeLinkSettings(b, nwords), nil)
	if got.SpeedMbps != 0 || got.Duplex != "Unknown" || got.Port != "Other" || got.PartnerPause != "" || got.Partner != nil || got.MDIX != "" {
		t.Errorf("unknowns: %+v", got)
	}
}

func TestGSetLayout(t *testing.T) {
	b := make([]byte, ethtoolCmdSize)
	ne.PutUint32(b[4:], 1<<5|1<<6|1<<9)                  // supported: 1000baseT/Full, Autoneg, MII
	ne.PutUint32(b[8:], 1<<5)                            // advertising
	ne.PutUint16(b[12:], 0x86a0)                         // speed low: 100000 = 0x186a0
	ne.PutUint16(b[28:], 0x1)                            // speed_hi
	b[14], b[15], b[16], b[17], b[18] = 1, 0x03, 4, 1, 0 // full, FIBRE, phy 4, external, autoneg off
	got := decodeLink(decodeGSet(b), nil)
	want := LinkInfo{SpeedMbps: 100000, Duplex: "Full", Port: "FIBRE", Supported: []string{"1000baseT/Full"},
		Advertised: []string{"1000baseT/Full"}, Ports: []string{"MII"}, SupportedPause: "No", AdvertisedPause: "No",
		SupportsAutoneg: true, PHYAD: 4, Transceiver: "external"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
}

func TestFeatureBlocksLayout(t *testing.T) {
	// Two blocks: feature 33 is available, requested and active; feature 0
	// never changes.
	b := make([]byte, 32)
	ne.PutUint32(b[12:], 1)    // block 0 never_changed bit 0
	ne.PutUint32(b[16:], 1<<1) // block 1 available bit 1
	ne.PutUint32(b[20:], 1<<1) // requested
	ne.PutUint32(b[24:], 1<<1) // active
	st := decodeFeatureBlocks(b, 40)
	if !st[0].neverChanged || st[0].available || !st[0].fixed() {
		t.Errorf("feature 0: %+v", st[0])
	}
	if s := st[33]; !s.available || !s.requested || !s.active || s.fixed() {
		t.Errorf("feature 33: %+v", s)
	}
	if st[1] != (featureState{}) || st[32] != (featureState{}) {
		t.Errorf("neighbours set: %+v %+v", st[1], st[32])
	}
}

func TestSplitStrings(t *testing.T) {
	data := make([]byte, 3*gstringLen)
	copy(data, "toeplitz")
	copy(data[gstringLen:], "xor")
	copy(data[2*gstringLen:], "a-name-exactly-thirty-two-bytes!")
	got := splitStrings(data, 3)
	if !reflect.DeepEqual(got, []string{"toeplitz", "xor", "a-name-exactly-thirty-two-bytes!"}) {
		t.Errorf("%q", got)
	}
}
