package source

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"linerate/internal/usage"
	"linerate/source/ethtool"
	"linerate/source/procfs"
	"linerate/source/sysfs"
	"linerate/source/tree"
)

// ErrNotCaptured is wrapped by errors for items a capture does not hold.
var ErrNotCaptured = ethtool.ErrNotCaptured

// Capture reads a capture: a directory or a .tar.gz (docs/capture.md).
// Everything in it is untrusted input: its files are read through a
// tree.Tree (beneath the capture, regular files only, under
// tree.CaptureLimits), and a tarball is unpacked under the same limits.
type Capture struct {
	path string // as the user gave it
	dir  string // the directory holding proc/, sys/, ...
	tmp  string // extraction directory removed by Close, "" for a directory
	t    tree.Tree
	meta Meta
	proc procfs.FS
	sys  sysfs.FS
	et   *ethtool.Capture
}

// Limits on what OpenCapture extracts from a tarball, so that a hostile or
// broken archive can neither fill the disk nor, read back, the memory: the
// limits of the tree the capture is read through, and a cap on the number
// of entries.
var (
	maxEntryBytes   = tree.CaptureLimits.File
	maxCaptureBytes = tree.CaptureLimits.Total
)

const maxCaptureEntries = 200000

// tmpPrefix names the extraction directories; the process id follows, so
// that one left by a killed process can be told from one in use.
const tmpPrefix = "linerate-capture-"

// OpenCapture opens the capture at path: a directory, or a .tar.gz that is
// extracted to a temporary directory that Close removes. Anything wrong
// with the capture itself is bad input (usage.Is) naming the path.
func OpenCapture(path string) (Source, error) {
	return OpenCaptureContext(context.Background(), path)
}

// OpenCaptureContext is OpenCapture, stopping between the entries of a
// tarball when ctx ends (a tarball of 200000 entries takes seconds to
// unpack): the error then wraps ctx's, and the directory is removed.
func OpenCaptureContext(ctx context.Context, path string) (Source, error) {
	bad := func(format string, args ...any) error {
		return usage.Errorf("capture %s: %s", path, fmt.Sprintf(format, args...))
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, bad("no such file or directory")
		}
		return nil, usage.Errorf("capture %s: %w", path, err)
	}
	c := &Capture{path: path}
	switch {
	case st.IsDir():
		c.dir = path
	case !st.Mode().IsRegular():
		return nil, bad("%s (want a directory or a .tar.gz)", tree.Kind(st.Mode()))
	default:
		removeStale()
		tmp, err := os.MkdirTemp("", tmpPrefix+strconv.Itoa(os.Getpid())+"-")
		if err != nil {
			return nil, fmt.Errorf("capture %s: %w", path, err)
		}
		c.tmp = tmp
		if err := extractFile(ctx, path, tmp); err != nil {
			os.RemoveAll(tmp)
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil, fmt.Errorf("capture %s: unpacking stopped: %w", path, err)
			}
			return nil, usage.Errorf("capture %s: %w", path, err)
		}
		c.dir = tmp
	}
	root, err := findCaptureRoot(c.dir)
	if err != nil {
		c.Close()
		return nil, usage.Errorf("capture %s: %w", path, err)
	}
	c.dir = root
	c.t = tree.New(root, tree.CaptureLimits).Named("the capture")
	if b, err := c.t.ReadFile("meta.json"); err == nil {
		if err := json.Unmarshal(b, &c.meta); err != nil {
			c.Close()
			return nil, bad("meta.json: %v", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		c.Close()
		return nil, usage.Errorf("capture %s: meta.json: %w", path, unwrapPath(err))
	}
	c.proc = procfs.NewTreeFS(c.t.Sub("proc"))
	c.sys = sysfs.NewTreeFS(c.t.Sub("sys"))
	c.et = ethtool.NewCaptureTree(c.t.Sub("ethtool"))
	return c, nil
}

// removeStale removes the extraction directories of linerate processes
// that no longer run (killed before they could clean up: SIGKILL, a power
// cut). One that belongs to another user, or whose process id was reused,
// is left alone, and so is anything not named exactly as OpenCapture names
// them (PREFIX PID - DIGITS, a directory): `linerate capture` run in /tmp
// on a host named "10-0-0-1" writes linerate-capture-10-0-0-1-TIME.tar.gz,
// which is the user's.
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tmpPrefix+"*"))
	for _, d := range dirs {
		pid, rnd, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), tmpPrefix), "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n <= 0 || n == os.Getpid() || !digits(pid) || !digits(rnd) {
			continue
		}
		if st, err := os.Lstat(d); err != nil || !st.IsDir() {
			continue
		}
		if err := syscall.Kill(n, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

// digits reports whether s is a non-empty run of decimal digits.
func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// findCaptureRoot accepts the capture's files at the top of dir or inside
// a single top-level directory. It looks through a tree, so a proc/ that
// is a link out of dir does not count.
func findCaptureRoot(dir string) (string, error) {
	t := tree.New(dir, tree.CaptureLimits)
	if isDir(t, "proc") {
		return dir, nil
	}
	ents, err := t.ReadDir("")
	if err != nil {
		return "", unwrapPath(err)
	}
	if len(ents) == 1 && ents[0].IsDir() && isDir(t, ents[0].Name()+"/proc") {
		return filepath.Join(dir, ents[0].Name()), nil
	}
	return "", errors.New("no proc/ directory (is it a linerate capture?)")
}

func isDir(t tree.Tree, rel string) bool {
	st, err := t.Stat(rel)
	return err == nil && st.IsDir()
}

func (c *Capture) Name() string            { return "capture " + c.path }
func (c *Capture) Meta() Meta              { return c.meta }
func (c *Capture) Proc() procfs.FS         { return c.proc }
func (c *Capture) Sys() sysfs.FS           { return c.sys }
func (c *Capture) Ethtool() ethtool.Client { return c.et }

// Dir is the directory the capture's files are read from.
func (c *Capture) Dir() string { return c.dir }

// EthtoolWarnings returns the lines of iface's ethtool files, read so far,
// that could not be read (ethtool.Capture.Warnings).
func (c *Capture) EthtoolWarnings(iface string) []ethtool.FileWarnings { return c.et.Warnings(iface) }

// PCIConfig reads pci/ADDR/config.
func (c *Capture) PCIConfig(addr string) ([]byte, error) {
	if addr == "" || addr != filepath.Base(addr) || addr == ".." || addr == "." {
		return nil, fmt.Errorf("pci config of %q: not a PCI address", addr)
	}
	rel := "pci/" + addr + "/config"
	b, err := c.t.ReadFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (%w)", rel, ErrNotCaptured, unwrapPath(err))
	}
	return b, err
}

