package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"linerate/internal/usage"
	"linerate/internal/version"
	"linerate/source/ethtool"
	"linerate/source/procfs"
	"linerate/source/sysfs"
)

// The live machine's mount points and the directory where `ip netns add`
// binds named network namespaces. These are the only places linerate names
// /proc, /sys and /var/run/netns.
const (
	procRoot  = "/proc"
	sysRoot   = "/sys"
	netnsRoot = "/var/run/netns"
)

// Live reads the machine linerate runs on, or one of its network
// namespaces.
type Live struct {
	name  string
	netns string
	proc  procfs.FS
	sys   sysfs.FS
	et    ethtool.Client
	// ns is the thread parked in the network namespace; nil for the host.
	ns *nsThread
	// sysMount is the sysfs mounted for the namespace; "" for the host.
	sysMount string
}

// NewLive returns a source for this machine as the calling process sees it.
func NewLive() (Source, error) {
	et, err := ethtool.NewLive()
	if err != nil {
		return nil, fmt.Errorf("ethtool: %w", err)
	}
	return &Live{
		name: "live",
		proc: procfs.NewFS(procRoot),
		sys:  sysfs.NewFS(sysRoot),
		et:   et,
	}, nil
}

// NewLiveNetns returns a source for the network namespace bound at
// /var/run/netns/NAME (as `ip netns add NAME` makes).
//
// How it sees the namespace without moving the whole process into it:
//
//   - One goroutine locks itself to an OS thread for good (it never
//     unlocks, so the Go runtime throws the thread away when the goroutine
//     ends) and setns(2)s that thread into the namespace. What depends on
//     the caller's namespace runs on that thread: creating the ethtool
//     client (its socket stays in the namespace it was made in, so calls
//     work from any goroutine afterwards), the rtnetlink dump behind Links,
//     sysctl reads (/proc/sys/net answers for the namespace of the thread
//     that opens the file), and the commands a capture runs.
//   - /proc/PID/task/TID/net of that thread shows the namespace's
//     /proc/net files to any thread, so the procfs reader uses it as its
//     net directory.
//   - sysfs shows class/net for the namespace of whoever mounted it, so the
//     parked thread mounts a fresh sysfs on a new temporary directory. It is
//     mounted in the process's own mount namespace (not a private one made
//     with unshare(CLONE_NEWNS)) so that every thread reads it through a
//     plain path: symlink resolution (filepath.EvalSymlinks) would restart
//     at "/" on the magic /proc/PID/task/TID/root link and leave a private
//     mount. Close unmounts it (lazily) and removes the directory; a process
//     killed before Close leaves a read-only sysfs mounted under the
//     temporary directory (linerate-sysfs-NAME-*), harmless and removable
//     with umount.
func NewLiveNetns(name string) (Source, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, usage.Errorf("netns %q: not a namespace name", name)
	}
	path := filepath.Join(netnsRoot, name)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usage.Errorf("no network namespace %s (have: %s)", name, listNetns())
		}
		return nil, fmt.Errorf("netns %s: %w", name, err)
	}
	ns, err := startNSThread(path)
	if err != nil {
		return nil, fmt.Errorf("enter netns %s: %w", name, err)
	}
	l := &Live{name: "live netns " + name, netns: name, ns: ns}
	fail := func(err error) (Source, error) {
		l.Close()
		return nil, err
	}

	mnt, err := os.MkdirTemp("", "linerate-sysfs-"+name+"-")
	if err != nil {
		return fail(err)
	}
	ns.do(func() {
		err = unix.Mount("sysfs", mnt, "sysfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	})
	if err != nil {
		os.Remove(mnt)
		return fail(fmt.Errorf("mount sysfs for netns %s on %s: %w", name, mnt, err))
	}
	l.sysMount = mnt
	l.sys = sysfs.NewFS(mnt)
	l.proc = procfs.NewFS(procRoot).WithNetDir(filepath.Join(procRoot, fmt.Sprint(os.Getpid()), "task", fmt.Sprint(ns.tid), "net"))

	var et *ethtool.Live
	ns.do(func() { et, err = ethtool.NewLive() })
	if err != nil {
		return fail(fmt.Errorf("ethtool in netns %s: %w", name, err))
	}
	l.et = et
	return l, nil
}

// listNetns names the namespaces under /var/run/netns, for error messages.
func listNetns() string {
	ents, err := os.ReadDir(netnsRoot)
	if err != nil || len(ents) == 0 {
		return "none"
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func (l *Live) Name() string            { return l.name }
func (l *Live) Proc() procfs.FS         { return l.proc }
func (l *Live) Sys() sysfs.FS           { return l.sys }
func (l *Live) Ethtool() ethtool.Client { return l.et }

// Netns is the network namespace the source reads, "" for the host's.
func (l *Live) Netns() string { return l.netns }

// Meta describes this machine now. Fields that cannot be read stay empty.
func (l *Live) Meta() Meta {
	m := Meta{Time: time.Now(), Arch: runtime.GOARCH, Linerate: version.Version, Netns: l.netns}
	m.Host, _ = l.proc.Hostname()
	m.Kernel, _ = l.proc.Kernel()
	return m
}

// PCIConfig reads the config space through sysfs: 256 or 4096 bytes as
// root, the first 64 bytes otherwise.
func (l *Live) PCIConfig(addr string) ([]byte, error) { return l.sys.PCIConfig(addr) }

// Samples is empty: a live source has no recorded samples.
func (l *Live) Samples() ([]Sample, error) { return nil, nil }

// Sysctl reads a sysctl as seen from the source's network namespace. A
// setting the namespace has no copy of (net.core.netdev_max_backlog,
// netdev_budget and the other global ones are shown only in the initial
// namespace) is read from the host: that global value is the one in force
// inside the namespace too.
func (l *Live) Sysctl(name string) (v string, err error) {
	if l.ns == nil {
		return l.proc.Sysctl(name)
	}
	l.ns.do(func() { v, err = l.proc.Sysctl(name) })
	if errors.Is(err, os.ErrNotExist) && strings.HasPrefix(name, "net.") {
		if hv, herr := l.proc.Sysctl(name); herr == nil {
			return hv, nil
		}
	}
	return v, err
}

// Links lists the interfaces with rtnetlink, in the source's namespace.
func (l *Live) Links() (links map[string]Link, err error) {
	if l.ns == nil {
		return dumpLinks()
	}
	l.ns.do(func() { links, err = dumpLinks() })
	return links, err
}

// Close releases the ethtool client, the namespace's sysfs mount and its
// thread.
func (l *Live) Close() error {
	var errs []error
	if l.et != nil {
		errs = append(errs, l.et.Close())
	}
	if l.sysMount != "" {
		if err := unix.Unmount(l.sysMount, unix.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w", l.sysMount, err))
		} else {
			errs = append(errs, os.Remove(l.sysMount))
		}
		l.sysMount = ""
	}
	if l.ns != nil {
		l.ns.stop()
		l.ns = nil
	}
	return errors.Join(errs...)
}

// nsThread is an OS thread that lives in a network namespace and runs the
// functions it is given, one at a time.
type nsThread struct {
	tid  int
	reqs chan func()
}

// startNSThread starts a goroutine locked to its own thread and moves the
// thread into the network namespace at path.
func startNSThread(path string) (*nsThread, error) {
	t := &nsThread{reqs: make(chan func())}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: when this goroutine returns, the runtime ends the
		// thread instead of reusing it in the wrong namespace.
		runtime.LockOSThread()
		f, err := os.Open(path)
		if err != nil {
			errc <- err
			return
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		f.Close()
		if err != nil {
			errc <- fmt.Errorf("setns %s: %w", path, err)
			return
		}
		t.tid = unix.Gettid()
		errc <- nil
		for fn := range t.reqs {
			fn()
		}
	}()
	if err := <-errc; err != nil {
		return nil, err
	}
	return t, nil
}

// do runs fn on the thread and waits for it.
func (t *nsThread) do(fn func()) {
	done := make(chan struct{})
	t.reqs <- func() { defer close(done); fn() }
	<-done
}

// stop ends the thread.
func (t *nsThread) stop() { close(t.reqs) }
