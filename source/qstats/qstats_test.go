package qstats

import (
	"errors"
	"net"
	"testing"

	"github.com/mdlayher/netlink"

	"linerate/internal/testenv"
)

// queueMsg is one message of a qstats dump: a queue's type, id and
// packets (packets written in size bytes, as nla_put_uint does).
func queueMsg(t *testing.T, typ, id uint32, packets uint64, size int) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrIfindex, 2)
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
		queueMsg(t, queueTypeRx, 1, 500, 4),
		queueMsg(t, 1, 0, 99, 4), // a TX queue
		queueMsg(t, queueTypeRx, 0, 1<<40, 8),
		queueMsg(t, queueTypeRx, 3, 7, 4),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0] != 1<<40 || got[1] != 500 || got[2] != 0 || got[3] != 7 {
		t.Errorf("parseRx = %v, want [2^40 500 0 7]", got)
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
