package pci

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// cap is one capability to place in a built config space.
type capability struct {
	at   int
	id   byte
	body map[int]uint32 // offset inside the capability → value
	size map[int]int    // offset → width in bytes (2 or 4); 4 when absent
}

// build lays out a config space of n bytes whose capability list holds caps
// in order.
func build(n int, caps ...capability) []byte {
	b := make([]byte, n)
	binary.LittleEndian.PutUint16(b[0:], 0x8086) // vendor
	binary.LittleEndian.PutUint16(b[2:], 0x150e) // device: 82580
	if len(caps) == 0 {
		return b
	}
	binary.LittleEndian.PutUint16(b[regStatus:], statusCapBit)
	b[regCapPtr] = byte(caps[0].at)
	for i, c := range caps {
		if c.at+2 > n {
			continue
		}
		b[c.at] = c.id
		if i+1 < len(caps) {
			b[c.at+1] = byte(caps[i+1].at)
		}
		for off, v := range c.body {
			if c.at+off+4 > n {
				continue
			}
			if c.size[off] == 2 {
				binary.LittleEndian.PutUint16(b[c.at+off:], uint16(v))
			} else {
				binary.LittleEndian.PutUint32(b[c.at+off:], v)
			}
		}
	}
	return b
}

// express builds a PCI Express capability at offset at.
func express(at, portType int, devCap, devCtl, lnkCap, lnkSta uint32) capability {
	return capability{at: at, id: capIDExpress,
		body: map[int]uint32{expFlags: uint32(portType<<4 | 2), expDevCap: devCap, expDevCtl: devCtl, expLnkCap: lnkCap, expLnkSta: lnkSta},
		size: map[int]int{expFlags: 2, expDevCtl: 2, expLnkSta: 2},
	}
}

var (
	pm  = capability{at: 0x40, id: 0x01} // power management
	msi = capability{at: 0x50, id: 0x05}
	// An 82580 (x4 card) in the CM4's x1 slot: DevCap MPS 512 (code 2),
	// DevCtl MPS 128 (code 0) and MRRS 512 (code 2), LnkCap 5 GT/s x4,
	// LnkSta 5 GT/s x1.
	nic = express(0x70, TypeEndpoint, 0x2, 2<<12|0<<5, 4<<4|2, 1<<4|2)
	// The BCM2711 root port: MPS 256 supported and set, 5 GT/s x1.
	rootPort = express(0xac, TypeRootPort, 0x1, 2<<12|1<<5, 1<<4|2, 1<<4|2)
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want Express
		err  error
	}{
		{
			name: "82580 behind PM and MSI",
			b:    build(256, pm, msi, nic),
			want: Express{PortType: 0, MPSSupported: 512, MPS: 128, MRRS: 512, MaxSpeedGTs: 5, MaxWidth: 4, CurSpeedGTs: 5, CurWidth: 1, Offset: 0x70},
		},
		{
			name: "root port",
			b:    build(4096, pm, rootPort),
			want: Express{PortType: 4, RootPort: true, MPSSupported: 256, MPS: 256, MRRS: 512, MaxSpeedGTs: 5, MaxWidth: 1, CurSpeedGTs: 5, CurWidth: 1, Offset: 0xac},
		},
		{
			name: "gen4 x16 downgraded to gen1 x8, MPS 4096, MRRS 4096",
			b:    build(256, express(0x40, TypeEndpoint, 0x5, 5<<12|5<<5, 16<<4|4, 8<<4|1)),
			want: Express{MPSSupported: 4096, MPS: 4096, MRRS: 4096, MaxSpeedGTs: 16, MaxWidth: 16, CurSpeedGTs: 2.5, CurWidth: 8, Offset: 0x40},
		},
		{
			name: "gen5 and gen6 codes",
			b:    build(256, express(0x40, TypeDownstream, 0, 0, 6<<0|2<<4, 5|2<<4)),
			want: Express{PortType: TypeDownstream, MPSSupported: 128, MPS: 128, MRRS: 128, MaxSpeedGTs: 64, MaxWidth: 2, CurSpeedGTs: 32, CurWidth: 2, Offset: 0x40},
		},
		{
			name: "root complex integrated endpoint has no link",
			b:    build(256, express(0x40, TypeRCEndpoint, 0x1, 1<<5, 0, 0)),
			want: Express{PortType: TypeRCEndpoint, MPSSupported: 256, MPS: 256, MRRS: 128, Offset: 0x40},
		},
		{name: "unprivileged 64-byte read", b: build(256, pm, msi, nic)[:64], err: ErrShort},
		{name: "cut inside the capability", b: build(256, pm, msi, nic)[:0x78], err: ErrShort},
		{name: "cut inside the header", b: build(256, nic)[:32], err: ErrShort},
		{name: "no capability list", b: build(256), err: ErrNoExpress},
		{name: "list without PCIe", b: build(256, pm, msi), err: ErrNoExpress},
		{name: "pointer into the header", b: build(256, capability{at: 0x20, id: 1}), err: ErrNoExpress},
		{name: "loop", b: build(256, pm, msi, capability{at: 0x40, id: 1}), err: ErrNoExpress},
	}
	for _, tt := range tests {
		got, err := ParseConfig(tt.b)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("%s: err %v, want %v", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", tt.name, got, err, tt.want)
		}
	}
}

