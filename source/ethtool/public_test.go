package ethtool

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// parsed is what a parser made of a text: the value and its warnings.
type parsed struct {
	v   any
	ws  []Warning
	err error
}

// parseFile runs the parser of a capture file name ("g.txt") on text.
func parseFile(file string, text []byte) parsed {
	r := bytes.NewReader(text)
	wrap := func(v any, ws []Warning, err error) parsed { return parsed{v, ws, err} }
	switch file {
	case "i.txt":
		return wrap(ParseDriverInfo(r))
	case "link.txt":
		return wrap(ParseLinkInfo(r))
	case "k.txt":
		return wrap(ParseFeatures(r))
	case "g.txt":
		return wrap(ParseRings(r))
	case "l.txt":
		return wrap(ParseChannels(r))
	case "c.txt":
		return wrap(ParseCoalesce(r))
	case "x.txt":
		return wrap(ParseRSS(r))
	case "S.txt":
		return wrap(ParseStats(r))
	}
	ft, h, err := ParseFlowHash(r)
	if err != nil {
		return parsed{err: err}
	}
	return parsed{v: [2]any{ft, h}}
}

// warnedAt lists "LINE FIELD" of each warning, for comparing.
func warnedAt(ws []Warning) []string {
	var out []string
	for _, w := range ws {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%02d %s", w.Line, w.Field)))
	}
	return out
}

