package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Kernel is what a source can say about the kernel beyond /proc and /sys:
// its module aliases (which module would bind a device) and its log
// (BARs without address space, links that did not train). Live and
// Capture implement it; an absent file is an error wrapping
// fs.ErrNotExist.
type Kernel interface {
	// ModulesAlias is lib/modules/RELEASE/modules.alias of the running
	// kernel (a capture's kernel/modules.alias).
	ModulesAlias() ([]byte, error)
	// KernelLog is the kernel's log, one message a line, as dmesg prints
	// it (a capture's kernel/dmesg.txt).
	KernelLog() ([]byte, error)
}

// kernelFileMax bounds modules.alias (about 1.5 MB on a distribution
// kernel) and the log (the kernel's buffer is a few MiB at most).
const kernelFileMax = 16 << 20

// ModulesAlias reads /lib/modules/$(uname -r)/modules.alias.
func (l *Live) ModulesAlias() ([]byte, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return nil, err
	}
	p := "/lib/modules/" + unix.ByteSliceToString(u.Release[:]) + "/modules.alias"
	return readCapped(p)
}

func readCapped(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, kernelFileMax+1))
	if err == nil && len(b) > kernelFileMax {
		err = fmt.Errorf("%s: larger than %d bytes", p, kernelFileMax)
	}
	return b, err
}

// KernelLog reads the kernel's log from /dev/kmsg without waiting for new
// messages: each record is "PRIORITY,SEQ,USEC,FLAGS;MESSAGE" followed by
// key=value lines that start with a space (Documentation/ABI/testing/dev-kmsg).
//
// The file is read with read(2) on a raw descriptor: an *os.File would
// hand EAGAIN to Go's poller and wait for the next message.
func (l *Live) KernelLog() ([]byte, error) {
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: "/dev/kmsg", Err: err}
	}
	defer unix.Close(fd)
	var out bytes.Buffer
	buf := make([]byte, 8192) // a record is at most 8 KiB minus a little
	for out.Len() < kernelFileMax {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EPIPE) {
			continue // overwritten while reading: the next record follows
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			break // EAGAIN: no more
		}
		head, msg, ok := strings.Cut(string(buf[:n]), ";")
		if !ok || strings.Count(head, ",") < 3 {
			continue
		}
		msg, _, _ = strings.Cut(msg, "\n ")
		out.WriteString(strings.TrimRight(msg, "\n"))
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

// ModulesAlias reads kernel/modules.alias of the capture.
func (c *Capture) ModulesAlias() ([]byte, error) { return c.kernelFile("kernel/modules.alias") }

// KernelLog reads kernel/dmesg.txt of the capture.
func (c *Capture) KernelLog() ([]byte, error) { return c.kernelFile("kernel/dmesg.txt") }

func (c *Capture) kernelFile(rel string) ([]byte, error) {
	b, err := c.t.ReadFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (%w)", rel, ErrNotCaptured, unwrapPath(err))
	}
	return b, err
}
