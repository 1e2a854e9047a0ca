package lab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"linerate/internal/nsthread"
)

// Kernel paths the lab works with. This file is the only place that names
// them.
const (
	// netnsDir is where named network namespaces are bound, as iproute2
	// and github.com/vishvananda/netns do it (ip-netns(8)).
	netnsDir = "/run/netns"
	// selfFd is a process's open files; a bind mount of the fd of a
	// namespace keeps the namespace alive under a name.
	selfFd = "/proc/self/fd"
	// procSys holds the sysctls; under /proc/sys/net a thread sees the
	// sysctls of its own network namespace.
	procSys = "/proc/sys"
	// procDir lists the processes; /proc/PID/ns/net is the network
	// namespace of each.
	procDir = "/proc"
)

func netnsPath(name string) string { return filepath.Join(netnsDir, name) }

// NetnsExists reports whether a named network namespace exists.
func NetnsExists(name string) (bool, error) {
	_, err := os.Lstat(netnsPath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("network namespace %s: %w", name, err)
	}
	return true, nil
}

// inNetns runs fn on a throwaway thread inside the namespace h (where /sys
// is that namespace's sysfs).
func inNetns(h netns.NsHandle, fn func() error) error {
	th, err := nsthread.Enter(int(h), nsthread.Options{})
	if err != nil {
		return fmt.Errorf("enter network namespace: %w", err)
	}
	err = th.Do(fn)
	if cerr := th.Close(); err == nil {
		err = cerr
	}
	return err
}

// newNetns makes an unnamed network namespace on a throwaway thread and
// returns a handle to it, with its identity.
func newNetns() (h netns.NsHandle, dev, ino uint64, err error) {
	h = netns.None()
	// netns.New moves the calling thread into the new namespace: a
	// throwaway thread takes that.
	err = nsthread.Run(func() error {
		var err error
		h, err = netns.New()
		return err
	})
	if err != nil {
		return netns.None(), 0, 0, fmt.Errorf("create network namespace: %w", err)
	}
	dev, ino, err = identity(int(h))
	if err != nil {
		h.Close()
		return netns.None(), 0, 0, err
	}
	return h, dev, ino, nil
}

func identity(fd int) (dev, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, fmt.Errorf("stat network namespace: %w", err)
	}
	return uint64(st.Dev), st.Ino, nil
}

// bindNetns names the namespace h: it creates /run/netns/NAME, failing if
// it exists (so a namespace made meanwhile by someone else is never
// covered), and bind-mounts the namespace on it.
func bindNetns(h netns.NsHandle, name string) error {
	p := netnsPath(name)
	f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("network namespace %s appeared while the lab was built: %w", name, err)
	}
	if err != nil {
		return fmt.Errorf("name network namespace %s: %w", name, err)
	}
	f.Close()
	src := fmt.Sprintf("%s/%d", selfFd, int(h))
	if err := unix.Mount(src, p, "none", unix.MS_BIND, ""); err != nil {
		os.Remove(p)
		return fmt.Errorf("name network namespace %s: bind mount: %w", name, err)
	}
	return nil
}

// shareNetnsDir makes /run/netns a shared mount, as `ip netns add` does,
// so that a namespace unbound later (lab down) is also unbound in the
// mount namespaces of commands `lab exec` started earlier, and does not
// live on there.
func shareNetnsDir() error {
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", netnsDir, err)
	}
	err := unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) {
		// Not a mount point yet: bind it on itself, then share it.
		if err = unix.Mount(netnsDir, netnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err == nil {
			err = unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		}
	}
	if err != nil {
		return fmt.Errorf("make %s a shared mount: %w", netnsDir, err)
	}
	return nil
}

// Ownership of a named namespace against the journal.
type ownership int

const (
	absent      ownership = iota // nothing by that name
	owned                        // the namespace the journal recorded
	placeholder                  // an empty file: Up died between naming and binding
	foreign                      // someone else's namespace (or file)
)

// owner tells whether the name in /run/netns is the namespace o recorded.
// A namespace is ours only if its device and inode match the journal, which
// records them before the name is taken.
func owner(o Object) (ownership, error) {
	p := netnsPath(o.Netns)
	var st unix.Stat_t
	err := unix.Lstat(p, &st)
	if errors.Is(err, unix.ENOENT) {
		return absent, nil
	}
	if err != nil {
		return foreign, fmt.Errorf("network namespace %s: %w", o.Netns, err)
	}
	if o.Ino == 0 {
		// Up died before the namespace existed; the name was never ours.
		return foreign, nil
	}
	if uint64(st.Dev) == o.Dev && st.Ino == o.Ino {
		return owned, nil
	}
	var dir unix.Stat_t
	if err := unix.Stat(netnsDir, &dir); err != nil {
		return foreign, fmt.Errorf("stat %s: %w", netnsDir, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size == 0 && st.Dev == dir.Dev {
		return placeholder, nil
	}
	return foreign, nil
}

// openOwned opens the named namespace of o if it is the one recorded.
func openOwned(o Object) (netns.NsHandle, bool, error) {
	h, err := netns.GetFromPath(netnsPath(o.Netns))
	if errors.Is(err, unix.ENOENT) {
		return netns.None(), false, nil
	}
	if err != nil {
		return netns.None(), false, fmt.Errorf("open network namespace %s: %w", o.Netns, err)
	}
	dev, ino, err := identity(int(h))
	if err != nil || o.Ino == 0 || dev != o.Dev || ino != o.Ino {
		h.Close()
		return netns.None(), false, err
	}
	return h, true, nil
}

// unbindNetns removes the name of a namespace; the kernel frees the
// namespace, its links and its tables once nothing else holds it.
func unbindNetns(name string) error {
	p := netnsPath(name)
	if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unbind network namespace %s: %w", name, err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove network namespace %s: %w", name, err)
	}
	return nil
}

// setSysctl writes a sysctl ("net/ipv4/ip_forward") inside namespace h.
func setSysctl(h netns.NsHandle, key, value string) error {
	return inNetns(h, func() error {
		p := filepath.Join(procSys, key)
		if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
			return fmt.Errorf("sysctl: %w", err)
		}
		return nil
	})
}

// nsID identifies a namespace by the device and inode of its nsfs file.
type nsID struct{ dev, ino uint64 }

// pidsIn lists the processes, other than this one, whose network namespace
// is one of ids.
func pidsIn(ids map[nsID]bool) []int {
	ents, err := os.ReadDir(procDir)
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		var st unix.Stat_t
		// A process that exited meanwhile, or a zombie, has no namespace.
		if unix.Stat(filepath.Join(procDir, e.Name(), "ns", "net"), &st) != nil {
			continue
		}
		if ids[nsID{uint64(st.Dev), st.Ino}] {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stopProcesses ends the processes running in namespaces ids: SIGTERM,
// then SIGKILL for those still there after grace. A process keeps its
// namespace alive, so a lab is not gone until they are.
func stopProcesses(ids map[nsID]bool, grace time.Duration) error {
	sig := unix.SIGTERM
	deadline := time.Now().Add(grace)
	for {
		pids := pidsIn(ids)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if sig == unix.SIGKILL {
				return fmt.Errorf("processes %v still run in the lab after SIGKILL", pids)
			}
			sig, deadline = unix.SIGKILL, time.Now().Add(time.Second)
		}
		for _, p := range pids {
			unix.Kill(p, sig)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
