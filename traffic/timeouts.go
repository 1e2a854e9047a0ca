package traffic

import (
	"net"
	"time"

	"golang.org/x/sys/unix"

	"linerate/traffic/sock"
)

// Timeouts of the control protocol.
const (
	helloTimeout = 10 * time.Second // from connect to hello
	idleTimeout  = 5 * time.Minute  // between tests on one connection
	startTimeout = 30 * time.Second // from accept to start
	stopGrace    = 30 * time.Second // past a test's end for its stop
)

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

// maxHold bounds how long an agent holds a flow at the start barrier: its
// targets wait startTimeout from their accept for the start.
const maxHold = startTimeout - 5*time.Second

// flowGrace is how long past a flow's own length the controller waits for
// its result.
const flowGrace = 30 * time.Second

// channelIdle is how long an ssh channel whose agent listens for others
// may stay silent: the controller has nothing to say while the test runs.
const channelIdle = 24 * time.Hour
