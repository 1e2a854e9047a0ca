// Package tree reads files beneath a directory as untrusted input: the
// copy of /proc and /sys that a capture holds, which someone else made and
// may have made hostile, and the live /proc and /sys through the same code.
//
// The rules (docs/security.md):
//
//   - Nothing resolves outside the tree's directory. A symbolic link is
//     followed only while it stays inside; an absolute link, or a relative
//     one that climbs out, is refused.
//   - Only regular files are read, and only directories are listed. A named
//     pipe, a device or a socket is refused after a stat, before anything
//     opens it; opens use O_NONBLOCK and the type is checked again with
//     fstat on the open file, so no open and no read can block.
//   - A file may hold at most Limits.File bytes (a larger size is refused
//     from the stat, without reading; a file that grows, or a /proc file
//     that reports size 0, is read to one byte past the limit and then
//     refused), all reads of one tree together at most Limits.Total bytes,
//     and a directory at most Limits.Entries names.
//
// Every refusal is an error wrapping ErrRefused that says why and names the
// path; callers show it as the reason a value is unknown.
//
// How: os.Root (Go 1.24+). Each operation opens the tree's directory and
// walks the path one component at a time with openat and O_NOFOLLOW,
// resolving symbolic links itself and refusing any that leave. That works
// on every kernel linerate runs on, where openat2's RESOLVE_BENEATH needs
// Linux 5.6 and a fallback for the 4.x kernels of older boxes. Because no
// component is ever opened through a link, /proc's magic links (fd/N, exe,
// root) are never followed by the kernel: read as text, they name absolute
// paths or "pipe:[N]", which are refused or absent. The directory is opened
// again for every operation rather than held, so a Tree is a plain value
// that needs no Close, and a tree made on a path through another mount
// namespace (/proc/PID/task/TID/root/sys) keeps working from any thread.
package tree

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"linerate/internal/order"
)

// ErrRefused is wrapped by the error for every file or directory a Tree
// will not read. Test with errors.Is.
var ErrRefused = errors.New("refused")

// RefusedError says which path was refused and why.
type RefusedError struct {
	Path string
	Why  string
}

func (e *RefusedError) Error() string     { return e.Path + ": refused: " + e.Why }
func (e *RefusedError) Is(err error) bool { return err == ErrRefused }

// Limits bound what a Tree reads.
type Limits struct {
	// File is the most bytes one file may hold.
	File int64
	// Total is the most bytes all reads of a tree (and its Subs) may
	// return together; 0 for no limit.
	Total int64
	// Entries is the most names one directory may hold.
	Entries int
}

// CaptureLimits are the limits for a capture. A real capture is a few
// megabytes: /proc/interrupts of a 64-CPU box with a thousand IRQs is under
// 1 MiB, and ten samples of the counter files add ten times that.
var CaptureLimits = Limits{File: 16 << 20, Total: 256 << 20, Entries: 1 << 16}

// LiveLimits are the limits for the live /proc and /sys: no total (a
// sampler reads the counters every second for as long as a test runs), and
// room for big machines (/proc/interrupts of 512 CPUs, /proc of a million
// processes).
var LiveLimits = Limits{File: 64 << 20, Entries: 1 << 22}

// Tree is a directory read under Limits. The zero Tree is not usable.
type Tree struct {
	dir  string // the directory on this machine
	name string // how messages name the tree: dir unless Named
	base string // a clean slash path below dir where this Tree starts, "" for dir
	lim  Limits
	used *atomic.Int64 // bytes read, shared with Subs
}

// New returns a Tree for the directory dir. dir itself is opened as the
// caller names it (links in it followed): it is the caller's word, not the
// tree's content.
func New(dir string, lim Limits) Tree {
	return Tree{dir: dir, name: dir, lim: lim, used: new(atomic.Int64)}
}

// Named returns t with messages naming it as name ("the capture") rather
// than by its directory, which for an unpacked tarball is a temporary
// directory that means nothing to the user.
func (t Tree) Named(name string) Tree {
	t.name = name
	return t
}

// Sub returns the tree below rel, sharing the limits and the byte count.
// rel is resolved inside t like any other path: a link there cannot leave t.
func (t Tree) Sub(rel string) Tree {
	t.base = t.join(rel)
	return t
}

// Dir is the directory the tree was made from.
func (t Tree) Dir() string { return t.dir }

// Base is the path of this Sub below Dir ("" for the top).
func (t Tree) Base() string { return t.base }

// Limits returns the limits t reads under.
func (t Tree) Limits() Limits { return t.lim }

