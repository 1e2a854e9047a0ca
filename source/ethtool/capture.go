package ethtool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"linerate/source/tree"
)

// Capture is the Client of a capture's ethtool/ directory: one directory
// per interface holding the text of each ethtool command (docs/capture.md).
// Files are read through a tree.Tree: beneath the capture, regular files
// only, under its size limits.
type Capture struct {
	t tree.Tree

	mu       sync.Mutex
	warnings map[string]FileWarnings // by file, from its last read
}

var _ Client = (*Capture)(nil)

// FileWarnings are the Warnings of one file of a capture.
type FileWarnings struct {
	// Path is the file as a path of this machine.
	Path string
	// Iface and File name it inside ethtool/: "eth0", "g.txt".
	Iface, File string
	Warnings    []Warning
}

// NewCapture reads the directory dir as a capture's ethtool/ directory,
// under tree.CaptureLimits: dir/IFACE/i.txt is `ethtool -i IFACE`, and
// likewise k, c, g, l, x, S, link and n-tcp4, n-udp4, n-tcp6, n-udp6.
func NewCapture(dir string) *Capture { return NewCaptureTree(tree.New(dir, tree.CaptureLimits)) }

// NewCaptureTree reads t as a capture's ethtool/ directory. A missing file
// is an error wrapping ErrNotCaptured; a file holding ethtool's "not
// supported" line, one wrapping ErrNotSupported; a file refused by the tree,
// one wrapping tree.ErrRefused; text with nothing a parser can use, a
// *tree.ParseError naming the file and line. Lines a parser could not read
// in a file it otherwise read are Warnings.
func NewCaptureTree(t tree.Tree) *Capture {
	return &Capture{t: t, warnings: map[string]FileWarnings{}}
}

// Close does nothing: a capture holds no resources.
func (c *Capture) Close() error { return nil }

// Warnings returns the warnings of the files of iface read so far, by file.
func (c *Capture) Warnings(iface string) []FileWarnings {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []FileWarnings
	for _, w := range c.warnings {
		if w.Iface == iface && len(w.Warnings) > 0 {
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

// read reads IFACE/item.txt and parses it; errors name the file.
func read[T any](c *Capture, iface, item string, parse func(io.Reader) (T, []Warning, error)) (T, error) {
	var zero T
	file := item + ".txt"
	rel := path.Join(iface, file)
	if iface == "" || iface == "." || iface == ".." || strings.ContainsAny(iface, "/\\\x00") {
		return zero, fmt.Errorf("interface name %q: %w", iface, ErrNoInterface)
	}
	data, err := c.t.ReadFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return zero, fmt.Errorf("%s: %w", c.t.Path(rel), ErrNotCaptured)
	}
	if err != nil {
		return zero, err
	}
	v, ws, err := parse(bytes.NewReader(data))
	c.mu.Lock()
	c.warnings[rel] = FileWarnings{Path: c.t.Path(rel), Iface: iface, File: file, Warnings: ws}
	c.mu.Unlock()
	if err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			return zero, &tree.ParseError{Path: c.t.Path(rel), Line: se.Line, Err: errors.New(se.Msg)}
		}
		return zero, fmt.Errorf("%s: %w", c.t.Path(rel), err)
	}
	return v, nil
}

// DriverInfo reads IFACE/i.txt.
func (c *Capture) DriverInfo(iface string) (DriverInfo, error) {
	return read(c, iface, "i", ParseDriverInfo)
}

// LinkInfo reads IFACE/link.txt.
func (c *Capture) LinkInfo(iface string) (LinkInfo, error) {
	return read(c, iface, "link", ParseLinkInfo)
}

// Features reads IFACE/k.txt.
func (c *Capture) Features(iface string) (Features, error) {
	return read(c, iface, "k", ParseFeatures)
}

// Rings reads IFACE/g.txt.
func (c *Capture) Rings(iface string) (Rings, error) { return read(c, iface, "g", ParseRings) }

