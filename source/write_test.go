package source

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// thisMachine is the capture recorded with `linerate capture` on the
// development machine.
const thisMachine = "../testdata/captures/this-machine"

// TestWriteCaptureOfCapture captures a capture: every /proc and /sys file,
// symlink and PCI config space must come out byte for byte the same, as a
// directory and as a tarball.
func TestWriteCaptureOfCapture(t *testing.T) {
	src, err := OpenCapture(thisMachine)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	sysctls := []string{"net.core.rmem_max", "net.ipv4.tcp_rmem", "net.netfilter.nf_conntrack_max"}
	opts := CaptureOptions{Samples: 2, Interval: 1, Sysctls: sysctls}

	dir := filepath.Join(t.TempDir(), "copy")
	sink, err := DirSink(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCapture(context.Background(), src, sink, opts); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	compareTrees(t, thisMachine, dir, sysctls)

	tarball := filepath.Join(t.TempDir(), "copy.tar.gz")
	f, err := os.Create(tarball)
	if err != nil {
		t.Fatal(err)
	}
	ts := TarSink(f, "copy")
	if err := WriteCapture(context.Background(), src, ts, opts); err != nil {
		t.Fatal(err)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	back, err := OpenCapture(tarball)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	compareTrees(t, thisMachine, back.(*Capture).Dir(), sysctls)
	samples, err := back.Samples()
	if err != nil || len(samples) != 2 {
		t.Errorf("samples of the copy: %d, %v", len(samples), err)
	}
	if back.Meta() != src.Meta() {
		t.Errorf("meta %+v, want %+v", back.Meta(), src.Meta())
	}
	for _, it := range ethtoolItems {
		p := filepath.Join(back.(*Capture).Dir(), "ethtool", "eth0", it.file)
		if b, err := os.ReadFile(p); err != nil || len(b) == 0 {
			t.Errorf("%s: %v (%d bytes)", it.file, err, len(b))
		}
	}
}

// compareTrees checks that every file and link of want's proc/, sys/ and
// pci/ is in got, except sysctls not asked for.
func compareTrees(t *testing.T, want, got string, sysctls []string) {
	t.Helper()
	keep := map[string]bool{"proc/sys/kernel/hostname": true, "proc/sys/kernel/osrelease": true}
	for _, s := range sysctls {
		keep["proc/sys/"+strings.ReplaceAll(s, ".", "/")] = true
	}
	n := 0
	for _, top := range []string{"proc", "sys", "pci"} {
		err := filepath.WalkDir(filepath.Join(want, top), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(want, p)
			if strings.HasPrefix(rel, "proc/sys/") && !keep[rel] {
				return nil
			}
			q := filepath.Join(got, rel)
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				wl, _ := os.Readlink(p)
				gl, err := os.Readlink(q)
				if err != nil || gl != wl {
					t.Errorf("%s: link to %q, want %q (%v)", rel, gl, wl, err)
				}
			case e.Name() == keepFile:
				// A tarball keeps the empty directory itself.
				if st, err := os.Stat(filepath.Dir(q)); err != nil || !st.IsDir() {
					t.Errorf("%s: directory missing (%v)", filepath.Dir(rel), err)
				}
			case e.Type().IsRegular():
				wb, _ := os.ReadFile(p)
				gb, err := os.ReadFile(q)
				if err != nil || !bytes.Equal(gb, wb) {
					t.Errorf("%s: %q, want %q (%v)", rel, gb, wb, err)
				}
				n++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 50 {
		t.Errorf("compared only %d files", n)
	}
}

// Copying a capture reads it under the rules inspect reads it by (package
// tree): a file linked out of it, a named pipe and a file over the size
// limit are left out of the copy, and nothing blocks.
func TestWriteCaptureOfHostileCapture(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "box")
	if err := os.CopyFS(dir, os.DirFS(thisMachine)); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("do-not-copy-me\n"), 0o600)
	swap := func(rel string, make func(p string) error) {
		p := filepath.Join(dir, rel)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := make(p); err != nil {
			t.Fatal(err)
		}
	}
	swap("proc/softirqs", func(p string) error { return os.Symlink(secret, p) })
	swap("proc/net/snmp", func(p string) error { return syscall.Mkfifo(p, 0o644) })
	swap("proc/interrupts", func(p string) error {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return err
		}
		return os.Truncate(p, 3<<30)
	})
	src, err := OpenCapture(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out := filepath.Join(t.TempDir(), "copy")
	sink, err := DirSink(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCapture(context.Background(), src, sink, CaptureOptions{Samples: 1}); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"proc/softirqs", "proc/net/snmp", "proc/interrupts", "samples/000/proc/softirqs"} {
		if _, err := os.Lstat(filepath.Join(out, rel)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is in the copy (%v)", rel, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "proc/stat")); err != nil || len(b) == 0 {
		t.Errorf("proc/stat: %v", err)
	}
}
