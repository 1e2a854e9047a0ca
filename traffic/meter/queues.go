package meter

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"linerate/results"
	"linerate/source/ethtool"
	"linerate/source/qstats"
	"linerate/source/xdpcount"
	"linerate/traffic/sock"
)

// Queues counts the packets each receive queue of the interface
// holding a test's receiving address took in the measured window: by the
// NIC's own per-queue counters where the driver has them (netdev qstats,
// else ethtool -S), else
// by the XDP counter's per-queue map when the test attached one (a veth
// counts nothing per queue without it). What cannot be counted is said in
// the result, not fatal.
type Queues struct {
	*windowMeter
	stat results.QueueStat
	// The sockets the counter reads through, made in the interface's
	// namespace: reads from any goroutine see that namespace.
	et *ethtool.Live
	qs *qstats.Conn
	nl *netlink.Handle
}

// NewQueues finds the interface holding local and a counter for its
// receive queues; xdp, when not nil, is the test's XDP counter on it. Call
// it in the interface's network namespace (the ethtool socket stays in it).
func NewQueues(local netip.Addr, xdp *xdpcount.Counter) *Queues {
	m := &Queues{windowMeter: newWindowMeter(nil)}
	read, err := m.counter(local, xdp)
	if err != nil {
		m.stat.Error = err.Error()
		return m
	}
	m.read = read
	return m
}

// errNoQueueCounters says the interface counts nothing per receive queue.
var errNoQueueCounters = errors.New("has no per-queue receive counters (netdev qstats, ethtool -S; multi-queue veths and taps count none): --xdp counts them with an XDP program")

// counter picks how to read the queues: qstats, else ethtool, else the
// link's counter of a single-queue interface, else XDP.
func (m *Queues) counter(local netip.Addr, xdp *xdpcount.Counter) (func() ([]uint64, error), error) {
	name, index, err := sock.InterfaceOf(local)
	if err != nil {
		return nil, err
	}
	m.stat.Interface = name
	if qs, err := qstats.Dial(); err == nil {
		if _, err := qs.RxPackets(index); err == nil {
			m.qs, m.stat.Counter = qs, results.CounterQstats
			return func() ([]uint64, error) { return qs.RxPackets(index) }, nil
		}
		qs.Close()
	}
	if et, err := ethtool.NewLive(); err == nil {
		var driver string
		if di, err := et.DriverInfo(name); err == nil {
			driver = di.Driver
		}
		read := func() ([]uint64, error) {
			st, err := et.Stats(name)
			if err != nil {
				return nil, err
			}
			q := ethtool.RxQueuePackets(st, driver)
			if q == nil {
				return nil, fmt.Errorf("interface %s %w", name, errNoQueueCounters)
			}
			return q, nil
		}
		if _, err := read(); err == nil {
			m.et, m.stat.Counter = et, results.CounterEthtool
			return read, nil
		}
		et.Close()
	}
	nl, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m.nl = nl
	link, err := nl.LinkByIndex(index)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if link.Attrs().NumRxQueues == 1 {
		// One receive queue (e1000e, a single-queue veth): every packet
		// the interface received is that queue's, by its own counter.
		m.stat.Counter = results.CounterLink
		return func() ([]uint64, error) {
			l, err := nl.LinkByIndex(index)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if l.Attrs().Statistics == nil {
				return nil, fmt.Errorf("interface %s reports no statistics", name)
			}
			return []uint64{l.Attrs().Statistics.RxPackets}, nil
		}, nil
	}
	if xdp == nil {
		return nil, fmt.Errorf("interface %s %w", name, errNoQueueCounters)
	}
	n := max(link.Attrs().NumRxQueues, 1)
	m.stat.Counter = results.CounterXDP
	return func() ([]uint64, error) {
		qs, err := xdp.Queues(n)
		out := make([]uint64, len(qs))
		for i, q := range qs {
			out[i] = q.Packets
		}
		return out, err
	}, nil
}

// Result is the packets per queue in the window; valid after the meter's
// Run returned.
func (m *Queues) Result() *results.QueueStat {
	st := m.stat
	v, _, err := m.counted()
	switch {
	case err != nil:
		st.Error = err.Error()
	case v != nil:
		st.Packets = v
	}
	return &st
}

func (m *Queues) Close() error {
	m.Stop(0)
	if m.nl != nil {
		m.nl.Close()
	}
	if m.qs != nil {
		m.qs.Close()
	}
	if m.et != nil {
		return m.et.Close()
	}
	return nil
}