// Channels reads IFACE/l.txt.
func (c *Capture) Channels(iface string) (Channels, error) {
	return read(c, iface, "l", ParseChannels)
}

// Coalesce reads IFACE/c.txt.
func (c *Capture) Coalesce(iface string) (Coalesce, error) {
	return read(c, iface, "c", ParseCoalesce)
}

// RSS reads IFACE/x.txt.
func (c *Capture) RSS(iface string) (RSS, error) { return read(c, iface, "x", ParseRSS) }

// Stats reads IFACE/S.txt.
func (c *Capture) Stats(iface string) (Stats, error) { return read(c, iface, "S", ParseStats) }

// FlowHash reads IFACE/n-FT.txt and checks that it is about ft.
func (c *Capture) FlowHash(iface string, ft FlowType) (FlowHash, error) {
	if _, ok := flowTitle[ft]; !ok {
		return 0, fmt.Errorf("%s: unknown flow type %q (want tcp4, udp4, tcp6 or udp6)", iface, ft)
	}
	item := "n-" + string(ft)
	return read(c, iface, item, func(r io.Reader) (FlowHash, []Warning, error) {
		got, h, err := ParseFlowHash(r)
		if err != nil {
			return 0, nil, err
		}
		if got != ft {
			return 0, nil, syntaxf(1, "file is about %s flows, not %s", got, ft)
		}
		return h, nil, nil
	})
}

// CaptureFileNames lists the files of ethtool/IFACE/ in a capture.
var CaptureFileNames = []string{
	"i.txt", "link.txt", "k.txt", "g.txt", "l.txt", "c.txt", "x.txt", "S.txt",
	"n-tcp4.txt", "n-udp4.txt", "n-tcp6.txt", "n-udp6.txt",
}

// CaptureFile renders one file of ethtool/IFACE/ (a name from
// CaptureFileNames) from what c reports, as the ethtool command would
// print it. An item the driver does not support renders as ethtool's
// "Operation not supported" line; any other failure is returned.
func CaptureFile(c Client, iface, file string) ([]byte, error) {
	var text string
	var err error
	switch file {
	case "i.txt":
		var v DriverInfo
		if v, err = c.DriverInfo(iface); err == nil {
			text = RenderDriverInfo(iface, v)
		}
	case "link.txt":
		var v LinkInfo
		if v, err = c.LinkInfo(iface); err == nil {
			text = RenderLinkInfo(iface, v)
		}
	case "k.txt":
		var v Features
		if v, err = c.Features(iface); err == nil {
			text = RenderFeatures(iface, v)
		}
	case "g.txt":
		var v Rings
		if v, err = c.Rings(iface); err == nil {
			text = RenderRings(iface, v)
		}
	case "l.txt":
		var v Channels
		if v, err = c.Channels(iface); err == nil {
			text = RenderChannels(iface, v)
		}
	case "c.txt":
		var v Coalesce
		if v, err = c.Coalesce(iface); err == nil {
			text = RenderCoalesce(iface, v)
		}
	case "x.txt":
		var v RSS
		if v, err = c.RSS(iface); err == nil {
			text = RenderRSS(iface, v)
		}
	case "S.txt":
		var v Stats
		if v, err = c.Stats(iface); err == nil {
			text = RenderStats(iface, v)
		}
	default:
		ft, ok := strings.CutPrefix(strings.TrimSuffix(file, ".txt"), "n-")
		if _, known := flowTitle[FlowType(ft)]; !ok || !known || !strings.HasSuffix(file, ".txt") {
			return nil, fmt.Errorf("%s: not an ethtool capture file (want one of %s)", file, strings.Join(CaptureFileNames, " "))
		}
		var h FlowHash
		if h, err = c.FlowHash(iface, FlowType(ft)); err == nil {
			text = RenderFlowHash(iface, FlowType(ft), h)
		}
	}
	if errors.Is(err, ErrNotSupported) {
		return []byte(RenderError(err)), nil
	}
	if err != nil {
		return nil, err
	}
	return []byte(text), nil
}