// TestParseConfigRealBytes runs on config spaces copied from the build
// machine, a virtio VM whose functions are conventional PCI: the virtio NIC
// has a capability list (vendor-specific and MSI-X) without PCI Express,
// and the host bridge has no list at all.
func TestParseConfigRealBytes(t *testing.T) {
	for _, f := range []string{"virtio-net.config", "host-bridge.config"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseConfig(b); !errors.Is(err, ErrNoExpress) {
			t.Errorf("%s: %v, want ErrNoExpress", f, err)
		}
		if _, err := ParseConfig(b[:64]); err == nil {
			t.Errorf("%s cut to 64 bytes: no error", f)
		}
	}
}

func TestParseSpeed(t *testing.T) {
	for in, want := range map[string]float64{"5.0 GT/s PCIe": 5, "2.5 GT/s": 2.5, "8.0 GT/s PCIe\n": 8, "16.0 GT/s PCIe": 16, "64.0 GT/s PCIe": 64, "5 GT/s": 5} {
		if got, err := ParseSpeed(in); err != nil || got != want {
			t.Errorf("ParseSpeed(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "Unknown", "Unknown speed", "5.0", "x GT/s", "5.0 Gb/s", "-1 GT/s"} {
		if _, err := ParseSpeed(bad); err == nil {
			t.Errorf("ParseSpeed(%q): no error", bad)
		}
	}
}

// TestLiveConfig decodes the config space of every PCI function of this
// machine and, where lspci is installed, checks the result against
// `lspci -vv`. Reading past 64 bytes needs root.
func TestLiveConfig(t *testing.T) {
	paths, _ := filepath.Glob("/sys/bus/pci/devices/*/config")
	if len(paths) == 0 {
		t.Skip("no PCI devices in /sys")
	}
	if os.Geteuid() != 0 {
		t.Skip("reading config space past 64 bytes needs root")
	}
	lspci, _ := exec.LookPath("lspci")
	for _, p := range paths {
		addr := filepath.Base(filepath.Dir(p))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		e, err := ParseConfig(b)
		if err != nil && !errors.Is(err, ErrNoExpress) {
			t.Errorf("%s: %v", addr, err)
			continue
		}
		t.Logf("%s: %d bytes: %+v %v", addr, len(b), e, err)
		if lspci == "" {
			continue
		}
		out, lerr := exec.Command(lspci, "-s", addr, "-vv").Output()
		if lerr != nil {
			t.Logf("lspci -s %s: %v", addr, lerr)
			continue
		}
		compareLspci(t, addr, string(out), e, err)
	}
}

var (
	reExpress = regexp.MustCompile(`Capabilities: \[([0-9a-f]+)\] Express`)
	reLnkCap  = regexp.MustCompile(`LnkCap:.*Speed ([0-9.]+)GT/s, Width x(\d+)`)
	reLnkSta  = regexp.MustCompile(`LnkSta:\s+Speed ([0-9.]+)GT/s[^,]*, Width x(\d+)`)
	reDevCap  = regexp.MustCompile(`DevCap:\s+MaxPayload (\d+) bytes`)
	reDevCtl  = regexp.MustCompile(`MaxPayload (\d+) bytes, MaxReadReq (\d+) bytes`)
)

func compareLspci(t *testing.T, addr, out string, e Express, err error) {
	t.Helper()
	m := reExpress.FindStringSubmatch(out)
	if m == nil {
		if err == nil {
			t.Errorf("%s: decoded a PCIe capability that lspci does not show", addr)
		}
		return
	}
	if err != nil {
		t.Errorf("%s: lspci shows a PCIe capability at %s, ParseConfig: %v", addr, m[1], err)
		return
	}
	if off, _ := strconv.ParseInt(m[1], 16, 0); int(off) != e.Offset {
		t.Errorf("%s: capability at %#x, lspci says %s", addr, e.Offset, m[1])
	}
	check := func(what string, re *regexp.Regexp, i int, got float64) {
		if m := re.FindStringSubmatch(out); m != nil {
			if want, _ := strconv.ParseFloat(m[i], 64); want != got {
				t.Errorf("%s: %s = %v, lspci says %v", addr, what, got, want)
			}
		}
	}
	check("max speed", reLnkCap, 1, e.MaxSpeedGTs)
	check("max width", reLnkCap, 2, float64(e.MaxWidth))
	check("speed", reLnkSta, 1, e.CurSpeedGTs)
	check("width", reLnkSta, 2, float64(e.CurWidth))
	check("MPS supported", reDevCap, 1, float64(e.MPSSupported))
	check("MPS", reDevCtl, 1, float64(e.MPS))
	check("MRRS", reDevCtl, 2, float64(e.MRRS))
}
