package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"linerate/internal/usage"
)

type entry struct {
	name, body, link string
	dir              bool
	hard             bool // link is a hard link
	size             int64
}

func tarGz(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		switch {
		case e.dir:
			h.Typeflag, h.Size, h.Mode = tar.TypeDir, 0, 0o755
		case e.hard:
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, e.link, 0
		case e.link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		case e.size > 0:
			// A header that promises more than follows: the reader must
			// refuse it from the header alone.
			h.Size = e.size
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			zw.Close()
			return buf.Bytes()
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var goodEntries = []entry{
	{name: "box/", dir: true},
	{name: "box/meta.json", body: `{"time": "2026-11-22T06:40:00Z", "host": "routerpi", "kernel": "5.10.63-v8+", "arch": "arm64"}`},
	{name: "box/proc/stat", body: "cpu0 1 2 3 4 5 6 7 8 0 0\n"},
	{name: "box/sys/devices/pci0000:00/0000:00:00.0/0000:01:00.0/net/eth1/mtu", body: "1500\n"},
	{name: "box/sys/class/net/eth1", link: "../../devices/pci0000:00/0000:00:00.0/0000:01:00.0/net/eth1"},
	{name: "box/samples/001/time", body: "2026-11-22T06:40:02.5Z\n"},
	{name: "box/samples/000/time", body: "2026-11-22T06:40:01.5Z\n"},
}

func TestOpenCaptureTarball(t *testing.T) {
	p := writeTemp(t, "box.tar.gz", tarGz(t, goodEntries))
	src, err := OpenCapture(p)
	if err != nil {
		t.Fatal(err)
	}
	c := src.(*Capture)
	if src.Name() != "capture "+p {
		t.Errorf("Name = %q", src.Name())
	}
	m := src.Meta()
	if m.Host != "routerpi" || m.Kernel != "5.10.63-v8+" || !m.Time.Equal(time.Date(2026, 11, 22, 6, 40, 0, 0, time.UTC)) {
		t.Errorf("Meta = %+v", m)
	}
	// The relative sysfs link survived and resolves inside the capture.
	b, err := os.ReadFile(filepath.Join(src.Sys().Root(), "class/net/eth1/mtu"))
	if err != nil || string(b) != "1500\n" {
		t.Errorf("class/net/eth1/mtu through the link = %q, %v", b, err)
	}
	if l, err := os.Readlink(filepath.Join(src.Sys().Root(), "class/net/eth1")); err != nil || !strings.HasPrefix(l, "../../devices/") {
		t.Errorf("class/net/eth1 link = %q, %v", l, err)
	}
	samples, err := src.Samples()
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 2 || samples[0].Time.After(samples[1].Time) || samples[0].Time.Nanosecond() != 5e8 {
		t.Errorf("samples = %+v", samples)
	}
	tmp := c.tmp
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("extraction directory %s still there after Close", tmp)
	}
}

func TestOpenCaptureDirectory(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "proc"), 0o755)
	src, err := OpenCapture(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if (src.Meta() != Meta{}) {
		t.Errorf("a capture without meta.json has meta %+v", src.Meta())
	}
	if s, err := src.Samples(); err != nil || len(s) != 0 {
		t.Errorf("Samples = %v, %v", s, err)
	}
	if _, err := src.PCIConfig("0000:01:00.0"); err == nil || !strings.Contains(err.Error(), "not in the capture") {
		t.Errorf("PCIConfig of an absent device: %v", err)
	}
	if _, err := src.PCIConfig("../../etc"); err == nil {
		t.Error("PCIConfig accepted a path")
	}
}

