// Package nsthread runs work inside a network namespace without moving the
// process there. It owns the one way linerate does that: an OS thread of its
// own, moved into the namespace, with a mount namespace of its own in which
// /sys is a fresh sysfs of that network namespace (and, for lab nodes,
// /etc/hosts is a file of the lab's). Functions given to Thread.Do run on
// that thread; commands started from it are born in its namespaces.
//
// Why a thread and why it never comes back:
//
//   - setns(2) and unshare(2) change the calling thread only. The goroutine
//     that owns the thread locks itself to it and never unlocks, so the Go
//     runtime ends the thread when the goroutine returns instead of handing
//     it, still inside the namespaces, to other goroutines. Nothing the
//     thread mounted outlives it: its mount namespace goes with it, also
//     when the process is killed with SIGKILL.
//   - The thread is never the process's main thread. The runtime does not
//     end that one when a locked goroutine returns (it parks it for good),
//     and /proc/self/net and /proc/self/mounts describe the namespaces of
//     the main thread: a main thread left in a namespace would change what
//     the whole process reads there, and keep the namespace alive.
//   - A sysfs shows the network interfaces of the network namespace of
//     whoever mounts it, so the thread mounts its own over /sys, as
//     `ip netns exec` does (ip-netns(8)). Its mounts are slaves of the
//     host's: a namespace unbound from /var/run/netns on the host is also
//     unbound here, and nothing mounted here shows on the host.
//   - New threads the runtime starts while a goroutine is locked to a
//     changed thread are cloned from a clean template thread (runtime,
//     newm), so the namespaces never spread to other threads.
package nsthread

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"linerate/internal/usage"
)

// The places this package names: where `ip netns add` binds named network
// namespaces, and the two paths a thread sees replaced.
const (
	netnsDir  = "/var/run/netns"
	sysDir    = "/sys"
	hostsFile = "/etc/hosts"
)

// ErrNotExist is wrapped by Open when no network namespace has the name.
var ErrNotExist = errors.New("no network namespace")

// ErrClosed is returned by Do and Start after Close.
var ErrClosed = errors.New("namespace thread is closed")

// Options are extras a thread sets up in its mount namespace.
type Options struct {
	// Hosts, when not nil, is what /etc/hosts holds for the thread and the
	// commands it starts (a file bind-mounted over it). A machine without
	// /etc/hosts keeps having none.
	Hosts []byte
}

// Thread is an OS thread inside a network namespace, with a mount namespace
// of its own where /sys is that network namespace's sysfs (writable, for
// tuning). It runs the functions given to Do one at a time. Its methods are
// safe for concurrent use.
type Thread struct {
	tid  int
	reqs chan func()
	done chan struct{}

	// mu is held for reading while a request is handed over and served,
	// and for writing by Close, so Close waits for requests in flight.
	mu     sync.RWMutex
	closed bool
}

// Open starts a thread in the network namespace bound at
// /var/run/netns/NAME, as `ip netns add NAME` makes. A name that is not a
// plain file name, or names no namespace, is bad input (usage.Is); the
// latter also wraps ErrNotExist.
func Open(name string, o Options) (*Thread, error) {
	if !validName(name) {
		return nil, usage.Errorf("netns %q: not a namespace name", name)
	}
	f, err := os.Open(filepath.Join(netnsDir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, usage.Wrap(fmt.Errorf("%w %s (have: %s)", ErrNotExist, name, have()))
	}
	if err != nil {
		return nil, fmt.Errorf("netns %s: %w", name, err)
	}
	defer f.Close()
	t, err := Enter(int(f.Fd()), o)
	if err != nil {
		return nil, fmt.Errorf("enter netns %s: %w", name, err)
	}
	return t, nil
}

// Enter starts a thread in the network namespace that fd refers to (an
// open nsfs file: /var/run/netns/NAME, /proc/PID/ns/net). fd is used only
// until Enter returns.
func Enter(fd int, o Options) (*Thread, error) {
	hosts := ""
	if o.Hosts != nil {
		var err error
		if hosts, err = writeHosts(o.Hosts); err != nil {
			return nil, err
		}
		// The bind mount holds the file's inode; its name can go as soon
		// as the thread has mounted it.
		defer os.Remove(hosts)
	}
	t := &Thread{reqs: make(chan func()), done: make(chan struct{})}
	errc := make(chan error, 1)
	goLocked(func() {
		defer close(t.done)
		if err := enter(fd, hosts); err != nil {
			errc <- err
			return
		}
		t.tid = unix.Gettid()
		errc <- nil
		for fn := range t.reqs {
			fn()
		}
	})
	if err := <-errc; err != nil {
		<-t.done
		return nil, err
	}
	return t, nil
}

// enter moves the calling locked thread into a mount namespace of its own
// and into the network namespace fd, then mounts that namespace's sysfs on
// /sys and hosts (if any) on /etc/hosts.
func enter(fd int, hosts string) error {
	// unshare(CLONE_NEWNS) also gives the thread its own root and working
	// directory (CLONE_FS), which the kernel allows a single thread to do.
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("new mount namespace: %w", err)
	}
	// Slave: the host's unmounts reach this namespace, its mounts never
	// reach the host.
	if err := unix.Mount("", "/", "", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make mounts slaves of the host's: %w", err)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns: %w", err)
	}
	// Like `ip netns exec`: take the old sysfs (and what is mounted under
	// it) away rather than stacking on it. Failing that (EINVAL when /sys
	// is no mount point), mounting over it still hides it.
	_ = unix.Unmount(sysDir, unix.MNT_DETACH)
	if err := unix.Mount("sysfs", sysDir, "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount sysfs on %s: %w", sysDir, err)
	}
	if hosts == "" {
		return nil
	}
	err := unix.Mount(hosts, hostsFile, "", unix.MS_BIND, "")
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("bind %s over %s: %w", hosts, hostsFile, err)
	}
	return nil
}

