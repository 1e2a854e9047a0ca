package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"linerate/box"
	"linerate/ceiling"
	"linerate/source/ethtool"
)

// ceilCM4 is the Compute Module 4 of seeds/000: bcmgenet eth0 and four igb
// ports on one Gen2 x1 link at MPS 128.
func ceilCM4() *box.Box {
	rp := "0000:00:00.0"
	b := &box.Box{Meta: box.Meta{Host: "cm4", Source: "capture cm4"}}
	b.NICs = append(b.NICs, box.NIC{Name: "eth0", Kind: "physical", MTU: 1500,
		Driver: &ethtool.DriverInfo{Driver: "bcmgenet"}, Link: &ethtool.LinkInfo{SpeedMbps: 1000}})
	b.PCIe = append(b.PCIe, box.PCIeDevice{Addr: rp, RootPort: true, CurSpeedGTs: 5, CurWidth: 1, MaxSpeedGTs: 5, MaxWidth: 1, MPSSupported: 512, MPS: 128, MRRS: 512})
	for i, fn := range []string{"0", "1", "2", "3"} {
		addr := "0000:01:00." + fn
		b.NICs = append(b.NICs, box.NIC{Name: "eth" + string(rune('1'+i)), Kind: "physical", MTU: 1500, PCIAddr: addr, PCIePath: []string{addr, rp},
			Driver: &ethtool.DriverInfo{Driver: "igb"}, Link: &ethtool.LinkInfo{SpeedMbps: 1000}})
		b.PCIe = append(b.PCIe, box.PCIeDevice{Addr: addr, Upstream: rp, CurSpeedGTs: 5, CurWidth: 1, MaxSpeedGTs: 5, MaxWidth: 4, MPSSupported: 512, MPS: 128, MRRS: 512})
	}
	b.NICs = append(b.NICs, box.NIC{Name: "wg0", Kind: "virtual", MTU: 1420, Unsupported: map[string]string{"link": "not supported by this driver"}})
	return b
}

func TestCeilingBox(t *testing.T) {
	var buf bytes.Buffer
	if err := CeilingBox(&buf, ceiling.ForBox(ceilCM4())); err != nil {
		t.Fatal(err)
	}
	out := ceilSquash(buf.String())
	for _, w := range []string{
		"ceiling of cm4 (capture cm4)",
		"eth0  bcmgenet",
		"1518 B: 81,274 fps, 941.5 Mb/s goodput",
		"1,488,095 fps",
		"not on PCIe",
		"under 0000:00:00.0",
		"wg0: line rate unknown: link settings: not supported by this driver",
		"PCIe link under 0000:00:00.0: eth1, eth2, eth3, eth4",
		"0000:00:00.0 > 0000:01:00, Gen2 x1 (5 GT/s, 8b/10b); both ends allow Gen2 x1",
		"MPS 128 (512 supported along the path), MRRS 512",
		"498.3 MB/s each way",
		"receive     272,535 fps = 3.35 Gb/s line, 3.16 Gb/s goodput",
		"ports       4 Gb/s together",
		"iperf TCP in  3.08 Gb/s goodput",
		"WARNING: eth1, eth2, eth3, eth4 can receive 4 Gb/s together",
		"note: MPS is 128 but every device on the path supports 512",
		"assumptions:",
	} {
		if !strings.Contains(out, ceilSquash(w)) {
			t.Errorf("output lacks %q:\n%s", w, buf.String())
		}
	}
}

// ceilSquash turns every run of spaces into one, so checks do not depend
// on column widths.
func ceilSquash(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' }), " ")
}

func TestCeilingAnswer(t *testing.T) {
	f, err := ceiling.PayloadFrame(88, ceiling.Headers{Proto: ceiling.TCP})
	if err != nil {
		t.Fatal(err)
	}
	bus := ceiling.Bus{Link: ceiling.Link{Gen: 2, Lanes: 1}, MPS: 512, MRRS: 512}
	a, err := ceiling.Ask(ceiling.Query{SpeedBps: 1e9, Frames: []ceiling.Frame{f}, Bus: &bus})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := CeilingAnswer(&buf, a); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, w := range []string{
		"Ethernet at 1 Gb/s",
		"146-byte frame: TCP/IPv4 payload 88 + 40 of IP and TCP headers + 14 Ethernet header + 4 FCS",
		"753,012",
		"PCIe Gen2 x1 (5 GT/s, 8b/10b), MPS 512, MRRS 512, 64-bit DMA addresses",
		"1G PORTS",
		"bytes on the link per 146-byte frame, received:",
		"frame data",
		"total",
		"iperf-style TCP stream",
		"measured 3.42 Gb/s",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	buf.Reset()
	if err := CeilingJSON(&buf, a); err != nil {
		t.Fatal(err)
	}
	var back ceiling.Answer
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Rates) != 1 || back.Rates[0].PPS != 753_012 || len(back.Bus) != 1 || back.Bus[0].Bus.MPS != 512 {
		t.Errorf("JSON round trip: %+v", back.Rates)
	}
}

type ceilFailWriter struct{ n int }

func (f *ceilFailWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestCeilingWriteError(t *testing.T) {
	w := &ceilFailWriter{}
	if err := CeilingBox(w, ceiling.ForBox(ceilCM4())); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("CeilingBox: %v", err)
	}
	if w.n != 1 {
		t.Errorf("kept writing after the first failure: %d writes", w.n)
	}
}
