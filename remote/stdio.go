package remote

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Stdio turns this process's standard input and output into a channel
// (`linerate serve --stdio`, started by ssh). From then on file descriptor
// 1 is a copy of standard error, so nothing else the process prints can
// corrupt the channel. Under ssh the channel's addresses are those of the
// ssh connection (SSH_CONNECTION: the client's address is where the agent
// may send, the host's the one it was reached at); otherwise they are
// Addr{"stdio", ...}.
func Stdio() (net.Conn, error) {
	in, err := dupNonblock(0)
	if err != nil {
		return nil, fmt.Errorf("standard input: %w", err)
	}
	out, err := dupNonblock(1)
	if err != nil {
		unix.Close(in)
		return nil, fmt.Errorf("standard output: %w", err)
	}
	if err := unix.Dup3(2, 1, 0); err != nil {
		unix.Close(in)
		unix.Close(out)
		return nil, fmt.Errorf("point standard output at standard error: %w", err)
	}
	c := &pipeConn{
		r:      os.NewFile(uintptr(in), "stdin"),
		w:      os.NewFile(uintptr(out), "stdout"),
		local:  Addr{"stdio", "stdin/stdout"},
		remote: Addr{"stdio", "stdin/stdout"},
		// The descriptions behind fd 0 may be shared with whoever started
		// this process (a terminal): leave them blocking, as found.
		finally: func() { _ = unix.SetNonblock(0, false) },
	}
	if client, server, ok := sshConnection(os.Getenv("SSH_CONNECTION")); ok {
		c.remote, c.local = client, server
	}
	return c, nil
}

// dupNonblock duplicates fd and makes the copy non-blocking, so that the
// runtime's poller (and so deadlines) can drive it.
func dupNonblock(fd int) (int, error) {
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return -1, err
	}
	if err := unix.SetNonblock(d, true); err != nil {
		unix.Close(d)
		return -1, err
	}
	return d, nil
}

// sshConnection reads SSH_CONNECTION ("client_ip client_port server_ip
// server_port", sshd(8) ENVIRONMENT).
func sshConnection(s string) (client, server *net.TCPAddr, ok bool) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return nil, nil, false
	}
	c, err1 := netip.ParseAddrPort(net.JoinHostPort(f[0], f[1]))
	h, err2 := netip.ParseAddrPort(net.JoinHostPort(f[2], f[3]))
	if err1 != nil || err2 != nil {
		return nil, nil, false
	}
	return net.TCPAddrFromAddrPort(c), net.TCPAddrFromAddrPort(h), true
}