// Links reads ip/link.txt (`ip -d link show`).
func (c *Capture) Links() (map[string]Link, error) {
	const rel = "ip/link.txt"
	b, err := c.t.ReadFile(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w (%w)", rel, ErrNotCaptured, unwrapPath(err))
		}
		return nil, err
	}
	links, err := ParseIPLink(bytes.NewReader(b))
	if err != nil {
		var pe *tree.ParseError
		if errors.As(err, &pe) {
			return nil, &tree.ParseError{Path: c.t.Path(rel), Line: pe.Line, Err: pe.Err}
		}
		return nil, &tree.ParseError{Path: c.t.Path(rel), Err: err}
	}
	return links, nil
}

// Samples lists samples/NNN in order. A sample without a readable time
// file is an error naming it.
func (c *Capture) Samples() ([]Sample, error) {
	ents, err := c.t.ReadDir("samples")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, usage.Errorf("capture %s: samples: %w", c.path, unwrapPath(err))
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	out := make([]Sample, 0, len(names))
	for _, n := range names {
		sd := "samples/" + n
		b, err := c.t.ReadFile(sd + "/time")
		if err != nil {
			return nil, usage.Errorf("capture %s: %s/time: %w", c.path, sd, unwrapPath(err))
		}
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
		if err != nil {
			return nil, usage.Errorf("capture %s: %s/time: want an RFC 3339 time, got %q", c.path, sd, tree.Clip(strings.TrimSpace(string(b))))
		}
		out = append(out, Sample{
			Time:    t,
			Proc:    procfs.NewTreeFS(c.t.Sub(sd + "/proc")),
			Ethtool: ethtool.NewCaptureTree(c.t.Sub(sd + "/ethtool")),
		})
	}
	return out, nil
}

// unwrapPath drops the absolute temporary path an *fs.PathError carries.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var re *tree.RefusedError
	if errors.As(err, &re) {
		return fmt.Errorf("%w: %s", tree.ErrRefused, re.Why)
	}
	return err
}

// Close removes the extraction directory of a tarball.
func (c *Capture) Close() error {
	var err error
	if c.et != nil {
		err = c.et.Close()
	}
	if c.tmp != "" {
		err = errors.Join(err, os.RemoveAll(c.tmp))
		c.tmp = ""
	}
	return err
}

// gzipErrs prefixes errors of the decompressor with "gzip: " so a
// truncated file reads "gzip: unexpected EOF" rather than a bare EOF.
type gzipErrs struct{ r io.Reader }

func (g gzipErrs) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF && !strings.HasPrefix(err.Error(), "gzip: ") {
		err = fmt.Errorf("gzip: %w", err)
	}
	return n, err
}

// extractFile unpacks the .tar.gz at path into dst.
func extractFile(ctx context.Context, path, dst string) error {
	f, err := os.Open(path)
	if err != nil {
		return unwrapPath(err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if magic, _ := br.Peek(2); !bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		return errors.New("not a directory or a .tar.gz (no gzip header)")
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errors.New("gzip: unexpected EOF")
		}
		return err
	}
	return extract(ctx, tar.NewReader(gzipErrs{zr}), dst)
}

