package traffic

import (
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"linerate/box"
	"linerate/traffic/sock"
)

// windowSampling runs a Sampling over a test's measured window: started by
// a timer at the window's start, stopped by the test's teardown. Stopping
// waits for a start that is under way, and a start after the stop does
// nothing, so that no sampler outlives its test whatever the order.
type windowSampling struct {
	mu      sync.Mutex
	cancel  func() bool
	stop    func() ([]box.Rates, error)
	began   bool // the window started (the timer's function ran)
	stopped bool
}

// startAt arms the sampling (nil: none) for at, on clk; mark, if set,
// runs first then.
func (w *windowSampling) startAt(clk clock, at time.Time, s Sampling, each func(box.Rates), mark func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cancel = clk.afterFunc(at.Sub(clk.now()), func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.stopped {
			return
		}
		w.began = true
		if mark != nil {
			mark()
		}
		if s != nil {
			w.stop = s(each)
		}
	})
}

// finish stops the sampling and returns its intervals; began is false when
// the window never started (the test ended before it did).
func (w *windowSampling) finish() (rates []box.Rates, began bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.cancel != nil {
		w.cancel()
	}
	st := w.stop
	w.stop = nil
	if st == nil {
		return nil, w.began, nil
	}
	rates, err = st()
	return rates, w.began, err
}

// peerTimeout is how long a control connection's peer may stay silent
// (not acknowledging what was sent, not answering keepalive probes) before
// the connection fails, when the Server or Config does not say.
const peerTimeout = 10 * time.Second

// watchPeer makes c fail once its peer has gone silent for about d: a
// client or server that vanished without closing (its host or network
// namespace gone, a cable pulled) is noticed then instead of when a
// protocol timeout runs out. Data waiting for an acknowledgment longer than
// d aborts the connection (TCP_USER_TIMEOUT, tcp(7)); keepalive probes find
// a silent peer while nothing is being sent.
func watchPeer(c net.Conn, d time.Duration) error {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	probe := max(d/4, time.Second)
	if err := tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: probe, Interval: probe, Count: 4}); err != nil {
		return err
	}
	return sock.WithFD(tc, func(fd int) error {
		return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	})
}
