package tree

import (
	"errors"
	iofs "io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"linerate/internal/testenv"
)

// mkTree makes a directory holding files (name → content; a content
// starting with "->" makes a symbolic link to the rest).
func mkTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// refused checks that err refuses and says why.
func refused(t *testing.T, err error, why string) {
	t.Helper()
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v, want a refusal", err)
	}
	if !strings.Contains(err.Error(), why) {
		t.Errorf("err = %q, want it to say %q", err, why)
	}
}

// within fails the test when f has not returned after a long while: the
// reads under test must never block.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("blocked")
	}
}

func TestReadInside(t *testing.T) {
	dir := mkTree(t, map[string]string{
		"proc/sys/net/core/rmem_max":   "212992\n",
		"sys/devices/pci/net/eth0/mtu": "1500\n",
		"sys/class/net/eth0":           "->../../devices/pci/net/eth0",
		"sys/alias":                    "->class/net/eth0/mtu",
	})
	tr := New(dir, CaptureLimits)
	b, err := tr.ReadFile("proc/sys/net/core/rmem_max")
	if err != nil || string(b) != "212992\n" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	sys := tr.Sub("sys")
	for _, rel := range []string{"class/net/eth0/mtu", "alias"} {
		if b, err := sys.ReadFile(rel); err != nil || string(b) != "1500\n" {
			t.Errorf("ReadFile(%s) = %q, %v", rel, b, err)
		}
	}
	if target, err := sys.Readlink("class/net/eth0"); err != nil || target != "../../devices/pci/net/eth0" {
		t.Errorf("Readlink = %q, %v", target, err)
	}
	if st, err := sys.Lstat("class/net/eth0"); err != nil || st.Mode()&iofs.ModeSymlink == 0 {
		t.Errorf("Lstat = %v, %v; want a link", st, err)
	}
	if st, err := sys.Stat("class/net/eth0"); err != nil || !st.IsDir() {
		t.Errorf("Stat = %v, %v; want a directory", st, err)
	}
	ents, err := sys.ReadDir("class/net")
	if err != nil || len(ents) != 1 || ents[0].Name() != "eth0" {
		t.Errorf("ReadDir = %v, %v", ents, err)
	}
	if _, err := tr.ReadFile("proc/nope"); !errors.Is(err, iofs.ErrNotExist) || !strings.Contains(err.Error(), filepath.Join(dir, "proc/nope")) {
		t.Errorf("missing file: %v, want not-exist naming the path", err)
	}
	if _, err := tr.ReadFile("proc"); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("directory: %v, want EISDIR", err)
	}
	// ".." stays at the top.
	if b, err := sys.ReadFile("../../../proc/sys/net/core/rmem_max"); err == nil {
		t.Errorf("../ climbed out of the sub tree: %q", b)
	}
}

// The probe of issue 11: a capture's sysctl linked to /etc/shadow printed
// root's hash.
func TestLinkOutRefused(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "shadow")
	os.WriteFile(secret, []byte("root:$6$secret\n"), 0o600)
	dir := mkTree(t, map[string]string{
		"proc/sys/net/core/rmem_max": "->" + secret,
		"proc/sys/net/core/wmem_max": "->../../../../../../../../../../.." + secret,
		"proc/sys/net/ipv4":          "->/etc",
		"proc/zero":                  "->/dev/zero",
		"proc/self":                  "->/proc/self",
	})
	tr := New(dir, CaptureLimits).Sub("proc")
	for _, rel := range []string{"sys/net/core/rmem_max", "sys/net/core/wmem_max", "sys/net/ipv4/passwd", "zero", "self/environ"} {
		b, err := tr.ReadFile(rel)
		if strings.Contains(string(b), "secret") {
			t.Fatalf("%s: read %q from outside", rel, b)
		}
		refused(t, err, "leads out of")
	}
	_, err := tr.ReadDir("sys/net/ipv4")
	refused(t, err, "leads out of")
}

// A 3 GB sparse file is refused from its size, without reading.
func TestSparseFileRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rmem_max")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tr := New(dir, CaptureLimits)
	_, err = tr.ReadFile("rmem_max")
	refused(t, err, "more than the 16 MiB")
	if used := tr.used.Load(); used != 0 {
		t.Errorf("read %d bytes of it", used)
	}
}

