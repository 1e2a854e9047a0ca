package tcp

import (
	"fmt"
	"net"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"linerate/results"
)

// tcpSock is a TCP data connection taken out of Go's network poller: a
// flow's loops read or write it with raw system calls and wait for it in
// poll(2) of their own. Left in the runtime's poller, every segment that
// arrives would also wake the runtime's epoll waiter (there is one while
// any other connection of the process is waited for, as the control
// connection is): tens of thousands of wakeups a second for nothing.
type tcpSock struct {
	mu     sync.RWMutex // held for reading by every call on fd, for writing by close
	fd     int
	closed bool
}

// takeTCP moves c out of the runtime: a duplicate of its descriptor (the
// same socket, still non-blocking) is kept and c is closed, which takes
// it out of the runtime's epoll. On error c is closed all the same.
func takeTCP(c *net.TCPConn) (*tcpSock, error) {
	defer c.Close()
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("dup: %w", derr)
	}
	return &tcpSock{fd: fd}, nil
}

// takeTCPs takes every connection (closing them all on error).
func takeTCPs(conns []*net.TCPConn) ([]*tcpSock, error) {
	socks := make([]*tcpSock, 0, len(conns))
	for i, c := range conns {
		s, err := takeTCP(c)
		if err != nil {
			CloseConns(conns[i+1:])
			closeSocks(socks)
			return nil, err
		}
		socks = append(socks, s)
	}
	return socks, nil
}

func closeSocks(socks []*tcpSock) {
	for _, s := range socks {
		s.close()
	}
}

// do runs fn on the descriptor, which stays open meanwhile; net.ErrClosed
// once close ran.
func (s *tcpSock) do(fn func(fd uintptr)) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return net.ErrClosed
	}
	fn(uintptr(s.fd))
	return nil
}

func (s *tcpSock) info() (*unix.TCPInfo, error) {
	var info *unix.TCPInfo
	var ierr error
	if err := s.do(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		return nil, err
	}
	return info, ierr
}

// setNotSentLowat sets TCP_NOTSENT_LOWAT (tcpNotSentLowat).
func (s *tcpSock) setNotSentLowat(n int) error {
	var serr error
	if err := s.do(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, n) }); err != nil {
		return err
	}
	return serr
}

// closeWrite sends the FIN: the stream's end.
func (s *tcpSock) closeWrite() {
	_ = s.do(func(fd uintptr) { _ = unix.Shutdown(int(fd), unix.SHUT_WR) })
}

func (s *tcpSock) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		_ = unix.Close(s.fd)
	}
}

// End is which end of a stream read its TCP_INFO (results.End).
type End = results.End

// The ends of a stream.
const (
	SenderEnd   = results.SenderEnd
	ReceiverEnd = results.ReceiverEnd
)

// tcpStat is what TCP_INFO and the socket's options say of stream's
// connection c, read at end.
func tcpStat(c *tcpSock, stream int, end End) results.TCPStat {
	st := results.TCPStat{Stream: stream, Side: end}
	if info, err := c.info(); err == nil {
		st.RTTMicros = info.Rtt
		st.RTTVar = info.Rttvar
		st.Retransmits = info.Total_retrans
		st.SndMSS = info.Snd_mss
		st.SndCwnd = info.Snd_cwnd
		st.DataSegsOut = info.Data_segs_out
		st.DataSegsIn = info.Data_segs_in
		st.PacingRate = bitsPerSecond(info.Pacing_rate)
		st.MaxPacingRate = bitsPerSecond(info.Max_pacing_rate)
	}
	_ = c.do(func(fd uintptr) { readOptions(int(fd), &st) })
	return st
}

// bitsPerSecond is a TCP_INFO rate (bytes per second, all ones for none)
// in bits per second, 0 for none.
func bitsPerSecond(bytes uint64) uint64 {
	if bytes == ^uint64(0) || bytes > ^uint64(0)/8 {
		return 0
	}
	return bytes * 8
}

// readOptions reads back the options Knobs sets.
func readOptions(fd int, st *results.TCPStat) {
	cc, _ := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	st.Congestion = strings.TrimRight(cc, "\x00")
	st.SndBuf, _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
	st.RcvBuf, _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	nd, _ := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
	st.NoDelay = nd != 0
	if dom, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN); dom == unix.AF_INET6 {
		st.TOS, _ = unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS)
	} else {
		st.TOS, _ = unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS)
	}
}

// CloseConns closes every connection of cs.
func CloseConns(cs []*net.TCPConn) {
	for _, c := range cs {
		c.Close()
	}
}
