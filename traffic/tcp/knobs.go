package tcp

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"linerate/internal/usage"
	"linerate/source/procfs"
	"linerate/traffic/sock"
	"linerate/wire"
)

// procRoot is where the congestion control algorithms the kernel has are
// read from when one asked for is refused.
var procRoot = "/proc"

// Knobs are the socket options of a test's TCP data connections, set
// alike on both ends: on the client's sockets before they connect (so the
// SYN is marked and advertises the window's scale), on the server's
// listener (its accepted sockets inherit them) and again on each accepted
// socket.
type Knobs struct {
	mss        int    // TCP_MAXSEG, before connect only
	dscp       int    // IP_TOS / IPV6_TCLASS
	window     int    // SO_SNDBUF and SO_RCVBUF
	congestion string // TCP_CONGESTION
	fqRate     uint64 // SO_MAX_PACING_RATE, bits per second
	noDelay    bool   // TCP_NODELAY (also with mss)
}

// KnobsOf is the knobs test s asks for, every stream marked alike
// (ForStream marks each its own).
func KnobsOf(s *wire.Spec) Knobs {
	return Knobs{mss: s.MSS, dscp: s.DSCP, window: s.Window, congestion: s.Congestion, fqRate: s.FQRate, noDelay: !s.Nagle}
}

// forStream is the knobs of stream i: its own mark when the test marks
// each stream on its own (Spec.StreamDSCP).
func (k Knobs) ForStream(s *wire.Spec, i int) Knobs {
	k.dscp = s.DSCPOf(i)
	return k
}

// set sets every knob but TCP_MAXSEG and TCP_NODELAY on fd.
func (k Knobs) set(fd int) error {
	if err := sock.SetDSCP(fd, k.dscp); err != nil {
		return err
	}
	if k.window > 0 {
		sock.SetBuf(fd, unix.SO_SNDBUF, unix.SO_SNDBUFFORCE, k.window)
		sock.SetBuf(fd, unix.SO_RCVBUF, unix.SO_RCVBUFFORCE, k.window)
	}
	if k.congestion != "" {
		if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, k.congestion); err != nil {
			return congestionError(k.congestion, err)
		}
	}
	if k.fqRate > 0 {
		if err := unix.SetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, k.fqRate/8); err != nil {
			return fmt.Errorf("SO_MAX_PACING_RATE %d bytes/s: %w", k.fqRate/8, err)
		}
	}
	return nil
}

// control is a net.Dialer's or net.ListenConfig's Control: TCP_MAXSEG
// (on a dialer) and the other knobs, before the socket connects or
// listens.
func (k Knobs) Control(dial bool) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if dial && k.mss > 0 {
				if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG, k.mss); err != nil {
					serr = fmt.Errorf("TCP_MAXSEG %d: %w", k.mss, err)
					return
				}
			}
			serr = k.set(int(fd))
		})
		if err != nil {
			return err
		}
		return serr
	}
}

// conn sets TCP_NODELAY on a connected socket, and its mark again (an
// accepted socket inherits the listener's, which is the test's and not
// its stream's when each stream has its own); the other knobs are set
// before it connects (a dialer's Control) or on the listener it was
// accepted from, whose options an accepted socket inherits. Go turns Nagle
// off on every TCP connection; it is turned back on only when the test
// asks for Nagle and does not write one segment at a time (mss: a write of
// one full segment leaves at once either way, but a short last one would
// wait).
func (k Knobs) Conn(c *net.TCPConn) error {
	if err := c.SetNoDelay(k.noDelay || k.mss > 0); err != nil {
		return fmt.Errorf("TCP_NODELAY: %w", err)
	}
	if k.dscp == 0 {
		return nil
	}
	return sock.WithFD(c, func(fd int) error { return sock.SetDSCP(fd, k.dscp) })
}

// CheckCongestion refuses a congestion control this end's kernel does not
// have, before any peer is asked ("": the default, nothing to check).
func CheckCongestion(name string) error {
	if name == "" {
		return nil
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("tcp socket: %w", err)
	}
	defer unix.Close(fd)
	return Knobs{congestion: name}.set(fd)
}

// ErrNoCongestion is a congestion control algorithm this kernel does not
// have (or may not load).
var ErrNoCongestion = errors.New("congestion control not available")

// congestionError says that name was refused, with the algorithms the
// kernel has (net.ipv4.tcp_available_congestion_control), in one line.
func congestionError(name string, err error) error {
	have, rerr := procfs.NewFS(procRoot).Sysctl("net.ipv4.tcp_available_congestion_control")
	if rerr != nil {
		have = "unknown (" + rerr.Error() + ")"
	}
	return usage.Field("congestion", "%q: %w (%v); this kernel has: %s", name, ErrNoCongestion, err,
		strings.Join(strings.Fields(have), ", "))
}
