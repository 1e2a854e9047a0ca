package outfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/internal/usage"
)

func text(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// entries are the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range des {
		out = append(out, d.Name())
	}
	return out
}

// A regular file is replaced whole, keeping its mode; a failed write
// leaves it as it was; no temporary file stays behind.
func TestReplacesRegularFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.html")
	if err := Write(p, text("new\n")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode() != 0o644 {
		t.Errorf("a new file has mode %v, want 0644", st.Mode())
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, text("newer\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "newer\n" {
		t.Errorf("content %q", b)
	}
	if st, _ := os.Stat(p); st.Mode() != 0o600 {
		t.Errorf("a replaced file has mode %v, want its own 0600", st.Mode())
	}
	boom := errors.New("boom")
	err := Write(p, func(w io.Writer) error { io.WriteString(w, "half"); return boom })
	if !errors.Is(err, boom) {
		t.Errorf("a failed write: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "newer\n" {
		t.Errorf("after a failed write the file holds %q", b)
	}
	if got := entries(t, dir); !slices.Equal(got, []string{"out.html"}) {
		t.Errorf("the directory holds %v", got)
	}
}

// A path that cannot take a file is bad input: none, a directory, a
// directory that is not there, a link that leads nowhere (nothing is created at its
// target).
func TestBadPaths(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "target"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", dir, filepath.Join(dir, "no", "such.html"), filepath.Join(dir, "dangling")} {
		err := Write(p, text("x"))
		if err == nil || !usage.Is(err) || strings.Contains(err.Error(), ".tmp") {
			t.Errorf("%s: %v (want bad input, no temporary file named)", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "target")); err == nil {
		t.Error("writing to a dangling link created its target")
	}
}

// A link is written through, not replaced: /dev/stdout is a link, and so
// may be a file an administrator keeps elsewhere.
func TestLinkWrittenThrough(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "real.json"), filepath.Join(dir, "link.json")
	if err := os.WriteFile(target, []byte("a much longer old content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, text("new\n")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", st.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new\n" {
		t.Errorf("the link's target holds %q", b)
	}
}

// A named pipe receives the bytes and stays a pipe.
func TestFIFO(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fifo")
	want := strings.Repeat("a line of the output\n", 10000) + "end\n" // more than a pipe holds
	read := testenv.FIFO(t, p, "end\n", 30*time.Second)
	if err := Write(p, text(want)); err != nil {
		t.Fatal(err)
	}
	if s := read(); s != want {
		t.Errorf("the reader got %d bytes, want %d", len(s), len(want))
	}
	if st, _ := os.Lstat(p); st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe is now %v", st.Mode())
	}
	if got := entries(t, dir); !slices.Equal(got, []string{"fifo"}) {
		t.Errorf("the directory holds %v", got)
	}
}

// Character devices with /dev/null's and /dev/full's numbers, made in a
// private mount namespace's tmpfs (never the host's /dev): each stays the
// device it was; the null one takes the output, the full one fails with
// ENOSPC, an error that is not bad input.
func TestDevices(t *testing.T) {
	err := testenv.InMountNS(t, func(dir string) error {
		null, full, err := testenv.NullAndFull(dir)
		if err != nil {
			return err
		}
		if err := Write(null, text(strings.Repeat("x", 1<<20))); err != nil {
			return fmt.Errorf("null: %w", err)
		}
		err = Write(full, text("{}\n"))
		if !errors.Is(err, syscall.ENOSPC) || usage.Is(err) {
			return fmt.Errorf("full: %v, want ENOSPC as a failure", err)
		}
		if err := testenv.CharDevices(null, full); err != nil {
			return err
		}
		des, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		if len(des) != 2 {
			return fmt.Errorf("the directory holds %d entries, want the 2 devices", len(des))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