// writeHosts writes a hosts file, world-readable as /etc/hosts is, and
// returns its name.
func writeHosts(b []byte) (string, error) {
	f, err := os.CreateTemp("", "linerate-hosts-")
	if err != nil {
		return "", fmt.Errorf("hosts file: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("hosts file %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// Tid is the thread's id: /proc/PID/task/TID shows the namespaces through
// its net (network) and root (mount) entries to every thread.
func (t *Thread) Tid() int { return t.tid }

// Do runs fn on the thread and returns its error. There, sockets open in the
// network namespace (and stay in it afterwards, usable from any goroutine),
// /proc/sys/net holds the namespace's sysctls and /sys its interfaces.
// fn must not unlock the OS thread. Do called from fn itself runs the inner
// function at once. After Close it returns ErrClosed.
func (t *Thread) Do(fn func() error) error {
	if unix.Gettid() == t.tid {
		// Only the thread's own goroutine runs on a locked thread.
		return fn()
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return ErrClosed
	}
	errc := make(chan error, 1)
	t.reqs <- func() { errc <- fn() }
	return <-errc
}

// Start starts cmd from the thread: the child is born in the thread's
// network and mount namespaces (its /sys, its /etc/hosts) and keeps them
// after the thread ends. Wait for it from any goroutine as usual.
// cmd.SysProcAttr.Pdeathsig, if set, fires when the thread ends, since the
// kernel ties it to the thread that forked.
func (t *Thread) Start(cmd *exec.Cmd) error { return t.Do(cmd.Start) }

// Close ends the thread, after the requests in flight, and waits until the
// kernel has let it go; its mounts go with its mount namespace (commands it
// started keep their copy). Closing twice is harmless.
func (t *Thread) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.reqs)
	t.mu.Unlock()
	<-t.done
	return waitGone(t.tid)
}

// waitGone waits, about a second at most, until thread tid of this process
// has exited: the goroutine returned, the runtime ends the thread just
// after, usually within microseconds.
func waitGone(tid int) error {
	pid := unix.Getpid()
	wait := 20 * time.Microsecond
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		if err := unix.Tgkill(pid, tid, 0); errors.Is(err, unix.ESRCH) {
			return nil
		}
		time.Sleep(wait)
		wait = min(2*wait, 10*time.Millisecond)
	}
	return fmt.Errorf("thread %d of the namespace still runs 1s after it was ended", tid)
}

// Run runs fn on a new OS thread that ends when fn returns (never the main
// thread), for work that changes the thread's namespaces itself, such as
// making a new network namespace with unshare(CLONE_NEWNET).
func Run(fn func() error) error {
	errc := make(chan error, 1)
	goLocked(func() { errc <- fn() })
	return <-errc
}

// goLocked runs fn in a new goroutine locked, for good, to an OS thread
// that is not the process's main thread.
func goLocked(fn func()) { go lockThread(fn) }

// lockThread locks the calling goroutine to its OS thread for good and
// runs fn there; on the main thread it runs fn in a new goroutine locked to
// another thread instead, and returns once that one is locked.
func lockThread(fn func()) {
	runtime.LockOSThread()
	if unix.Gettid() != unix.Getpid() {
		fn()
		return // still locked: the runtime ends the thread
	}
	// While this goroutine holds the main thread no other goroutine runs
	// there, so the one started now gets another thread. The main thread
	// is untouched and is given back.
	locked := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		close(locked)
		fn()
	}()
	<-locked
	runtime.UnlockOSThread()
}

// Exists reports whether a network namespace is bound at
// /var/run/netns/NAME.
func Exists(name string) bool {
	if !validName(name) {
		return false
	}
	_, err := os.Stat(filepath.Join(netnsDir, name))
	return err == nil
}

// Names lists the network namespaces bound under /var/run/netns, sorted.
func Names() []string {
	ents, err := os.ReadDir(netnsDir)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// have names the namespaces there are, for error messages.
func have() string {
	names := Names()
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}
