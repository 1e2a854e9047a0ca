//go:build !small

package xdpcount

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"

	"linerate/internal/testenv"
	"linerate/internal/usage"
)

// testFrame builds an Ethernet frame: IPv4 with the given protocol,
// header length (words), fragment field and destination port.
func testFrame(etherType uint16, ihl int, proto byte, frag uint16, dport uint16, payload int) []byte {
	ipLen := ihl * 4
	f := make([]byte, 14+ipLen+8+payload)
	binary.BigEndian.PutUint16(f[12:], etherType)
	ip := f[14:]
	ip[0] = 0x40 | byte(ihl)
	binary.BigEndian.PutUint16(ip[2:], uint16(len(f)-14))
	binary.BigEndian.PutUint16(ip[6:], frag)
	ip[8], ip[9] = 64, proto
	udp := ip[ipLen:]
	binary.BigEndian.PutUint16(udp[0:], 9)
	binary.BigEndian.PutUint16(udp[2:], dport)
	return f
}

// TestProgram runs the program on crafted packets with
// BPF_PROG_TEST_RUN: no interface, no traffic.
func TestProgram(t *testing.T) {
	testenv.RequireRoot(t)
	udp := testFrame(0x0800, 5, 17, 0x4000, 5300, 18)
	ipv6 := testFrame(0x86dd, 5, 17, 0, 5300, 18)
	ipv6[14] = 0x60
	badVersion := testFrame(0x0800, 5, 17, 0, 5300, 18)
	badVersion[14] = 0x65
	cases := []struct {
		name    string
		frame   []byte
		matches bool // counted by a counter for port 5300
		any     bool // counted by a counter for every port
	}{
		{"udp to port", udp, true, true},
		{"udp with options", testFrame(0x0800, 7, 17, 0, 5300, 18), true, true},
		{"udp full size", testFrame(0x0800, 5, 17, 0, 5300, 1472), true, true},
		{"udp other port", testFrame(0x0800, 5, 17, 0, 5301, 18), false, true},
		{"udp port byte-swapped", testFrame(0x0800, 5, 17, 0, 0xb414, 18), false, true},
		{"later fragment", testFrame(0x0800, 5, 17, 0x0010, 5300, 18), false, true},
		{"tcp", testFrame(0x0800, 5, 6, 0, 5300, 18), false, false},
		{"ipv6", ipv6, false, false},
		{"arp", testFrame(0x0806, 5, 17, 0, 5300, 18), false, false},
		{"ip version 6 in v4 frame", badVersion, false, false},
		{"header length 4", testFrame(0x0800, 4, 17, 0, 5300, 18), false, false},
		{"truncated ip", udp[:30], false, false},
		{"udp header cut", testFrame(0x0800, 5, 17, 0, 5300, 18)[:38], false, true},
	}
	for _, mode := range []struct {
		port uint16
		drop bool
	}{{5300, false}, {5300, true}, {0, false}, {0, true}} {
		counts, prog, err := load(mode.port, mode.drop)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		var wantPkts, wantBytes uint64
		for _, c := range cases {
			counted := c.matches
			if mode.port == 0 {
				counted = c.any
			}
			want := uint32(actionPass)
			if counted {
				wantPkts++
				wantBytes += uint64(len(c.frame))
				if mode.drop {
					want = actionDrop
				}
			}
			got, err := prog.Run(&ebpf.RunOptions{Data: c.frame})
			if err != nil {
				t.Fatalf("port %d drop %v, %s: run: %v", mode.port, mode.drop, c.name, err)
			}
			if got != want {
				t.Errorf("port %d drop %v, %s: action %d, want %d", mode.port, mode.drop, c.name, got, want)
			}
		}
		queues, err := queueCounts(counts, MaxQueues)
		if err != nil {
			t.Fatal(err)
		}
		// BPF_PROG_TEST_RUN without a context runs on queue 0.
		pkts, bytes := queues[0].Packets, queues[0].Bytes
		for q, c := range queues[1:] {
			if c != (QueueCount{}) {
				t.Errorf("port %d drop %v: queue %d counted %+v, want nothing", mode.port, mode.drop, q+1, c)
			}
		}
		if pkts != wantPkts || bytes != wantBytes {
			t.Errorf("port %d drop %v: counted %d packets, %d bytes; want %d, %d", mode.port, mode.drop, pkts, bytes, wantPkts, wantBytes)
		}
		prog.Close()
		counts.Close()
	}
}

func TestAttachBadIndex(t *testing.T) {
	if _, err := Attach(0, 0, false); err == nil || !usage.Is(err) {
		t.Errorf("ifindex 0: %v, want a usage error", err)
	}
}

// TestAttachModes: a driver with native XDP (veth) takes the counter in
// the driver; one without (ifb) leaves it generic and the counter says
// why native was refused.
func TestAttachModes(t *testing.T) {
	testenv.RequireRoot(t)
	a, b := testenv.NewNetNS(t), testenv.NewNetNS(t)
	testenv.Veth(t, a, "lrx0", b, "lrx1", 1)
	h := a.Netlink(t)
	if err := h.LinkAdd(&netlink.Ifb{LinkAttrs: netlink.LinkAttrs{Name: "lrxd"}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		iface      string
		mode       Mode
		nativeErrs bool
	}{{"lrx0", Native, false}, {"lrxd", Generic, true}} {
		l, err := h.LinkByName(c.iface)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
		err = a.Do(func() error {
			cn, err := Attach(l.Attrs().Index, 0, false)
			if err != nil {
				return err
			}
			defer cn.Close()
			if cn.Mode() != c.mode || (cn.NativeError() != nil) != c.nativeErrs {
				t.Errorf("%s: mode %s, native refused: %v; want %s", c.iface, cn.Mode(), cn.NativeError(), c.mode)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.iface, err)
		}
	}
}