// Path is the path on this machine of rel below t, for messages.
func (t Tree) Path(rel string) string {
	return filepath.Join(t.dir, filepath.FromSlash(t.join(rel)))
}

// join is rel below t.base, cleaned; a leading ".." in rel stays at the
// base (a symbolic link may still lead elsewhere in the tree, never out).
func (t Tree) join(rel string) string {
	r := strings.TrimPrefix(path.Clean("/"+filepath.ToSlash(rel)), "/")
	return path.Join(t.base, r)
}

// rootName is what os.Root is asked for: "." for the top.
func (t Tree) rootName(rel string) string {
	if p := t.join(rel); p != "" {
		return p
	}
	return "."
}

// do opens the root and runs f in it; errors name the path on this machine.
func do[T any](t Tree, rel string, f func(r *os.Root, name string) (T, error)) (T, error) {
	var zero T
	if t.used == nil {
		return zero, fmt.Errorf("%s: tree.Tree used before tree.New", rel)
	}
	r, err := os.OpenRoot(t.dir)
	if err != nil {
		return zero, err
	}
	defer r.Close()
	v, err := f(r, t.rootName(rel))
	if err != nil {
		return zero, t.explain(rel, err)
	}
	return v, nil
}

// explain turns an error of os.Root into one naming the path on this
// machine. os.Root reports a path that leaves it with an error of its own
// that is not an errno (the os package keeps it unexported): that is the
// one case where a walk fails without the kernel saying why.
func (t Tree) explain(rel string, err error) error {
	var re *RefusedError
	if errors.As(err, &re) {
		return err
	}
	var pe *iofs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	var errno syscall.Errno
	if !errors.As(pe.Err, &errno) {
		return &RefusedError{Path: t.Path(rel), Why: "a symbolic link on the way leads out of " + t.name}
	}
	if errno == syscall.ELOOP {
		return &RefusedError{Path: t.Path(rel), Why: "too many levels of symbolic links"}
	}
	return &iofs.PathError{Op: pe.Op, Path: t.Path(rel), Err: pe.Err}
}

