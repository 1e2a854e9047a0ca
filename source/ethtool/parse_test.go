package ethtool

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func open(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestParseDriverInfo(t *testing.T) {
	for _, tc := range []struct {
		file string
		want DriverInfo
	}{
		{"virtio_net/i.txt", DriverInfo{Driver: "virtio_net", Version: "1.0.0", BusInfo: "0000:00:03.0", SupportsStatistics: true}},
		{"veth/i.txt", DriverInfo{Driver: "veth", Version: "1.0", SupportsStatistics: true}},
	} {
		got, _, err := ParseDriverInfo(open(t, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.file, got, tc.want)
		}
	}
}

func TestParseLinkInfo(t *testing.T) {
	for _, tc := range []struct {
		file string
		want LinkInfo
	}{
		{"virtio_net/link.txt", LinkInfo{
			Duplex: "Unknown", Port: "Other", Link: true, SupportedPause: "No",
			AdvertisedPause: "No", Transceiver: "internal",
		}},
		{"veth/link.txt", LinkInfo{
			SpeedMbps: 10000, Duplex: "Full", Port: "Twisted Pair", Link: true,
			SupportedPause: "No", AdvertisedPause: "No", Transceiver: "internal", MDIX: "Unknown",
		}},
		{"lo/link.txt", LinkInfo{Link: true}},
		{"bcmgenet/link-partial.txt", LinkInfo{
			Ports:           []string{"TP", "MII"},
			Supported:       []string{"10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Half", "1000baseT/Full"},
			Advertised:      []string{"10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Half", "1000baseT/Full"},
			SupportedPause:  "Symmetric Receive-only",
			AdvertisedPause: "Symmetric Receive-only",
			SupportsAutoneg: true,
		}},
	} {
		got, _, err := ParseLinkInfo(open(t, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.file, got, tc.want)
		}
	}
	if li, _, _ := ParseLinkInfo(open(t, "lo/link.txt")); li.HasSettings() {
		t.Error("lo reports link settings; ethtool printed only the link state")
	}
}

func TestParseLinkInfoPartnerAndWakeOn(t *testing.T) {
	// Lines linerate does not model (wake-on, message level with its
	// continuation, an error line ethtool printed to stderr) are skipped.
	text := "Settings for enp4s0:\n" +
		"\tSupported ports: [ TP ]\n" +
		"\tSupported link modes:   10baseT/Half 10baseT/Full\n" +
		"\t                        1000baseT/Full\n" +
		"\tSupported pause frame use: Symmetric\n" +
		"\tSupports auto-negotiation: Yes\n" +
		"\tSupported FEC modes: Not reported\n" +
		"\tAdvertised link modes:  1000baseT/Full\n" +
		"\tAdvertised pause frame use: Symmetric\n" +
		"\tAdvertised auto-negotiation: Yes\n" +
		"\tAdvertised FEC modes: Not reported\n" +
		"\tLink partner advertised link modes:  100baseT/Full\n" +
		"\t                                     1000baseT/Full\n" +
		"\tLink partner advertised pause frame use: Transmit-only\n" +
		"\tLink partner advertised auto-negotiation: Yes\n" +
		"\tLink partner advertised FEC modes: Not reported\n" +
		"\tSpeed: 1000Mb/s\n\tDuplex: Full\n\tAuto-negotiation: on\n\tPort: Twisted Pair\n" +
		"\tPHYAD: 1\n\tTransceiver: internal\n\tMDI-X: off (auto)\n" +
		"netlink error: Operation not permitted\n" +
		"\tSupports Wake-on: pumbg\n\tWake-on: g\n" +
		"        Current message level: 0x00000007 (7)\n" +
		"                               drv probe link\n" +
		"\tLink detected: no (No cable)\n"
	got, _, err := ParseLinkInfo(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := LinkInfo{
		SpeedMbps: 1000, Duplex: "Full", Autoneg: true, Port: "Twisted Pair",
		Supported:  []string{"10baseT/Half", "10baseT/Full", "1000baseT/Full"},
		Advertised: []string{"1000baseT/Full"}, Partner: []string{"100baseT/Full", "1000baseT/Full"},
		Ports: []string{"TP"}, SupportedPause: "Symmetric", AdvertisedPause: "Symmetric",
		PartnerPause: "Transmit-only", SupportsAutoneg: true, AdvertisedAutoneg: true,
		PartnerAutoneg: true, PHYAD: 1, Transceiver: "internal", MDIX: "off (auto)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
}

// ethtool's stderr (unbuffered) can come before its stdout in a capture of
// both: error lines before the title are skipped.
func TestParseLinkInfoStderrFirst(t *testing.T) {
	text := "netlink error: Operation not permitted\nSettings for eth0:\n\tLink detected: yes\n"
	got, _, err := ParseLinkInfo(strings.NewReader(text))
	if err != nil || !reflect.DeepEqual(got, LinkInfo{Link: true}) {
		t.Errorf("got %+v, %v", got, err)
	}
	nonroot, _, err := ParseLinkInfo(open(t, "virtio_net/link-nonroot.txt"))
	root, _, _ := ParseLinkInfo(open(t, "virtio_net/link.txt"))
	if err != nil || !reflect.DeepEqual(nonroot, root) {
		t.Errorf("unprivileged output: %+v, %v; want %+v", nonroot, err, root)
	}
	_, _, err = ParseLinkInfo(strings.NewReader("netlink error: No such device\n"))
	if !errors.Is(err, ErrFailed) {
		t.Errorf("only an error line: %v, want ErrFailed", err)
	}
}

func TestParseFeatures(t *testing.T) {
	fs, _, err := ParseFeatures(open(t, "virtio_net/k.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 63 {
		t.Errorf("got %d features, want the 63 lines ethtool printed", len(fs))
	}
	for _, want := range []Feature{
		{Name: "rx-checksumming", On: true, Fixed: true},
		{Name: "tx-checksumming", On: true},
		{Name: "tx-checksum-ipv4", Fixed: true, Parent: "tx-checksumming"},
		{Name: "tx-checksum-ip-generic", On: true, Parent: "tx-checksumming"},
		{Name: "tx-tcp6-segmentation", On: true, Parent: "tcp-segmentation-offload"},
		{Name: "generic-receive-offload", On: true},
		{Name: "receive-hashing", Fixed: true},
		{Name: "rx-gro-hw", On: true, Fixed: true},
		{Name: "hsr-dup-offload", Fixed: true},
	} {
		got, ok := fs.Get(want.Name)
		if !ok || got != want {
			t.Errorf("%s: got %+v (found %v), want %+v", want.Name, got, ok, want)
		}
	}
	// A group whose features are all fixed is fixed; one with a
	// changeable feature is not.
	lo := "Features for lo:\ntx-checksumming: on\n\ttx-checksum-ipv4: off [fixed]\n\ttx-checksum-ip-generic: on [fixed]\n" +
		"scatter-gather: on\n\ttx-scatter-gather: on [fixed]\n\ttx-scatter-gather-fraglist: on\n" +
		"rx-gro-list: off [requested on]\n"
	fs, _, err = ParseFeatures(strings.NewReader(lo))
	if err != nil {
		t.Fatal(err)
	}
	want := Features{
		{Name: "tx-checksumming", On: true, Fixed: true},
		{Name: "tx-checksum-ipv4", Fixed: true, Parent: "tx-checksumming"},
		{Name: "tx-checksum-ip-generic", On: true, Fixed: true, Parent: "tx-checksumming"},
		{Name: "scatter-gather", On: true},
		{Name: "tx-scatter-gather", On: true, Fixed: true, Parent: "scatter-gather"},
		{Name: "tx-scatter-gather-fraglist", On: true, Parent: "scatter-gather"},
		{Name: "rx-gro-list", Requested: "on"},
	}
	if !reflect.DeepEqual(fs, want) {
		t.Errorf("\n got %+v\nwant %+v", fs, want)
	}
	// The seed's `ethtool -k | grep hashing`.
	fs, _, err = ParseFeatures(open(t, "seed004/k-grep-hashing.txt"))
	if err != nil || len(fs) != 1 || fs[0] != (Feature{Name: "receive-hashing", On: true}) {
		t.Errorf("seed004 grep: %+v, %v", fs, err)
	}
}

func TestParseRingsChannels(t *testing.T) {
	for _, tc := range []struct {
		file string
		want Rings
	}{
		{"virtio_net/g.txt", Rings{RXMax: 256, TXMax: 256, RX: 256, TX: 256}},
		{"seed004/g.txt", Rings{RXMax: 4096, TXMax: 4096, RX: 256, TX: 256}},
	} {
		got, _, err := ParseRings(open(t, tc.file))
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.file, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		file string
		want Channels
	}{
		{"virtio_net/l.txt", Channels{MaxCombined: 1, Combined: 1}},
		{"veth/l.txt", Channels{MaxRX: 4, MaxTX: 4, RX: 4, TX: 4}},
		{"seed004/l.txt", Channels{MaxOther: 1, MaxCombined: 2, Other: 1, Combined: 2}},
	} {
		got, _, err := ParseChannels(open(t, tc.file))
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.file, got, err, tc.want)
		}
	}
	if c, _, _ := ParseChannels(open(t, "seed004/l.txt")); c.RXQueues() != 2 {
		t.Errorf("seed004: %d rx queues, want 2", c.RXQueues())
	}
}

func TestParseCoalesce(t *testing.T) {
	got, _, err := ParseCoalesce(open(t, "virtio_net/c.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := Coalesce{Params: map[string]uint32{"rx-usecs": 0, "rx-frames": 1, "tx-usecs": 0, "tx-frames": 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("virtio_net:\n got %+v\nwant %+v", got, want)
	}
	got, _, err = ParseCoalesce(open(t, "seed004/c.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Params) != len(CoalesceParams) || got.Params["rx-usecs"] != 3 || got.Params["tx-usecs"] != 3 ||
		got.Params["rx-frames"] != 0 || got.AdaptiveRX || got.AdaptiveTX {
		t.Errorf("seed004: %+v", got)
	}
	// ethtool 6.1 prints rx-frame-low for rx-frames-low.
	got, _, err = ParseCoalesce(strings.NewReader("Coalesce parameters for x:\nAdaptive RX: on  TX: off\nrx-frame-low: 7\ntx-aggr-max-bytes:\t9\n"))
	if err != nil || got.Params["rx-frames-low"] != 7 || !got.AdaptiveRX || len(got.Params) != 1 {
		t.Errorf("rx-frame-low: %+v, %v", got, err)
	}
}

func TestParseRSS(t *testing.T) {
	got, _, err := ParseRSS(open(t, "virtio_net/x.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := RSS{RXRings: 1, HashFuncs: map[string]bool{"toeplitz": true, "xor": false, "crc32": false}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("virtio_net:\n got %+v\nwant %+v", got, want)
	}
	got, _, err = ParseRSS(open(t, "seed004/x.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got.RXRings != 2 || len(got.Indirection) != 128 || got.Key != nil || !got.HashFuncs["toeplitz"] {
		t.Errorf("seed004: %+v", got)
	}
	if share := got.QueueShare(); !reflect.DeepEqual(share, []int{64, 64}) || got.Indirection[63] != 0 || got.Indirection[64] != 1 {
		t.Errorf("seed004: halves %v, entry 63=%d 64=%d", share, got.Indirection[63], got.Indirection[64])
	}
	got, _, err = ParseRSS(open(t, "seed004/x-equal2.txt"))
	if err != nil || !reflect.DeepEqual(got.Indirection, EqualTable(128, 2)) {
		t.Errorf("seed004 after equal 2: %v, %v", got.Indirection, err)
	}
	// A key, and the table-only output of drivers without ETHTOOL_GRSSH.
	key := "RX flow hash indirection table for e with 4 RX ring(s):\n    0:      0     1     2     3\nRSS hash key:\n6d:5a:56:da\nRSS hash function:\n    toeplitz: on\nRSS input transformation:\n    symmetric-xor: off\n"
	got, _, err = ParseRSS(strings.NewReader(key))
	if err != nil || !reflect.DeepEqual(got.Key, []byte{0x6d, 0x5a, 0x56, 0xda}) || len(got.HashFuncs) != 1 {
		t.Errorf("key: %+v, %v", got, err)
	}
	got, _, err = ParseRSS(strings.NewReader("RX flow hash indirection table for e with 2 RX ring(s):\n    0:      0     1\n"))
	if err != nil || !reflect.DeepEqual(got, RSS{RXRings: 2, Indirection: []uint32{0, 1}}) {
		t.Errorf("table only: %+v, %v", got, err)
	}
}

func TestParseFlowHash(t *testing.T) {
	for _, tc := range []struct {
		file string
		ft   FlowType
		want FlowHash
	}{
		{"seed004/n-tcp4.txt", TCP4, HashIPSrc | HashIPDst | HashL4B01 | HashL4B23},
		{"seed004/n-udp4.txt", UDP4, HashIPSrc | HashIPDst},
		{"virtio_net/n-tcp4.txt", TCP4, 0},
		{"virtio_net/n-udp6.txt", UDP6, 0},
	} {
		ft, h, err := ParseFlowHash(open(t, tc.file))
		if err != nil || ft != tc.ft || h != tc.want {
			t.Errorf("%s: got %s %s, %v; want %s %s", tc.file, ft, h.Letters(), err, tc.ft, tc.want.Letters())
		}
	}
	ft, h, err := ParseFlowHash(strings.NewReader("UDP over IPV6 flows - All matching flows discarded on RX\n"))
	if err != nil || ft != UDP6 || h != HashDiscard {
		t.Errorf("discard: %s %x, %v", ft, h, err)
	}
}

func TestParseStats(t *testing.T) {
	st, _, err := ParseStats(open(t, "veth/S.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 37 || st[0].Name != "peer_ifindex" || st[36].Name != "tx_queue_3_xdp_xmit_errors" {
		t.Errorf("veth: %d stats, first %+v", len(st), st[0])
	}
	st, _, err = ParseStats(open(t, "virtio_net/S.txt"))
	if err != nil || len(st) != 20 || st.Map()["rx_kicks"] != 408 {
		t.Errorf("virtio_net: %d stats, rx_kicks %d, %v", len(st), st.Map()["rx_kicks"], err)
	}
	// Some drivers put colons and spaces in names.
	st, _, err = ParseStats(strings.NewReader("NIC statistics:\n     [0]: rx_bytes: 12\n     rx errors: 18446744073709551615\n"))
	want := Stats{{"[0]: rx_bytes", 12}, {"rx errors", 18446744073709551615}}
	if err != nil || !reflect.DeepEqual(st, want) {
		t.Errorf("odd names: %+v, %v", st, err)
	}
}

// Every error text ethtool printed here is "not supported".
func TestParseUnsupported(t *testing.T) {
	parsers := map[string]func(*os.File) error{
		"i":      func(f *os.File) error { _, _, err := ParseDriverInfo(f); return err },
		"g":      func(f *os.File) error { _, _, err := ParseRings(f); return err },
		"c":      func(f *os.File) error { _, _, err := ParseCoalesce(f); return err },
		"l":      func(f *os.File) error { _, _, err := ParseChannels(f); return err },
		"x":      func(f *os.File) error { _, _, err := ParseRSS(f); return err },
		"S":      func(f *os.File) error { _, _, err := ParseStats(f); return err },
		"n-tcp4": func(f *os.File) error { _, _, err := ParseFlowHash(f); return err },
	}
	for _, file := range []string{
		"lo/i.txt", "lo/g.txt", "lo/c.txt", "lo/l.txt", "lo/x.txt", "lo/S.txt", "lo/n-tcp4.txt",
		"veth/g.txt", "veth/c.txt", "veth/x.txt", "veth/n-tcp4.txt",
	} {
		item := strings.TrimSuffix(filepath.Base(file), ".txt")
		if err := parsers[item](open(t, file)); !errors.Is(err, ErrNotSupported) {
			t.Errorf("%s: got %v, want ErrNotSupported", file, err)
		}
	}
	if _, _, err := ParseLinkInfo(strings.NewReader("Settings for x:\nNo data available\n")); !errors.Is(err, ErrNotSupported) {
		t.Errorf("No data available: %v", err)
	}
}

// A line a parser does not understand makes the value it held unknown
// and is a warning naming it; the rest of the text is read.
func TestParseDegrades(t *testing.T) {
	for _, tc := range []struct {
		name, file, text string
		want             any
		line             int
		field            string
	}{
		{"driver line without colon", "i.txt", "driver: igb\nhello world\nbus-info: 0000:01:00.0\n",
			DriverInfo{Driver: "igb", BusInfo: "0000:01:00.0"}, 2, ""},
		{"driver flag", "i.txt", "driver: igb\nsupports-test: perhaps\nsupports-statistics: yes\n",
			DriverInfo{Driver: "igb", SupportsStatistics: true}, 2, "supports-test"},
		{"link speed", "link.txt", "Settings for e:\n\tSpeed: fast\n\tDuplex: Full\n\tLink detected: yes\n",
			LinkInfo{Duplex: "Full", Link: true}, 2, "Speed"},
		{"link stray line", "link.txt", "Settings for e:\nsomething else\n\tLink detected: yes\n",
			LinkInfo{Link: true}, 2, ""},
		{"feature state", "k.txt", "Features for e:\nrx-checksumming: maybe\ntx-checksumming: on\n",
			Features{{Name: "tx-checksumming", On: true}}, 2, "rx-checksumming"},
		{"feature marker", "k.txt", "Features for e:\nrx-gro-list: on [sometimes]\n",
			Features{{Name: "rx-gro-list", On: true}}, 2, "rx-gro-list"},
		{"orphan child", "k.txt", "Features for e:\n\ttx-checksum-ipv4: on\n",
			Features{{Name: "tx-checksum-ipv4", On: true}}, 2, "tx-checksum-ipv4"},
		{"rings value", "g.txt", "Ring parameters for e:\nPre-set maximums:\nRX:\t\tlots\nTX:\t\t4096\nCurrent hardware settings:\nRX:\t\t256\nTX:\t\t256\n",
			Rings{TXMax: 4096, RX: 256, TX: 256}, 3, "Pre-set maximums RX"},
		{"rings one section", "g.txt", "Ring parameters for e:\nCurrent hardware settings:\nRX:\t\t256\n",
			Rings{RX: 256}, 0, "Pre-set maximums"},
		{"channels before section", "l.txt", "Channel parameters for e:\nRX:\t\t1\nPre-set maximums:\nCombined:\t4\nCurrent hardware settings:\nCombined:\t2\n",
			Channels{MaxCombined: 4, Combined: 2}, 2, ""},
		{"coalesce value", "c.txt", "Coalesce parameters for e:\nAdaptive RX: off  TX: off\nrx-usecs: -3\nrx-frames: 4\n",
			Coalesce{Params: map[string]uint32{"rx-frames": 4}}, 3, "rx-usecs"},
		{"coalesce adaptive", "c.txt", "Coalesce parameters for e:\nAdaptive RX: sometimes  TX: off\nrx-usecs: 3\n",
			Coalesce{Params: map[string]uint32{"rx-usecs": 3}}, 2, "Adaptive RX"},
		{"rss row", "x.txt", "RX flow hash indirection table for e with 2 RX ring(s):\n    0:      0     1\n    4:      0\nRSS hash function:\n    toeplitz: on\n",
			RSS{RXRings: 2, HashFuncs: map[string]bool{"toeplitz": true}}, 3, "indirection table"},
		{"rss key", "x.txt", "RX flow hash indirection table for e with 1 RX ring(s):\n    0:      0\nRSS hash key:\nzz:top\n",
			RSS{RXRings: 1, Indirection: []uint32{0}}, 4, "RSS hash key"},
		{"stats value", "S.txt", "NIC statistics:\n     rx_packets: many\n     tx_packets: 7\n",
			Stats{{"tx_packets", 7}}, 2, "rx_packets"},
		{"stats stray line", "S.txt", "NIC statistics:\n     rx_packets 5\n     tx_packets: 7\n",
			Stats{{"tx_packets", 7}}, 2, ""},
	} {
		got := parseFile(tc.file, []byte(tc.text))
		if got.err != nil {
			t.Errorf("%s: %v, want the rest read", tc.name, got.err)
			continue
		}
		if !reflect.DeepEqual(got.v, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got.v, tc.want)
		}
		if len(got.ws) != 1 || got.ws[0].Line != tc.line || got.ws[0].Field != tc.field {
			t.Errorf("%s: warnings %+v, want one at line %d about %q", tc.name, got.ws, tc.line, tc.field)
		}
	}
}

// Text with nothing a parser can use makes the whole item unknown: a
// *SyntaxError naming the line.
func TestParseUnusable(t *testing.T) {
	for _, tc := range []struct {
		name, file, text string
		line             int
	}{
		{"rings no sections", "g.txt", "RX: 4\n", 1},
		{"driver", "i.txt", "hello world\n", 1},
		{"features", "k.txt", "Features for e:\nnothing here\n", 2},
		{"coalesce", "c.txt", "Coalesce parameters for e:\n", 1},
		{"rss title", "x.txt", "    0:      0     1\n", 1},
		{"flow field", "n-tcp4.txt", "TCP over IPV4 flows use these fields for computing Hash flow key:\nIP SA\nthe moon\n", 3},
		{"stats title", "S.txt", "     rx_packets: 5\n", 1},
		{"link title", "link.txt", "\tSpeed: 1000Mb/s\n", 1},
		{"empty", "S.txt", "\n\n", 1},
		{"a line of 5 MiB", "S.txt", "NIC statistics:\n     rx_packets: 5\n" + strings.Repeat("x", 5<<20) + "\n", 3},
	} {
		err := parseFile(tc.file, []byte(tc.text)).err
		var se *SyntaxError
		if !errors.As(err, &se) || se.Line != tc.line {
			t.Errorf("%s: got %v, want a syntax error at line %d", tc.name, err, tc.line)
		}
		if errors.Is(err, ErrNotSupported) {
			t.Errorf("%s: garbage reported as unsupported", tc.name)
		}
	}
}

func TestParseFailureIsNotUnsupported(t *testing.T) {
	for _, text := range []string{
		"Cannot get driver information: No such device\n",
		"netlink error: no device matches name (offset 24)\nnetlink error: No such device\n",
		"ethtool failed: eth9: no such interface\n",
	} {
		_, _, err := ParseDriverInfo(strings.NewReader(text))
		if !errors.Is(err, ErrFailed) || errors.Is(err, ErrNotSupported) {
			t.Errorf("%q: got %v, want ErrFailed", text, err)
		}
	}
}

// Error output as a terminal shows it (title first) and ethtool 4.x's
// two-line perror form both mean "not supported".
func TestErrorOutputForms(t *testing.T) {
	for name, text := range map[string]string{
		"terminal order": "Channel parameters for eth0:\nCannot get device channel parameters: Operation not supported\n",
		"ethtool 4.19":   "Cannot get device channel parameters\n: Operation not supported\n",
		"stderr first":   "Cannot get device channel parameters: Operation not supported\nChannel parameters for eth0:\n",
	} {
		_, _, err := ParseChannels(strings.NewReader(text))
		if !errors.Is(err, ErrNotSupported) {
			t.Errorf("%s: err = %v, want ErrNotSupported", name, err)
		}
	}
}

// noWarnings fails the test for every warning: output of a real ethtool
// that linerate knows should read without any.
func noWarnings(t *testing.T, what string, ws []Warning) {
	t.Helper()
	for _, w := range ws {
		t.Errorf("%s: %s", what, w)
	}
}
