package ethtool

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Parsing real ethtool 6.1 output and rendering it again gives the same
// bytes, for every item whose lines linerate models completely.
func TestRenderMatchesEthtool(t *testing.T) {
	ifaceOf := map[string]string{"virtio_net": "eth0", "veth": "va", "lo": "lo"}
	for _, file := range []string{
		"virtio_net/i.txt", "virtio_net/link.txt", "virtio_net/k.txt", "virtio_net/l.txt",
		"virtio_net/x.txt", "virtio_net/S.txt", "virtio_net/n-tcp4.txt", "virtio_net/n-udp6.txt",
		"veth/i.txt", "veth/link.txt", "veth/k.txt", "veth/l.txt", "veth/S.txt",
		"lo/link.txt",
		"seed004/n-tcp4.txt", "seed004/n-udp4.txt", "seed004/x.txt", "seed004/x-equal2.txt",
	} {
		raw, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		dir, item := filepath.Split(file)
		iface := ifaceOf[filepath.Clean(dir)]
		if iface == "" {
			iface = "enp4s0"
		}
		got, err := renderFile(iface, item, string(raw))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if got != string(raw) {
			t.Errorf("%s: rendered text differs\n--- got\n%s--- want\n%s", file, got, raw)
		}
	}
}

// renderFile parses text as the item file and renders it back.
func renderFile(iface, item, text string) (string, error) {
	r := strings.NewReader(text)
	switch item {
	case "i.txt":
		v, _, err := ParseDriverInfo(r)
		return RenderDriverInfo(iface, v), err
	case "link.txt":
		v, _, err := ParseLinkInfo(r)
		return RenderLinkInfo(iface, v), err
	case "k.txt":
		v, _, err := ParseFeatures(r)
		return RenderFeatures(iface, v), err
	case "l.txt":
		v, _, err := ParseChannels(r)
		return RenderChannels(iface, v), err
	case "g.txt":
		v, _, err := ParseRings(r)
		return RenderRings(iface, v), err
	case "c.txt":
		v, _, err := ParseCoalesce(r)
		return RenderCoalesce(iface, v), err
	case "x.txt", "x-equal2.txt":
		v, _, err := ParseRSS(r)
		return RenderRSS(iface, v), err
	case "S.txt":
		v, _, err := ParseStats(r)
		return RenderStats(iface, v), err
	}
	ft, h, err := ParseFlowHash(r)
	return RenderFlowHash(iface, ft, h), err
}

// Rings and coalescing print lines linerate does not model (ethtool 6.1's
// "RX Buf Len", "TX Push", adaptive TX as n/a): their values still read
// back the same after rendering.
func TestRenderValuesOfPartialItems(t *testing.T) {
	for _, file := range []string{"virtio_net/g.txt", "virtio_net/c.txt", "seed004/g.txt", "seed004/c.txt", "seed004/l.txt"} {
		raw, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		item := filepath.Base(file)
		once, err := renderFile("e", item, string(raw))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		twice, err := renderFile("e", item, once)
		if err != nil || twice != once {
			t.Errorf("%s: second rendering differs (%v)\n%s---\n%s", file, err, once, twice)
		}
	}
	// The text of a ring or channel the driver lacks is n/a, as in 6.x.
	if got := RenderChannels("enp4s0", Channels{MaxOther: 1, MaxCombined: 2, Other: 1, Combined: 2}); !strings.Contains(got, "RX:\t\tn/a\nTX:\t\tn/a\nOther:\t\t1\nCombined:\t2\n") {
		t.Errorf("channels:\n%s", got)
	}
}

