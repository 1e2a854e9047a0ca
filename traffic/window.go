package traffic

import (
	"net"
	"time"

	"golang.org/x/sys/unix"

	"linerate/traffic/sock"
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