// Kind names a file type that a Tree does not read, for a refusal: "a
// named pipe (FIFO), not a regular file".
func Kind(m iofs.FileMode) string {
	switch {
	case m&iofs.ModeNamedPipe != 0:
		return "a named pipe (FIFO), not a regular file"
	case m&iofs.ModeSocket != 0:
		return "a socket, not a regular file"
	case m&iofs.ModeCharDevice != 0:
		return "a character device, not a regular file"
	case m&iofs.ModeDevice != 0:
		return "a block device, not a regular file"
	case m&iofs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file (" + m.Type().String() + ")"
}

// ReadFile returns the content of the regular file rel, under the limits.
func (t Tree) ReadFile(rel string) ([]byte, error) {
	return do(t, rel, func(r *os.Root, name string) ([]byte, error) {
		// Look before opening: opening a device can have effects of its own.
		st, err := r.Stat(name)
		if err != nil {
			return nil, err
		}
		if err := t.regular(rel, st); err != nil {
			return nil, err
		}
		f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		// The file may have been swapped since the stat.
		if st, err = f.Stat(); err != nil {
			return nil, err
		}
		if err := t.regular(rel, st); err != nil {
			return nil, err
		}
		limit := t.lim.File
		if t.lim.Total > 0 {
			left := t.lim.Total - t.used.Load()
			if left <= 0 {
				return nil, t.overTotal(rel)
			}
			limit = min(limit, left)
		}
		b, err := io.ReadAll(io.LimitReader(f, limit+1))
		t.used.Add(int64(len(b)))
		if err != nil {
			return nil, err
		}
		if int64(len(b)) > limit {
			if limit < t.lim.File {
				return nil, t.overTotal(rel)
			}
			return nil, &RefusedError{Path: t.Path(rel), Why: fmt.Sprintf("holds more than %s, the most one file may", size(t.lim.File))}
		}
		return b, nil
	})
}

func (t Tree) overTotal(rel string) error {
	return &RefusedError{Path: t.Path(rel), Why: fmt.Sprintf("the files read from %s add up to more than %s", t.name, size(t.lim.Total))}
}

// regular refuses anything but a regular file of at most Limits.File bytes.
func (t Tree) regular(rel string, st iofs.FileInfo) error {
	if st.IsDir() {
		return &iofs.PathError{Op: "read", Path: t.Path(rel), Err: syscall.EISDIR}
	}
	if !st.Mode().IsRegular() {
		return &RefusedError{Path: t.Path(rel), Why: Kind(st.Mode())}
	}
	if st.Size() > t.lim.File {
		return &RefusedError{Path: t.Path(rel), Why: fmt.Sprintf("%d bytes, more than the %s one file may hold", st.Size(), size(t.lim.File))}
	}
	return nil
}

// ReadDir lists the directory rel, sorted by name, under Limits.Entries.
func (t Tree) ReadDir(rel string) ([]iofs.DirEntry, error) {
	return do(t, rel, func(r *os.Root, name string) ([]iofs.DirEntry, error) {
		// O_DIRECTORY fails at once on anything else (a FIFO included).
		f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		ents, err := f.ReadDir(t.lim.Entries + 1)
		if err != nil && err != io.EOF {
			return nil, err
		}
		if len(ents) > t.lim.Entries {
			return nil, &RefusedError{Path: t.Path(rel), Why: fmt.Sprintf("more than %d entries", t.lim.Entries)}
		}
		order.Sort(ents, func(a, b iofs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		return ents, nil
	})
}

// Stat describes rel, following links inside the tree.
func (t Tree) Stat(rel string) (iofs.FileInfo, error) {
	return do(t, rel, func(r *os.Root, name string) (iofs.FileInfo, error) { return r.Stat(name) })
}

// Lstat describes rel without following a link in its last component.
func (t Tree) Lstat(rel string) (iofs.FileInfo, error) {
	return do(t, rel, func(r *os.Root, name string) (iofs.FileInfo, error) { return r.Lstat(name) })
}

// Readlink returns the target of the symbolic link rel as written; it need
// not lie inside the tree (callers resolve it themselves).
func (t Tree) Readlink(rel string) (string, error) {
	return do(t, rel, func(r *os.Root, name string) (string, error) { return r.Readlink(name) })
}

// size prints a byte count in MiB when it is a whole number of them.
func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadNamed reads the one file a user named on the command line (a saved
// bench result, a findings file) by the rules a Tree reads by: a regular
// file only (a named pipe, socket or device is refused, and nothing
// blocks), at most max bytes. Links in path are followed: the path is the
// user's word, as New's directory is.
func ReadNamed(path string, max int64) ([]byte, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	return New(filepath.Dir(real), Limits{File: max}).ReadFile(filepath.Base(real))
}

// Clip shortens text of a file for quoting in a message: the first 80
// bytes and "...". A line of a hostile file can be megabytes long, and the
// message is printed, perhaps more than once.
func Clip(s string) string { return ClipTo(s, 80) }

// ClipTo is Clip to max bytes, for text that is longer when legitimate (a
// path in a tarball: PATH_MAX is 4096).
func ClipTo(s string, max int) string {
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// ParseError is text in a file that a reader's parser could not use. Line
// is 1-based, 0 when the file as a whole is wrong; Path is empty when the
// text did not come from a file (a parser given a reader).
type ParseError struct {
	Path string
	Line int
	Err  error
}

func (e *ParseError) Error() string {
	switch {
	case e.Path == "" && e.Line > 0:
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	case e.Path == "":
		return e.Err.Error()
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// SkippedError lists the lines of a file that a parser could not use and
// left out; the value returned with it holds everything else the file
// says. Each line is its own *ParseError with the file's path and line.
type SkippedError struct {
	Lines []*ParseError
}

func (e *SkippedError) Error() string {
	if len(e.Lines) == 1 {
		return e.Lines[0].Error() + " (line left out)"
	}
	return fmt.Sprintf("%v (and %d more lines left out)", e.Lines[0], len(e.Lines)-1)
}

func (e *SkippedError) Unwrap() []error {
	out := make([]error, len(e.Lines))
	for i, l := range e.Lines {
		out[i] = l
	}
	return out
}

// Skipped says whether err only reports lines left out (a *SkippedError,
// possibly wrapped or joined with others of its kind) and returns them all.
// A value returned with such an error is good to use.
func Skipped(err error) ([]*ParseError, bool) {
	if err == nil {
		return nil, false
	}
	var out []*ParseError
	var walk func(error) bool
	walk = func(err error) bool {
		switch e := err.(type) {
		case *SkippedError:
			out = append(out, e.Lines...)
			return true
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				if !walk(x) {
					return false
				}
			}
			return true
		case interface{ Unwrap() error }:
			if x := e.Unwrap(); x != nil {
				return walk(x)
			}
		}
		return false
	}
	if !walk(err) {
		return nil, false
	}
	return out, true
}