func TestOpenCaptureBad(t *testing.T) {
	good := tarGz(t, goodEntries)
	cases := []struct {
		name string
		file []byte // nil: a path that does not exist
		dir  map[string]string
		want string
	}{
		{name: "missing", want: "no such file or directory"},
		{name: "not gzip", file: []byte("hello, this is not a tarball\n"), want: "no gzip header"},
		{name: "truncated gzip", file: good[:len(good)/2], want: "gzip: unexpected EOF"},
		{name: "truncated header", file: good[:5], want: "gzip: unexpected EOF"},
		{name: "gzip of garbage", file: func() []byte {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write(bytes.Repeat([]byte("garbage!"), 200))
			zw.Close()
			return b.Bytes()
		}(), want: "archive/tar"},
		{name: "absolute entry", file: tarGz(t, []entry{{name: "/etc/passwd", body: "x"}}), want: "absolute path"},
		{name: "dotdot entry", file: tarGz(t, []entry{{name: "box/../../x", body: "x"}}), want: "leaves the capture"},
		{name: "absolute symlink", file: tarGz(t, []entry{{name: "proc", link: "/proc"}}), want: "absolute symlink"},
		{name: "escaping symlink", file: tarGz(t, []entry{{name: "a/b", link: "../../x"}}), want: "leaves the capture"},
		{name: "symlink chain out", file: tarGz(t, []entry{
			{name: "proc/", dir: true},
			{name: "up", link: "."},
			// Lexically c/../up/.. is the top; really up is the top and
			// its .. is the directory above the capture.
			{name: "c/d", link: "../up/.."},
		}), want: "outside the capture"},
		{name: "write through symlink", file: tarGz(t, []entry{
			{name: "l", link: "."},
			{name: "l/proc/stat", body: "x"},
		}), want: "goes through the symlink"},
		{name: "no proc", file: tarGz(t, []entry{{name: "box/meta.json", body: "{}"}}), want: "no proc/ directory"},
		{name: "entry over the file cap", file: tarGz(t, []entry{{name: "proc/", dir: true}, {name: "proc/sys/net/core/rmem_max", size: 1000 << 20}}),
			want: "entry proc/sys/net/core/rmem_max: 1048576000 bytes, more than the 16777216 a capture file may hold"},
		{name: "hard link out through a chain", file: tarGz(t, []entry{
			{name: "proc/", dir: true},
			{name: "up", link: "."},
			{name: "c/f", link: "../up/../etc/passwd"}, // lexically "etc/passwd", inside
			{name: "proc/stat", link: "c/f", hard: true},
		}), want: "proc/stat: hard link to c/f: refused: a symbolic link on the way leads out of"},
		{name: "hard link to a directory", file: tarGz(t, []entry{
			{name: "proc/", dir: true},
			{name: "proc/stat", link: "proc", hard: true},
		}), want: "proc/stat: hard link to proc: is a directory"},
		{name: "dir without proc", dir: map[string]string{"sys/x": "1"}, want: "no proc/ directory"},
		{name: "bad meta", dir: map[string]string{"proc/stat": "", "meta.json": "{host: routerpi"}, want: "meta.json: invalid character"},
		{name: "fifo", want: "a named pipe (FIFO), not a regular file (want a directory or a .tar.gz)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p string
			switch {
			case c.dir != nil:
				p = t.TempDir()
				for name, body := range c.dir {
					os.MkdirAll(filepath.Dir(filepath.Join(p, name)), 0o755)
					os.WriteFile(filepath.Join(p, name), []byte(body), 0o644)
				}
			case c.file != nil:
				p = writeTemp(t, "box.tar.gz", c.file)
			case c.name == "fifo":
				p = filepath.Join(t.TempDir(), "box.tar.gz")
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
			default:
				p = filepath.Join(t.TempDir(), "nope.tar.gz")
			}
			src, err := OpenCapture(p)
			if err == nil {
				src.Close()
				t.Fatalf("OpenCapture accepted it")
			}
			if !usage.Is(err) {
				t.Errorf("error is not bad input: %v", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "capture "+p+": ") || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error = %q, want one line \"capture %s: ...%s...\"", msg, p, c.want)
			}
			// Nothing is left behind in the temporary directory.
			left, _ := filepath.Glob(filepath.Join(os.TempDir(), "linerate-capture-*"))
			for _, l := range left {
				if st, err := os.Stat(l); err == nil && time.Since(st.ModTime()) < 2*time.Second {
					t.Errorf("left %s behind", l)
				}
			}
		})
	}
}

// The files of a tarball add up to at most maxCaptureBytes.
func TestOpenCaptureTotalCap(t *testing.T) {
	defer func(n int64) { maxCaptureBytes = n }(maxCaptureBytes)
	maxCaptureBytes = 15
	p := writeTemp(t, "box.tar.gz", tarGz(t, []entry{{name: "proc/stat", body: "0123456789"}, {name: "proc/softirqs", body: "0123456789"}}))
	_, err := OpenCapture(p)
	if err == nil || !strings.Contains(err.Error(), "entry proc/softirqs: the files add up to more than 15 bytes") {
		t.Errorf("err = %v", err)
	}
	// A hard link counts as much as a copy.
	p = writeTemp(t, "box.tar.gz", tarGz(t, []entry{{name: "proc/stat", body: "0123456789"}, {name: "proc/x", link: "proc/stat", hard: true}}))
	if _, err := OpenCapture(p); err == nil || !strings.Contains(err.Error(), "entry proc/x: the files add up to more than 15 bytes") {
		t.Errorf("hard link: err = %v", err)
	}
}

