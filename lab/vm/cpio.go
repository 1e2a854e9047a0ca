package vm

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
)

// cpioWriter writes the "newc" cpio format the kernel unpacks an
// initramfs from (Documentation/driver-api/early-userspace/buffer-format.rst
// in the kernel's source): a 110-byte ASCII header per entry, the name
// with its NUL, the data, each padded to four bytes, and a last entry
// named TRAILER!!!. No library is used: the format is a header of
// thirteen hexadecimal numbers, and the initramfs needs only files,
// directories and symbolic links.
type cpioWriter struct {
	w   io.Writer
	ino uint32
	off int64
	// dirs are the directories written so far, so a file's parents are
	// made once, before it.
	dirs map[string]bool
	err  error
}

func newCPIO(w io.Writer) *cpioWriter {
	return &cpioWriter{w: w, dirs: map[string]bool{".": true, "": true}}
}

// entry writes one header, its name and its data.
func (c *cpioWriter) entry(name string, mode uint32, data []byte) {
	if c.err != nil {
		return
	}
	c.ino++
	nlink := 1
	if mode&cpioDir != 0 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write(append([]byte(name), 0))
	c.pad()
	c.write(data)
	c.pad()
}

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.off += int64(n)
	c.err = err
}

func (c *cpioWriter) pad() {
	if r := c.off % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// Mode bits of the entries (stat(2)'s S_IFMT values).
const (
	cpioDir  = 0o040000
	cpioFile = 0o100000
	cpioLink = 0o120000
)

// mkdirAll writes the directory p and its parents that are not written yet.
func (c *cpioWriter) mkdirAll(p string) {
	p = strings.TrimPrefix(path.Clean(p), "/")
	if c.dirs[p] {
		return
	}
	c.mkdirAll(path.Dir(p))
	c.dirs[p] = true
	c.entry(p, cpioDir|0o755, nil)
}

// file writes a regular file at p with permissions perm.
func (c *cpioWriter) file(p string, perm fs.FileMode, data []byte) {
	p = strings.TrimPrefix(path.Clean(p), "/")
	c.mkdirAll(path.Dir(p))
	c.entry(p, cpioFile|uint32(perm.Perm()), data)
}

// symlink writes a symbolic link at p pointing to target.
func (c *cpioWriter) symlink(p, target string) {
	p = strings.TrimPrefix(path.Clean(p), "/")
	c.mkdirAll(path.Dir(p))
	c.entry(p, cpioLink|0o777, []byte(target))
}

// close writes the trailer and returns the first error met.
func (c *cpioWriter) close() error {
	c.entry("TRAILER!!!", 0, nil)
	return c.err
}