func TestRoundTrip(t *testing.T) {
	const iface = "enp4s0"
	igbLink := LinkInfo{
		SpeedMbps: 1000, Duplex: "Full", Autoneg: true, Port: "Twisted Pair", Link: true,
		Supported:  []string{"10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Full"},
		Advertised: []string{"10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Full"},
		Partner:    []string{"10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Full"},
		Ports:      []string{"TP", "MII"}, SupportedPause: "Symmetric", AdvertisedPause: "Symmetric",
		PartnerPause: "Symmetric Receive-only", SupportsAutoneg: true, AdvertisedAutoneg: true,
		PartnerAutoneg: true, SupportedFEC: []string{"None", "RS"}, PHYAD: 1, Transceiver: "internal",
		MDIX: "on (auto)",
	}
	for _, l := range []LinkInfo{igbLink, {Link: true}, {Duplex: "Unknown", Port: "Other", SupportedPause: "No", AdvertisedPause: "No", Transceiver: "internal"}} {
		got, _, err := ParseLinkInfo(strings.NewReader(RenderLinkInfo(iface, l)))
		if err != nil || !reflect.DeepEqual(got, l) {
			t.Errorf("link: %v\n got %+v\nwant %+v\n%s", err, got, l, RenderLinkInfo(iface, l))
		}
	}
	// ethtool wraps link modes one speed per line.
	if !strings.Contains(RenderLinkInfo(iface, igbLink), "\tSupported link modes:   10baseT/Half 10baseT/Full\n\t                        100baseT/Half 100baseT/Full\n\t                        1000baseT/Full\n") {
		t.Errorf("link modes not wrapped as ethtool does:\n%s", RenderLinkInfo(iface, igbLink))
	}

	drv := DriverInfo{Driver: "igb", Version: "5.4.0-k", Firmware: "0. 6-1", BusInfo: "0000:04:00.0", SupportsStatistics: true, SupportsTest: true, SupportsEEPROM: true, SupportsRegisterDump: true}
	if got, _, err := ParseDriverInfo(strings.NewReader(RenderDriverInfo(iface, drv))); err != nil || got != drv {
		t.Errorf("driver: %+v, %v", got, err)
	}

	feats := Features{
		{Name: "rx-checksumming", On: true},
		{Name: "tx-checksumming", On: true},
		{Name: "tx-checksum-ipv4", On: true, Parent: "tx-checksumming"},
		{Name: "tx-checksum-sctp", Fixed: true, Parent: "tx-checksumming"},
		{Name: "generic-receive-offload", Requested: "on"},
		{Name: "highdma", On: true, Fixed: true},
	}
	if got, _, err := ParseFeatures(strings.NewReader(RenderFeatures(iface, feats))); err != nil || !reflect.DeepEqual(got, feats) {
		t.Errorf("features: %v\n got %+v\nwant %+v", err, got, feats)
	}

	for _, r := range []Rings{{RXMax: 4096, TXMax: 4096, RX: 256, TX: 256}, {RXMax: 511, RXJumboMax: 255, TXMax: 511, RX: 200, RXJumbo: 100, TX: 511}, {}} {
		if got, _, err := ParseRings(strings.NewReader(RenderRings(iface, r))); err != nil || got != r {
			t.Errorf("rings: %+v, %v; want %+v", got, err, r)
		}
	}
	for _, c := range []Channels{{MaxOther: 1, MaxCombined: 2, Other: 1, Combined: 2}, {MaxRX: 8, MaxTX: 8, RX: 1, TX: 8}} {
		if got, _, err := ParseChannels(strings.NewReader(RenderChannels(iface, c))); err != nil || got != c {
			t.Errorf("channels: %+v, %v; want %+v", got, err, c)
		}
	}

	full := Coalesce{AdaptiveRX: true, Params: map[string]uint32{}}
	for i, p := range CoalesceParams {
		full.Params[p] = uint32(100 + i)
	}
	for _, c := range []Coalesce{full, {AdaptiveTX: true, Params: map[string]uint32{"rx-usecs": 3, "tx-frames-low": 9}}, {Params: map[string]uint32{}}} {
		if got, _, err := ParseCoalesce(strings.NewReader(RenderCoalesce(iface, c))); err != nil || !reflect.DeepEqual(got, c) {
			t.Errorf("coalesce: %v\n got %+v\nwant %+v", err, got, c)
		}
	}

	for _, r := range []RSS{
		{RXRings: 4, Indirection: EqualTable(128, 4), Key: []byte{0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2}, HashFuncs: map[string]bool{"toeplitz": true, "xor": false, "crc32": false}},
		{RXRings: 3, Indirection: EqualTable(13, 3), HashFuncs: map[string]bool{"toeplitz": false, "xor": true}},
		{RXRings: 1},
	} {
		if got, _, err := ParseRSS(strings.NewReader(RenderRSS(iface, r))); err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("rss: %v\n got %+v\nwant %+v\n%s", err, got, r, RenderRSS(iface, r))
		}
	}

	for _, ft := range FlowTypes {
		for _, h := range []FlowHash{0, HashIPSrc | HashIPDst, HashL2DA | HashVLAN | HashL3Proto | HashIPSrc | HashIPDst | HashL4B01 | HashL4B23, HashDiscard} {
			gotFT, got, err := ParseFlowHash(strings.NewReader(RenderFlowHash(iface, ft, h)))
			if err != nil || gotFT != ft || got != h {
				t.Errorf("flow hash %s %x: got %s %x, %v", ft, h, gotFT, got, err)
			}
		}
	}

	stats := Stats{{"rx_packets", 1}, {"rx_queue_0_packets", 3808489796}, {"[0]: tx_bytes", 18446744073709551615}}
	if got, _, err := ParseStats(strings.NewReader(RenderStats(iface, stats))); err != nil || !reflect.DeepEqual(got, stats) {
		t.Errorf("stats: %+v, %v", got, err)
	}
	if _, _, err := ParseStats(strings.NewReader(RenderStats(iface, nil))); !errors.Is(err, ErrNotSupported) {
		t.Errorf("no stats: %v, want ErrNotSupported", err)
	}
}

func TestRenderError(t *testing.T) {
	unsupported := RenderError(errors.New("x: ETHTOOL_GCOALESCE: " + ErrNotSupported.Error()))
	if unsupported == "Operation not supported\n" {
		t.Error("an error that does not wrap ErrNotSupported rendered as unsupported")
	}
	for _, tc := range []struct {
		err  error
		want error
	}{
		{errorsJoin("eth0: ETHTOOL_GCOALESCE", ErrNotSupported), ErrNotSupported},
		{errorsJoin("eth0", ErrNoInterface), ErrFailed},
	} {
		_, _, err := ParseCoalesce(strings.NewReader(RenderError(tc.err)))
		if !errors.Is(err, tc.want) {
			t.Errorf("%v: read back as %v, want %v", tc.err, err, tc.want)
		}
	}
}

func errorsJoin(msg string, err error) error { return &wrapped{msg, err} }

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg + ": " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }
