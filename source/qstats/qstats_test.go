package qstats

import (
	"errors"
	"net"
	"testing"

	"github.com/mdlayher/netlink"

	"linerate/internal/testenv"
)

// queueMsg is one message of a qstats dump: a queue's interface, type, id and
// packets (packets written in size bytes, as nla_put_uint does).
func queueMsg(t testing.TB, ifindex, typ, id uint32, packets uint64, size int) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrIfindex, ifindex)
	ae.Uint32(attrQueueType, typ)
	ae.Uint32(attrQueueID, id)
	if size == 4 {
		ae.Uint32(attrRxPackets, uint32(packets))
	} else {
		ae.Uint64(attrRxPackets, packets)
	}
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return append(genlHeader(netdevCmdQstatsGet, 1), b...)
}

func TestParseRx(t *testing.T) {
	got, err := parseRx([][]byte{
		queueMsg(t, 2, queueTypeRx, 1, 500, 4),
		queueMsg(t, 2, 1, 0, 99, 4), // a TX queue
		queueMsg(t, 2, queueTypeRx, 0, 1<<40, 8),
		queueMsg(t, 2, queueTypeRx, 3, 7, 4),
		queueMsg(t, 5, queueTypeRx, 1, 11, 4), // another interface
	})
	if err != nil {
		t.Fatal(err)
	}
	if q := got[2]; len(q) != 4 || q[0] != 1<<40 || q[1] != 500 || q[2] != 0 || q[3] != 7 {
		t.Errorf("parseRx = %v, want [2^40 500 0 7] for interface 2", got)
	}
	if q := got[5]; len(q) != 2 || q[1] != 11 {
		t.Errorf("parseRx = %v, want [0 11] for interface 5", got)
	}
	if _, err := parseRx([][]byte{{1, 2}}); err == nil {
		t.Errorf("a 2-byte message parsed")
	}
	if got, err := parseRx(nil); err != nil || got != nil {
		t.Errorf("no queues: %v %v", got, err)
	}
}

// TestRxPacketsLive reads (reads only) this host's interfaces: each
// either reports its receive queues or says it has no qstats; a veth, in
// a namespace the test made, has none.
func TestRxPacketsLive(t *testing.T) {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifi := range ifs {
		got, err := RxPackets(ifi.Index)
		if err != nil && !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v", ifi.Name, err)
		}
		t.Logf("%s: %v %v", ifi.Name, got, err)
	}
	// One dump of every interface names the same ones.
	if c, err := Dial(); err == nil {
		all, err := c.RxPacketsAll()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, ifi := range ifs {
			_, err := RxPackets(ifi.Index)
			if _, ok := all[ifi.Index]; ok != (err == nil) {
				t.Errorf("%s: in the dump of all %v, alone: %v", ifi.Name, ok, err)
			}
		}
	} else if !errors.Is(err, ErrUnsupported) {
		t.Fatal(err)
	}
	testenv.RequireRoot(t)
	a, b := testenv.NewNetNS(t), testenv.NewNetNS(t)
	testenv.Veth(t, a, "qsa", b, "qsb", 2)
	err = a.Do(func() error {
		ifi, err := net.InterfaceByName("qsa")
		if err != nil {
			return err
		}
		_, err = RxPackets(ifi.Index)
		return err
	})
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("a veth's qstats: %v, want ErrUnsupported", err)
	}
}

// FuzzParseRx: a dump's messages come from the kernel, but the parser
// never panics on what it is given.
func FuzzParseRx(f *testing.F) {
	f.Add(queueMsg(f, 2, queueTypeRx, 1, 500, 4))
	f.Add(queueMsg(f, 3, queueTypeRx, 1023, 1<<40, 8))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseRx([][]byte{b})
		for _, q := range got {
			if len(q) > maxQueues {
				t.Fatalf("%d queues", len(q))
			}
		}
		_ = err
	})
}