func TestFIFOAndSocketRefused(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Symlink("fifo", filepath.Join(dir, "link-to-fifo"))
	tr := New(dir, CaptureLimits)
	within(t, func() {
		_, err := tr.ReadFile("fifo")
		refused(t, err, "named pipe")
		_, err = tr.ReadFile("link-to-fifo")
		refused(t, err, "named pipe")
		_, err = tr.ReadFile("sock")
		refused(t, err, "socket")
		if _, err := tr.ReadDir("fifo"); err == nil || !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("ReadDir(fifo) = %v, want ENOTDIR", err)
		}
	})
}

// A device node inside the tree (only root can make one) is refused
// without being opened.
func TestDeviceRefused(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	if err := unix.Mknod(filepath.Join(dir, "zero"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 5))); err != nil {
		t.Fatalf("mknod: %v", err)
	}
	tr := New(dir, CaptureLimits)
	within(t, func() {
		_, err := tr.ReadFile("zero")
		refused(t, err, "character device")
	})
}

func TestLimits(t *testing.T) {
	dir := mkTree(t, map[string]string{
		"a": strings.Repeat("a", 60), "b": strings.Repeat("b", 60), "big": strings.Repeat("x", 101),
		"d/1": "", "d/2": "", "d/3": "",
	})
	tr := New(dir, Limits{File: 100, Total: 100, Entries: 2})
	_, err := tr.ReadFile("big")
	refused(t, err, "more than the 100 bytes")
	if _, err := tr.ReadFile("a"); err != nil {
		t.Fatal(err)
	}
	// The total is shared with Subs.
	_, err = tr.Sub("").ReadFile("b")
	refused(t, err, "add up to more than 100 bytes")
	_, err = tr.ReadFile("a")
	refused(t, err, "add up to more than")
	_, err = tr.ReadDir("d")
	refused(t, err, "more than 2 entries")
}

// A file that reports size 0 (as /proc files do) but holds more than the
// limit is read only to one byte past it.
func TestGrowingFileRefused(t *testing.T) {
	tr := New("/proc", Limits{File: 16})
	_, err := tr.ReadFile("self/mountinfo")
	refused(t, err, "more than 16 bytes")
	if got := tr.used.Load(); got != 17 {
		t.Errorf("read %d bytes, want 17", got)
	}
}

// The live trees linerate reads work through the same code.
func TestLive(t *testing.T) {
	proc := New("/proc", LiveLimits)
	b, err := proc.ReadFile("sys/kernel/osrelease")
	if err != nil || len(b) == 0 {
		t.Fatalf("osrelease: %q %v", b, err)
	}
	// /proc/net is a link to self/net: relative, inside.
	if b, err := proc.ReadFile("net/dev"); err != nil || !strings.Contains(string(b), "lo:") {
		t.Errorf("net/dev: %v", err)
	}
	sys := New("/sys", LiveLimits)
	if _, err := sys.ReadFile("class/net/lo/mtu"); err != nil {
		t.Errorf("class/net/lo/mtu: %v", err)
	}
	// A magic link is never followed.
	if _, err := proc.ReadFile("self/exe"); !errors.Is(err, ErrRefused) {
		t.Errorf("self/exe: %v, want refused", err)
	}
}

// A file named on the command line: links followed, a pipe or device
// refused without blocking, the size capped.
func TestReadNamed(t *testing.T) {
	dir := mkTree(t, map[string]string{"result.json": "{}", "link": "->result.json", "big": strings.Repeat("x", 101)})
	unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644)
	for _, name := range []string{"result.json", "link"} {
		if b, err := ReadNamed(filepath.Join(dir, name), 100); err != nil || string(b) != "{}" {
			t.Errorf("%s: %q, %v", name, b, err)
		}
	}
	within(t, func() {
		_, err := ReadNamed(filepath.Join(dir, "fifo"), 100)
		refused(t, err, "named pipe")
		_, err = ReadNamed("/dev/zero", 100)
		refused(t, err, "character device")
	})
	_, err := ReadNamed(filepath.Join(dir, "big"), 100)
	refused(t, err, "more than the 100 bytes")
	if _, err := ReadNamed(filepath.Join(dir, "nope"), 100); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}