// Real outputs people published (testdata/public/README.md names each
// source and what ethtool printed it): each reads as what it says, and the
// only warnings are for what people typed into them.
func TestPublicOutputs(t *testing.T) {
	all := map[string]bool{}
	dirs, _ := filepath.Glob("testdata/public/*/*.txt")
	for _, d := range dirs {
		all[d] = true
	}
	coalesce := func(adaptiveRX, adaptiveTX bool, kv ...any) Coalesce {
		c := Coalesce{AdaptiveRX: adaptiveRX, AdaptiveTX: adaptiveTX, Params: map[string]uint32{}}
		for i := 0; i < len(kv); i += 2 {
			c.Params[kv[i].(string)] = uint32(kv[i+1].(int))
		}
		return c
	}
	gigModes := []string{"10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Full"}
	for _, tc := range []struct {
		file     string
		check    func(v any) bool // nil: compare with want
		want     any
		warnings []string // "LINE FIELD" of each
	}{
		{file: "talos9167-e1000e/g.txt", want: Rings{RXMax: 4096, TXMax: 4096, TX: 256},
			warnings: []string{"09 Current hardware settings RX"}},
		{file: "talos9167-e1000e/i.txt", want: DriverInfo{Driver: "e1000e", Version: "6.11.8", Firmware: "5.6-2", BusInfo: "0000:03:00.0",
			SupportsStatistics: true, SupportsTest: true, SupportsEEPROM: true, SupportsRegisterDump: true, SupportsPrivFlags: true}},
		{file: "tuned726/c.txt", want: coalesce(false, false, "rx-usecs", 3, "tx-usecs", 3)},
		{file: "vyos4919/c.txt", want: coalesce(true, true, "rx-usecs", 8, "rx-frames", 128, "tx-usecs", 8, "tx-frames", 128)},
		{file: "sockperf21/c.txt", want: coalesce(true, false,
			"stats-block-usecs", 0, "sample-interval", 0, "pkt-rate-low", 400000, "pkt-rate-high", 450000,
			"rx-usecs", 16, "rx-frames", 88, "rx-usecs-irq", 0, "rx-frames-irq", 0,
			"tx-usecs", 0, "tx-frames", 0, "tx-usecs-irq", 0, "tx-frames-irq", 0,
			"rx-usecs-low", 0, "rx-frames-low", 0, "tx-usecs-low", 0, "tx-frames-low", 0,
			"rx-usecs-high", 128, "rx-frames-high", 0, "tx-usecs-high", 0, "tx-frames-high", 0)},
		{file: "onload208-sfc/x.txt", want: RSS{RXRings: 4, Key: make([]byte, 40),
			HashFuncs: map[string]bool{"toeplitz": true, "xor": false, "crc32": false}},
			warnings: []string{"05 indirection table"}},
		{file: "onload208-sfc/l.txt", want: Channels{MaxOther: 1, MaxCombined: 31, Other: 1, Combined: 4}},
		{file: "r8169-pr1132/g.txt", want: Rings{RXMax: 255, TXMax: 255}, warnings: []string{"00 Current hardware settings"}},
		{file: "ethq7-be2net/i.txt", want: DriverInfo{Driver: "be2net", Version: "11.4.0.0", Firmware: "4.9.311.20", BusInfo: "0000:04:00.0",
			SupportsStatistics: true, SupportsTest: true, SupportsEEPROM: true, SupportsPrivFlags: true}},
		{file: "ethq7-be2net/S.txt", check: func(v any) bool {
			s := v.(Stats)
			return len(s) == 37 && s.Map()["rx_address_filtered"] == 5164994 && s[36].Name == "roce_drops_crc"
		}},
		{file: "ethq6-bnx2x/S.txt", check: func(v any) bool {
			s := v.(Stats)
			return len(s) == 34 && s.Map()["[0]: rx_bytes"] == 209487403324 && s.Map()["[1]: tpa_bytes"] == 203487947080
		}},
		{file: "netdata17015-virtio/S.txt", check: func(v any) bool {
			s := v.(Stats)
			return len(s) == 28 && s.Map()["rx_queue_1_packets"] == 341999
		}},
		{file: "firewalla649/k.txt", check: func(v any) bool {
			fs := v.(Features)
			ipv4, _ := fs.Get("tx-checksum-ipv4")
			gro, _ := fs.Get("generic-receive-offload")
			return len(fs) == 17 && ipv4 == (Feature{Name: "tx-checksum-ipv4", On: true, Parent: "tx-checksumming"}) && gro.On && !gro.Fixed
		}},
		{file: "ethtool-124a3c0/link.txt", want: LinkInfo{SpeedMbps: 1000, Duplex: "Full", Autoneg: true, Port: "Twisted Pair", Link: true,
			Supported: gigModes, Advertised: gigModes, Ports: []string{"TP"}, SupportedPause: "No", AdvertisedPause: "No",
			SupportsAutoneg: true, AdvertisedAutoneg: true, Transceiver: "internal", MDIX: "on (auto)"}},
		{file: "fpp2381/link.txt", check: func(v any) bool {
			l := v.(LinkInfo)
			return l.SpeedMbps == 0 && l.Duplex == "Unknown" && l.Autoneg && l.PHYAD == 1 && l.Transceiver == "external" &&
				!l.Link && reflect.DeepEqual(l.Ports, []string{"TP", "MII"}) && len(l.Supported) == 6 && l.SupportedPause == "Transmit-only"
		}},
		{file: "openwrt22126/link.txt", check: func(v any) bool {
			l := v.(LinkInfo)
			return l.Port == "FIBRE" && !l.Autoneg && l.SupportsAutoneg && !l.AdvertisedAutoneg && !l.Link &&
				reflect.DeepEqual(l.Advertised, []string{"10000baseSR/Full"}) && len(l.Supported) == 3
		}},
		{file: "opennic29/link.txt", want: LinkInfo{Link: true}},
	} {
		delete(all, filepath.Join("testdata/public", tc.file))
		text, err := os.ReadFile(filepath.Join("testdata/public", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		p := parseFile(filepath.Base(tc.file), text)
		if p.err != nil {
			t.Errorf("%s: %v", tc.file, p.err)
			continue
		}
		if tc.check != nil && !tc.check(p.v) || tc.check == nil && !reflect.DeepEqual(p.v, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.file, p.v, tc.want)
		}
		if got := warnedAt(p.ws); !reflect.DeepEqual(got, tc.warnings) {
			t.Errorf("%s: warnings %v (%v), want %v", tc.file, got, p.ws, tc.warnings)
		}
	}
	for f := range all {
		t.Errorf("%s is not tested", f)
	}
}

// The layouts ethtool releases print (layouts.md), from the format
// strings of ethtool's source: each reads without a warning unless noted.
func TestReleaseLayouts(t *testing.T) {
	for _, tc := range []struct {
		name, file, text string
		want             any
		warnings         []string
	}{
		{"ring 4.x ioctl", "g.txt", "Ring parameters for eth0:\nPre-set maximums:\nRX:\t\t4096\nRX Mini:\t0\nRX Jumbo:\t0\nTX:\t\t4096\nCurrent hardware settings:\nRX:\t\t256\nRX Mini:\t0\nRX Jumbo:\t0\nTX:\t\t256\n\n",
			Rings{RXMax: 4096, TXMax: 4096, RX: 256, TX: 256}, nil},
		{"ring 6.1 netlink, tcp-data-split unknown(3)", "g.txt", "Ring parameters for eth0:\nPre-set maximums:\nRX:\t\t4096\nRX Mini:\tn/a\nRX Jumbo:\tn/a\nTX:\t\t4096\nCurrent hardware settings:\nRX:\t\t1024\nRX Mini:\tn/a\nRX Jumbo:\tn/a\nTX:\t\t1024\nRX Buf Len:\t\t2048\nCQE Size:\t\tn/a\nTX Push:\toff\nTCP data split:\tunknown(3)\n\n",
			Rings{RXMax: 4096, TXMax: 4096, RX: 1024, TX: 1024}, nil},
		{"ring after 6.11, HDS thresh in both sections", "g.txt", "Ring parameters for eth0:\nPre-set maximums:\nRX:\t\t\t4096\nRX Mini:\t\tn/a\nRX Jumbo:\t\tn/a\nTX:\t\t\t4096\nTX push buff len:\tn/a\nHDS thresh:\t\t1023\nCurrent hardware settings:\nRX:\t\t\t1024\nRX Mini:\t\tn/a\nRX Jumbo:\t\tn/a\nTX:\t\t\t512\nRX Buf Len:\t\tn/a\nCQE Size:\t\tn/a\nTX Push:\t\toff\nRX Push:\t\toff\nTX push buff len:\tn/a\nTCP data split:\t\ton\nHDS thresh:\t\t0\n",
			Rings{RXMax: 4096, TXMax: 4096, RX: 1024, TX: 512}, nil},
		{"coalesce 6.3-6.8, tx-aggr-time-usecs without its colon", "c.txt", "Coalesce parameters for eth0:\nAdaptive RX: off  TX: off\nrx-usecs:\t50\n\nCQE mode RX: n/a  TX: n/a\n\ntx-aggr-max-bytes:\tn/a\ntx-aggr-max-frames:\tn/a\ntx-aggr-time-usecs\tn/a\n\n",
			Coalesce{Params: map[string]uint32{"rx-usecs": 50}}, nil},
		{"coalesce 5.0 ioctl, rx-frames-low", "c.txt", "Coalesce parameters for eth0:\nAdaptive RX: off  TX: off\nrx-frames-low: 7\nrx-frames-high: 9\n",
			Coalesce{Params: map[string]uint32{"rx-frames-low": 7, "rx-frames-high": 9}}, nil},
		{"rss 6.9 input transformation", "x.txt", "\nRX flow hash indirection table for eth0 with 2 RX ring(s):\n    0:      0     1     0     1\nRSS hash key:\nOperation not supported\nRSS hash function:\n    toeplitz: on\n    xor: off\nRSS input transformation:\n    symmetric-xor: on\n",
			RSS{RXRings: 2, Indirection: []uint32{0, 1, 0, 1}, HashFuncs: map[string]bool{"toeplitz": true, "xor": false}}, nil},
		{"rss without hash functions", "x.txt", "RX flow hash indirection table for eth0 with 1 RX ring(s):\nOperation not supported\nRSS hash key:\nOperation not supported\nRSS hash function:\n    Operation not supported\n",
			RSS{RXRings: 1}, nil},
		{"flow hash 6.9 GTP TEID", "n-udp4.txt", "UDP over IPV4 flows use these fields for computing Hash flow key:\nIP SA\nIP DA\nGTP TEID\n\n",
			[2]any{UDP4, HashIPSrc | HashIPDst | HashGTPTEID}, nil},
		{"link 6.10 hex PHYAD", "link.txt", "Settings for eth0:\n\tSpeed: 1000Mb/s\n\tLanes: 1\n\tDuplex: Full\n\tPHYAD: 1f\n\tLink Down Events: 2\n\tLink detected: yes\n",
			LinkInfo{SpeedMbps: 1000, Duplex: "Full", PHYAD: 31, Link: true}, nil},
		{"link PHYAD 10, decimal or hex", "link.txt", "Settings for eth0:\n\tPHYAD: 10\n\tLink detected: yes\n",
			LinkInfo{Link: true}, []string{"02 PHYAD"}},
		{"features before ethtool 3.5", "k.txt", "Offload parameters for eth0:\nrx-checksumming: on\ntcp-segmentation-offload: off\n",
			Features{{Name: "rx-checksumming", On: true}, {Name: "tcp-segmentation-offload"}}, nil},
		{"stats with standard groups (5.13 --all-groups)", "S.txt", "NIC statistics:\n     rx_packets: 5\nStandard stats for eth0:\neth-mac-FramesTransmittedOK: 7\n",
			Stats{{"rx_packets", 5}, {"eth-mac-FramesTransmittedOK", 7}}, nil},
	} {
		p := parseFile(tc.file, []byte(tc.text))
		if p.err != nil {
			t.Errorf("%s: %v", tc.name, p.err)
			continue
		}
		if !reflect.DeepEqual(p.v, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, p.v, tc.want)
		}
		if got := warnedAt(p.ws); !reflect.DeepEqual(got, tc.warnings) {
			t.Errorf("%s: warnings %v, want %v", tc.name, p.ws, tc.warnings)
		}
	}
}