// An extraction directory left by a process that is gone (killed with
// SIGKILL) is removed by the next OpenCapture; one of a live process is not.
func TestOpenCaptureRemovesStale(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(tmp, fmt.Sprintf("linerate-capture-%d-1", dead.Process.Pid))
	live := filepath.Join(tmp, fmt.Sprintf("linerate-capture-%d-2", os.Getppid()))
	for _, d := range []string{stale, live} {
		os.MkdirAll(filepath.Join(d, "proc"), 0o755)
	}
	// `linerate capture` run in TMPDIR on a host named like an address:
	// the user's tarball and directory, whatever the number in their name.
	users := []string{
		filepath.Join(tmp, fmt.Sprintf("linerate-capture-%d-0-0-1-20261124T101010Z.tar.gz", dead.Process.Pid)),
		filepath.Join(tmp, fmt.Sprintf("linerate-capture-%d-0-0-1-20261124T101010Z", dead.Process.Pid)),
	}
	os.WriteFile(users[0], []byte("a capture"), 0o644)
	os.MkdirAll(filepath.Join(users[1], "proc"), 0o755)
	src, err := OpenCapture(writeTemp(t, "box.tar.gz", tarGz(t, goodEntries)))
	if err != nil {
		t.Fatal(err)
	}
	src.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s is still there", stale)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("%s of a live process was removed: %v", live, err)
	}
	for _, u := range users {
		if _, err := os.Stat(u); err != nil {
			t.Errorf("the user's %s was removed: %v", u, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "linerate-capture-*")); len(left) != 3 {
		t.Errorf("left: %v", left)
	}
}

func TestCaptureSamplesBadTime(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "proc"), 0o755)
	os.MkdirAll(filepath.Join(dir, "samples", "000"), 0o755)
	os.WriteFile(filepath.Join(dir, "samples", "000", "time"), []byte("yesterday\n"), 0o644)
	src, err := OpenCapture(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	_, err = src.Samples()
	if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "samples/000/time") {
		t.Errorf("Samples with a bad time: %v", err)
	}
	os.Remove(filepath.Join(dir, "samples", "000", "time"))
	if _, err = src.Samples(); err == nil || !strings.Contains(err.Error(), "samples/000/time") {
		t.Errorf("Samples without a time file: %v", err)
	}
}

func TestParseIPLink(t *testing.T) {
	// testdata/ip-link.txt is `ip -d link show` on the development machine.
	f, err := os.Open("testdata/ip-link.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	links, err := ParseIPLink(f)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Link{
		"lo":   {Name: "lo", Index: 1, MTU: 65536},
		"ifb0": {Name: "ifb0", Index: 2, MTU: 1500},
		"ifb1": {Name: "ifb1", Index: 3, MTU: 1500},
		"eth0": {Name: "eth0", Index: 4, MTU: 1400, MinMTU: 68, MaxMTU: 65535},
	}
	if len(links) != len(want) {
		t.Errorf("got %d links, want %d: %+v", len(links), len(want), links)
	}
	for n, w := range want {
		if links[n] != w {
			t.Errorf("%s = %+v, want %+v", n, links[n], w)
		}
	}

	// veth names carry their peer; RenderIPLink's output reads back.
	v, err := ParseIPLink(strings.NewReader("7: veth0@if6: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1400 qdisc noqueue state UP\n    link/ether 1a:2b:3c:4d:5e:6f brd ff:ff:ff:ff:ff:ff link-netns lrt-1 promiscuity 0 minmtu 68 maxmtu 65535\n    veth numtxqueues 3 numrxqueues 3\n"))
	if err != nil || v["veth0"] != (Link{Name: "veth0", Index: 7, MTU: 1400, MinMTU: 68, MaxMTU: 65535}) {
		t.Errorf("veth0 = %+v, %v", v, err)
	}
	var buf bytes.Buffer
	if err := RenderIPLink(&buf, links); err != nil {
		t.Fatal(err)
	}
	back, err := ParseIPLink(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for n, w := range want {
		if back[n] != w {
			t.Errorf("rendered %s read back as %+v, want %+v", n, back[n], w)
		}
	}

	for _, bad := range []string{"eth0 mtu 1500\n", "x: eth0: <UP> mtu 1500\n", "4: eth0: <UP> mtu big\n", "    minmtu 68\n"} {
		if _, err := ParseIPLink(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseIPLink(%q) gave no error", bad)
		}
	}
}

// stopAfter is a context that ends once Err has been asked n times: a
// signal arriving in the middle of unpacking, at a known entry.
type stopAfter struct {
	context.Context
	n int
}

func (c *stopAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// Ctrl-C or SIGTERM while a tarball is unpacked stops the unpacking at the
// next entry and removes what was unpacked; the error is the interruption,
// not bad input.
func TestOpenCaptureInterrupted(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	p := writeTemp(t, "box.tar.gz", tarGz(t, goodEntries))
	_, err := OpenCaptureContext(&stopAfter{Context: context.Background(), n: 3}, p)
	if !errors.Is(err, context.Canceled) || usage.Is(err) || !strings.Contains(err.Error(), "unpacking stopped") {
		t.Errorf("err = %v, want the interruption", err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "linerate-capture-*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
