package remote

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// Addr is the address of a channel that is not a socket: Net "ssh" with
// the destination, or "stdio".
type Addr struct{ Net, Name string }

func (a Addr) Network() string { return a.Net }
func (a Addr) String() string  { return a.Name }

// pipeConn is a control channel over two pipes: ssh's standard input and
// output on the controller, or `serve --stdio`'s on the host. Deadlines
// work because both files are pollable (os.Pipe makes them so; Stdio sets
// its descriptors non-blocking).
type pipeConn struct {
	r, w          *os.File
	local, remote net.Addr
	// ended, when set, turns the error that ended reading or writing (EOF,
	// a broken pipe) into why the channel ended.
	ended func(error) error
	// closed, when set, runs after the write end is closed and before the
	// read end is: it waits for the far end to finish.
	closed func() error
	// finally, when set, runs once both ends are closed.
	finally func()

	once     sync.Once
	closeErr error
}

func (c *pipeConn) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if err != nil && c.ended != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		err = c.ended(err)
	}
	return n, err
}

func (c *pipeConn) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	if err != nil && c.ended != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		err = c.ended(err)
	}
	return n, err
}

// Close closes the write end first, so that the far end reads EOF and
// finishes, then waits for it (closed), then closes the read end.
func (c *pipeConn) Close() error {
	c.once.Do(func() {
		c.closeErr = c.w.Close()
		if c.closed != nil {
			if err := c.closed(); err != nil && c.closeErr == nil {
				c.closeErr = err
			}
		}
		if err := c.r.Close(); err != nil && c.closeErr == nil {
			c.closeErr = err
		}
		if c.finally != nil {
			c.finally()
		}
	})
	return c.closeErr
}

func (c *pipeConn) LocalAddr() net.Addr  { return c.local }
func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }

func (c *pipeConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *pipeConn) SetReadDeadline(t time.Time) error  { return deadline(c.r.SetReadDeadline(t)) }
func (c *pipeConn) SetWriteDeadline(t time.Time) error { return deadline(c.w.SetWriteDeadline(t)) }

// deadline lets a file that cannot have deadlines through: a regular file
// or a character device (serve --stdio run by hand with a file as input or
// output) never blocks for long, so it needs none.
func deadline(err error) error {
	if errors.Is(err, os.ErrNoDeadline) {
		return nil
	}
	return err
}

// tailWriter keeps the last few KiB written to it (ssh's stderr) and
// passes everything on to also, when set.
type tailWriter struct {
	mu   sync.Mutex
	buf  []byte
	also io.Writer
}

const tailMax = 4 << 10

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailMax {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailMax:]...)
	}
	if t.also != nil {
		_, _ = t.also.Write(p)
	}
	return len(p), nil
}

// last is the last line that is not empty.
func (t *tailWriter) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := bytes.Split(t.buf, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(string(lines[i])); l != "" {
			return l
		}
	}
	return ""
}