// extract writes a tar stream below dst. It refuses absolute names, names
// that climb out with "..", entries written through a symlink, absolute
// symlinks and symlinks that resolve outside dst; it keeps relative
// symlinks (sysfs is made of them). Modes are not kept: directories are
// 0755 and files 0644. It stops with ctx's error when ctx ends.
func extract(ctx context.Context, tr *tar.Reader, dst string) error {
	var total int64
	var links []string
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if n >= maxCaptureEntries {
			return fmt.Errorf("more than %d entries", maxCaptureEntries)
		}
		name, err := entryName(h.Name)
		if err != nil {
			return err
		}
		if name == "." {
			continue
		}
		target := filepath.Join(dst, name)
		if err := checkParents(dst, name); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return unwrapPath(err)
			}
		case tar.TypeReg:
			// Refused from the header, before anything is unpacked: a
			// small tarball can hold a gigabyte of zeros.
			if h.Size > maxEntryBytes {
				return fmt.Errorf("entry %s: %d bytes, more than the %d a capture file may hold", entryText(h.Name), h.Size, maxEntryBytes)
			}
			if total += h.Size; total > maxCaptureBytes {
				return fmt.Errorf("entry %s: the files add up to more than %d bytes", entryText(h.Name), maxCaptureBytes)
			}
			if err := writeEntry(target, tr); err != nil {
				return fmt.Errorf("%s: %w", entryText(h.Name), unwrapPath(err))
			}
		case tar.TypeLink:
			from, err := entryName(h.Linkname)
			if err != nil {
				return fmt.Errorf("%s: hard link: %w", entryText(h.Name), err)
			}
			if err := checkParents(dst, from); err != nil {
				return err
			}
			// Read beneath dst, as a capture's files are: a chain of
			// links cannot lead the copy out, nor to anything but a
			// regular file.
			b, err := tree.New(dst, tree.Limits{File: maxEntryBytes}).ReadFile(from)
			if err != nil {
				return fmt.Errorf("%s: hard link to %s: %w", entryText(h.Name), entryText(h.Linkname), unwrapPath(err))
			}
			// A copy counts as much as the file it copies.
			if total += int64(len(b)); total > maxCaptureBytes {
				return fmt.Errorf("entry %s: the files add up to more than %d bytes", entryText(h.Name), maxCaptureBytes)
			}
			err = writeEntry(target, bytes.NewReader(b))
			if err != nil {
				return fmt.Errorf("%s: %w", entryText(h.Name), unwrapPath(err))
			}
		case tar.TypeSymlink:
			t := h.Linkname
			if filepath.IsAbs(t) {
				return fmt.Errorf("%s: absolute symlink to %s (only relative links are kept)", entryText(h.Name), entryText(t))
			}
			if rel := filepath.Join(filepath.Dir(name), t); rel == ".." || strings.HasPrefix(rel, "../") {
				return fmt.Errorf("%s: symlink to %s leaves the capture", entryText(h.Name), entryText(t))
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return unwrapPath(err)
			}
			if err := os.Symlink(t, target); err != nil {
				return fmt.Errorf("%s: %w", entryText(h.Name), unwrapPath(err))
			}
			links = append(links, name)
		default:
			// Devices, fifos and the like have no place in a capture.
			continue
		}
	}
	// A chain of relative links can still climb out; resolve each one.
	realDst, err := filepath.EvalSymlinks(dst)
	if err != nil {
		return err
	}
	for _, l := range links {
		r, err := filepath.EvalSymlinks(filepath.Join(dst, l))
		if err != nil {
			continue // dangling: reads through it fail, nothing escapes
		}
		if r != realDst && !strings.HasPrefix(r, realDst+string(filepath.Separator)) {
			return fmt.Errorf("%s: symlink resolves outside the capture", entryText(l))
		}
	}
	return nil
}

// entryText is a tar entry's name or link target, for a message: a PAX
// header can make one a megabyte long.
func entryText(s string) string { return tree.ClipTo(s, 4096) }

// entryName cleans a tar entry name and refuses absolute or escaping ones.
func entryName(n string) (string, error) {
	if filepath.IsAbs(n) || strings.HasPrefix(n, "/") {
		return "", fmt.Errorf("entry %s: absolute path", entryText(n))
	}
	c := filepath.Clean(n)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("entry %s: leaves the capture", entryText(n))
	}
	return c, nil
}

// checkParents makes sure no directory above name inside dst is a symlink,
// so nothing is written (or read, for hard links) through one.
func checkParents(dst, name string) error {
	parts := strings.Split(filepath.Dir(name), string(filepath.Separator))
	p := dst
	for _, part := range parts {
		if part == "." || part == "" {
			continue
		}
		p = filepath.Join(p, part)
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return unwrapPath(err)
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("entry %s: goes through the symlink %s", entryText(name), entryText(strings.TrimPrefix(p, dst+"/")))
		}
	}
	return nil
}

func writeEntry(target string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	// Never write through a symlink an earlier entry made at this name.
	if st, err := os.Lstat(target); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		if err := os.Remove(target); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, io.LimitReader(r, maxEntryBytes)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
