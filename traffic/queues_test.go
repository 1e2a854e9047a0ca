package traffic

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"linerate/internal/testenv"
	"linerate/results"
	"linerate/source/ethtool"
	"linerate/source/qstats"
)

// meterOnce is what a queue meter on local's interface, without an XDP
// counter, counts between two reads with nothing sent in between.
func meterOnce(local netip.Addr) *results.QueueStat {
	m := newQueueMeter(local, nil)
	defer m.close()
	m.mark(false)
	m.mark(true)
	return m.result()
}

// meterHost finds an interface of this host with an address whose
// queues counts (how many receive queues a counter reports, ok false:
// none) and checks that a queue meter on it takes that counter, reading
// only (nothing is sent). It skips when the host has no such interface.
func meterHost(t *testing.T, counter string, queues func(net.Interface) (int, bool)) {
	ifs, _ := net.Interfaces()
	for _, ifi := range ifs {
		n, ok := queues(ifi)
		addrs, _ := ifi.Addrs()
		if !ok || len(addrs) == 0 {
			continue
		}
		pn, ok := addrs[0].(*net.IPNet)
		if !ok {
			continue
		}
		local, _ := netip.AddrFromSlice(pn.IP)
		q := meterOnce(local.Unmap())
		t.Logf("%s: %+v", ifi.Name, q)
		if q.Error != "" || q.Counter != counter || len(q.Packets) != n {
			t.Errorf("meter on %s: %+v, want %d queues counted by %s", ifi.Name, q, n, counter)
		}
		return
	}
	t.Skipf("no interface of this host with an address has per-queue receive counters by %s", counter)
}

// TestQueueMeterQstats: a driver that reports its queues over netlink
// (virtio_net, mlx5, bnxt...) is read so.
func TestQueueMeterQstats(t *testing.T) {
	meterHost(t, results.CounterQstats, func(ifi net.Interface) (int, bool) {
		q, err := qstats.RxPackets(ifi.Index)
		return len(q), err == nil
	})
}

// TestQueueMeterEthtool: a driver with per-queue counters in ethtool -S
// (igb, ixgbe, i40e...) and no qstats is read so.
func TestQueueMeterEthtool(t *testing.T) {
	et, err := ethtool.NewLive()
	if err != nil {
		t.Skip(err)
	}
	defer et.Close()
	meterHost(t, results.CounterEthtool, func(ifi net.Interface) (int, bool) {
		di, err := et.DriverInfo(ifi.Name)
		if err != nil {
			return 0, false
		}
		st, err := et.Stats(ifi.Name)
		if _, qerr := qstats.RxPackets(ifi.Index); err != nil || qerr == nil {
			return 0, false // qstats come first
		}
		q := ethtool.RxQueuePackets(st, di.Driver)
		return len(q), q != nil
	})
}

// TestQueueMeterNoCounters: a veth without an XDP counter has no
// per-queue receive counters, and the result says what would count them.
func TestQueueMeterNoCounters(t *testing.T) {
	testenv.RequireRoot(t)
	l := newRingLab(t)
	var q *results.QueueStat
	err := l.b.Do(func() error {
		q = meterOnce(l.dst)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Packets) != 0 || q.Interface != "lrs1" || q.Error == "" || !strings.HasPrefix(q.Error, "interface lrs1 has no per-queue") || !strings.Contains(q.Error, "--xdp") {
		t.Errorf("a veth's queues without --xdp: %+v", q)
	}
}
