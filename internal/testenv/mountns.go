package testenv

import (
	"fmt"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// InMountNS runs fn on an OS thread of its own in a private mount
// namespace, where dir is a fresh tmpfs that allows device nodes (a test
// may mknod /dev/null's or /dev/full's numbers there) and that no other
// thread or process sees. The thread ends with fn, and the namespace and
// its mounts with it; the host's /dev is never touched. fn must do its
// work on the calling goroutine: another goroutine may run on a thread
// outside the namespace.
func InMountNS(t testing.TB, fn func(dir string) error) error {
	t.Helper()
	RequireRoot(t)
	dir := t.TempDir()
	return onLockedThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("unshare a mount namespace: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("make the mounts private: %w", err)
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
			return fmt.Errorf("mount a tmpfs on %s: %w", dir, err)
		}
		return fn(dir)
	})
}

// NullAndFull makes, in dir (a directory of InMountNS), character devices
// with the numbers of /dev/null (1:3: takes every write) and /dev/full
// (1:7: every write fails with ENOSPC), and returns their paths.
func NullAndFull(dir string) (null, full string, err error) {
	null, full = filepath.Join(dir, "null"), filepath.Join(dir, "full")
	for _, d := range []struct {
		path  string
		minor uint32
	}{{null, 3}, {full, 7}} {
		if err := unix.Mknod(d.path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, d.minor))); err != nil {
			return "", "", fmt.Errorf("mknod %s 1:%d: %w", d.path, d.minor, err)
		}
	}
	return null, full, nil
}

// CharDevices says which of paths is no longer a character device (a
// program replaced it), or nil.
func CharDevices(paths ...string) error {
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFCHR {
			return fmt.Errorf("%s is no longer a character device: mode %o", p, st.Mode)
		}
	}
	return nil
}
