// Package meter holds the receive meters: session flows that count no
// traffic of their own but read counters of the receiving interface at
// the start and the end of the measured window. XDP counts, with the eBPF
// counter of linerate/source/xdpcount attached to the receiving
// interface, the IPv4 UDP packets that reached the interface, so that a
// result can show them beside those that reached the socket; Queues
// (queues.go) how the packets spread over the interface's receive queues.
package meter

import (
	"net/netip"
	"sync"
	"time"

	"linerate/results"
	"linerate/source/xdpcount"
	"linerate/traffic/session"
	"linerate/traffic/sock"
)

// windowMeter reads a set of counters at the start of the measured window
// and at its end; delta is what they counted in between.
type windowMeter struct {
	read func() ([]uint64, error)
	mu   sync.Mutex
	base []uint64 // at the start of the measured window
	// delta is the counts in the window, once its end was marked; err the
	// first read that failed.
	delta []uint64
	err   error
	tm    session.Timing
	// began is set when the window's start was marked.
	began bool
	end   time.Time // the window's end, if cut early
	ended bool      // the end was marked
	halt  chan struct{}
	once  sync.Once
}

func newWindowMeter(read func() ([]uint64, error)) *windowMeter {
	return &windowMeter{read: read, halt: make(chan struct{})}
}

// Run marks the window's start when it comes, and its end at Stop.
func (m *windowMeter) Run(tm session.Timing) {
	m.tm = tm
	start := time.AfterFunc(time.Until(tm.Measure), func() { m.mark(false) })
	<-m.halt
	start.Stop()
	m.mark(true)
}

// Cut ends the window early, at at; the counters are still read at Stop.
func (m *windowMeter) Cut(at time.Time) {
	m.mu.Lock()
	m.end = at
	m.mu.Unlock()
}

func (m *windowMeter) Stop(time.Duration) { m.once.Do(func() { close(m.halt) }) }

// mark reads the counters at the start of the measured window (end false)
// or at its end, which counts only after a start.
func (m *windowMeter) mark(end bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.read == nil || m.err != nil || (end && !m.began) || (!end && (m.began || m.ended)) {
		return
	}
	v, err := m.read()
	if err != nil {
		m.err = err
		return
	}
	if !end {
		m.base, m.began = v, true
		return
	}
	m.ended = true
	m.delta = make([]uint64, len(v))
	for i := range v {
		if i < len(m.base) {
			m.delta[i] = v[i] - m.base[i]
		}
	}
}

// counted is what the counters counted in the window (nil if it was never
// read) and the window's length in seconds.
func (m *windowMeter) counted() ([]uint64, float64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.tm.End
	if !m.end.IsZero() {
		w = m.end
	}
	return m.delta, max(w.Sub(m.tm.Measure).Seconds(), 0), m.err
}

func (m *windowMeter) Progress() (packets, bytes uint64) { return 0, 0 }
func (m *windowMeter) Collect() session.Result           { return session.Result{} }

// XDP counts, with an XDP counter, the UDP packets that reach the
// interface holding a test's receiving address in the measured window. Its
// figure is in result. A counter that cannot be attached is reported
// there, not fatal.
type XDP struct {
	*windowMeter
	c    *xdpcount.Counter
	stat results.XDPStat
}

// NewXDP attaches a counter to the interface that holds local; port,
// when not 0, is the only destination port counted. Call it in the
// interface's network namespace.
func NewXDP(local netip.Addr, port uint16) *XDP {
	m := &XDP{windowMeter: newWindowMeter(nil)}
	name, index, err := sock.InterfaceOf(local)
	if err != nil {
		m.stat.Error = err.Error()
		return m
	}
	m.stat.Interface = name
	c, err := xdpcount.Attach(index, port, false)
	if err != nil {
		m.stat.Error = err.Error()
		return m
	}
	m.c = c
	m.stat.Mode = string(c.Mode())
	if err := c.NativeError(); err != nil {
		m.stat.NativeError = err.Error()
	}
	m.read = func() ([]uint64, error) {
		pk, by, err := c.Count()
		return []uint64{pk, by}, err
	}
	return m
}

// Counter is the XDP counter the meter attached (nil: none).
func (m *XDP) Counter() *xdpcount.Counter { return m.c }

// Result is what the counter saw; valid after the meter's Run returned.
func (m *XDP) Result() *results.XDPStat {
	st := m.stat
	v, secs, err := m.counted()
	if err != nil {
		st.Error = err.Error()
	}
	if len(v) == 2 {
		st.Packets, st.Bytes = v[0], v[1]
		if secs > 0 {
			st.PPS = float64(st.Packets) / secs
		}
	}
	return &st
}

func (m *XDP) Close() error {
	m.Stop(0)
	if m.c == nil {
		return nil
	}
	return m.c.Close()
}
