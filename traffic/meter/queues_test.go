package meter

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/results"
	"linerate/source/ethtool"
	"linerate/source/qstats"
)

// meterOnce is what a queue meter on local's interface, without an XDP
// counter, counts between two reads with nothing sent in between.
func meterOnce(local netip.Addr) *results.QueueStat {
	m := NewQueues(local, nil)
	defer m.Close()
	m.mark(false)
	m.mark(true)
	return m.Result()
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

// TestQueueMeterNoCounters: a veth of several queues without an XDP
// counter has no per-queue receive counters, and the result says what
// would count them.
func TestQueueMeterNoCounters(t *testing.T) {
	testenv.RequireRoot(t)
	a, b := testenv.NewNetNS(t), testenv.NewNetNS(t)
	testenv.Veth(t, a, "lrq0", b, "lrq1", 2)
	b.AddAddr(t, "lrq1", "10.201.1.2/24")
	var q *results.QueueStat
	err := b.Do(func() error {
		q = meterOnce(netip.MustParseAddr("10.201.1.2"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Packets) != 0 || q.Interface != "lrq1" || q.Error == "" || !strings.HasPrefix(q.Error, "interface lrq1 has no per-queue") || !strings.Contains(q.Error, "--xdp") {
		t.Errorf("a 2-queue veth's queues without --xdp: %+v", q)
	}
}

// TestQueueMeterSingleQueue: an interface with one receive queue (e1000e,
// a veth made so) counts every packet it received on that queue, by its
// own receive counter: the datagrams received in the window are all there.
func TestQueueMeterSingleQueue(t *testing.T) {
	testenv.RequireRoot(t)
	a, b := testenv.NewNetNS(t), testenv.NewNetNS(t)
	testenv.Veth(t, a, "lrs0", b, "lrs1", 1)
	a.AddAddr(t, "lrs0", "10.201.0.1/24")
	b.AddAddr(t, "lrs1", "10.201.0.2/24")
	dst := netip.MustParseAddr("10.201.0.2")
	const n = 50
	var (
		m  *Queues
		rc *net.UDPConn
	)
	err := b.Do(func() (err error) {
		m = NewQueues(dst, nil)
		rc, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(dst, 0)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	defer rc.Close()
	to := rc.LocalAddr().(*net.UDPAddr)
	var sc *net.UDPConn
	if err := a.Do(func() (err error) { sc, err = net.ListenUDP("udp4", nil); return err }); err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	// send writes k datagrams and waits until the receiver has them all.
	send := func(k int) {
		t.Helper()
		for range k {
			if _, err := sc.WriteToUDP([]byte("queue"), to); err != nil {
				t.Fatal(err)
			}
		}
		rc.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 64)
		for range k {
			if _, _, err := rc.ReadFromUDP(buf); err != nil {
				t.Fatalf("receive: %v", err)
			}
		}
	}
	send(1) // the neighbour is resolved before the window
	m.mark(false)
	send(n)
	m.mark(true)
	q := m.Result()
	if q.Error != "" || q.Counter != results.CounterLink || len(q.Packets) != 1 || q.Packets[0] < n || q.Packets[0] > n+3 {
		t.Errorf("a single-queue veth after %d datagrams: %+v, want its link counter with %d on queue 0", n, q, n)
	}
}
