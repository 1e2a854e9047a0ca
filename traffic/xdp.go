package traffic

// The XDP receive meter: a flow that counts, with the eBPF counter of
// linerate/source/xdpcount attached to the receiving interface, the IPv4
// UDP packets that reached the interface in the measured window, so that a
// result can show them beside those that reached the socket.

import (
	"net/netip"
	"sync"
	"time"

	"linerate/results"
	"linerate/source/xdpcount"
)

// xdpMeter counts, with an XDP counter, the UDP packets that reach the
// interface holding a test's receiving address in the measured window. It
// is a receiving flow that counts no traffic of its own: its figure is in
// result. A counter that cannot be attached is reported there, not fatal.
type xdpMeter struct {
	c    *xdpcount.Counter
	stat results.XDPStat
	mu   sync.Mutex
	base [2]uint64 // packets, bytes at the start of the measured window
	tm   Timing
	// began is set when the window's start was marked.
	began bool
	end   time.Time // the window's end, if cut early
	ended bool      // the end was marked
	halt  chan struct{}
	once  sync.Once
}

// newXDPMeter attaches a counter to the interface that holds local; port,
// when not 0, is the only destination port counted. Call it in the
// interface's network namespace.
func newXDPMeter(local netip.Addr, port uint16) *xdpMeter {
	m := &xdpMeter{halt: make(chan struct{})}
	name, index, err := interfaceOf(local)
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
	return m
}

// run marks the window's start when it comes, and its end at stop.
func (m *xdpMeter) run(tm Timing) {
	m.tm = tm
	start := time.AfterFunc(time.Until(tm.Measure), func() { m.mark(false) })
	<-m.halt
	start.Stop()
	m.mark(true)
}

// cut ends the window early, at at; the count is still read at stop.
func (m *xdpMeter) cut(at time.Time) {
	m.mu.Lock()
	m.end = at
	m.mu.Unlock()
}

func (m *xdpMeter) stop(time.Duration) { m.once.Do(func() { close(m.halt) }) }

// mark reads the counter at the start of the measured window (end false)
// or at its end, which counts only after a start.
func (m *xdpMeter) mark(end bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c == nil || (end && !m.began) || (!end && (m.began || m.ended)) {
		return
	}
	pk, by, err := m.c.Count()
	if err != nil {
		m.stat.Error = err.Error()
		return
	}
	if !end {
		m.base, m.began = [2]uint64{pk, by}, true
		return
	}
	m.ended = true
	m.stat.Packets, m.stat.Bytes = pk-m.base[0], by-m.base[1]
	w := m.tm.End
	if !m.end.IsZero() {
		w = m.end
	}
	if s := w.Sub(m.tm.Measure).Seconds(); s > 0 {
		m.stat.PPS = float64(m.stat.Packets) / s
	}
}

func (m *xdpMeter) progress() (packets, bytes uint64) { return 0, 0 }
func (m *xdpMeter) collect() flowResult               { return flowResult{} }

// result is what the counter saw; valid after the meter's run returned.
func (m *xdpMeter) result() *results.XDPStat {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.stat
	return &st
}

func (m *xdpMeter) close() error {
	m.stop(0)
	if m.c == nil {
		return nil
	}
	return m.c.Close()
}
