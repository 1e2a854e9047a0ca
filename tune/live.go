package tune

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"linerate/internal/nsthread"
	"linerate/internal/usage"
	"linerate/source"
	"linerate/source/ethtool"
	"linerate/source/sysfs"
)

// The live machine's root. This is the only place package tune names it.
const hostRoot = "/"

// Live is the running machine, or one of its network namespaces.
//
// In a namespace, everything that depends on the caller's namespace runs
// on one OS thread there (an nsthread.Thread): opening the ethtool socket
// (a socket keeps the namespace it was made in), netlink requests, and
// every file access: /proc/sys/net answers for the namespace of the thread
// that opens the file, and on that thread /sys is a sysfs of the namespace,
// mounted in a mount namespace of the thread's own, seen by nobody else and
// gone with the thread, even when the process is killed.
//
// A Live is used by one goroutine at a time.
type Live struct {
	name  string
	netns string
	ns    *nsthread.Thread // nil for the host

	etOnce sync.Once
	et     *ethtool.Live
	etErr  error
	closed bool
}

// NewLive returns the running machine as this process sees it.
func NewLive() *Live { return &Live{name: "live"} }

// NewLiveNetns returns the network namespace bound at
// /var/run/netns/NAME.
func NewLiveNetns(name string) (*Live, error) {
	ns, err := nsthread.Open(name, nsthread.Options{})
	if err != nil {
		return nil, err
	}
	return &Live{name: "live netns " + name, netns: name, ns: ns}, nil
}

// NetnsExists reports whether a named network namespace exists.
func NetnsExists(name string) bool { return nsthread.Exists(name) }

// listNetns names the network namespaces there are, for error messages.
func listNetns() string {
	names := nsthread.Names()
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// NetnsID is the kernel's name of the network namespace the system
// changes ("net:[4026532297]"), unique while the namespace lives.
func (l *Live) NetnsID() (string, error) {
	if l.ns == nil {
		return os.Readlink("/proc/self/ns/net")
	}
	var id string
	err := l.ns.Do(func() error {
		var err error
		id, err = os.Readlink("/proc/thread-self/ns/net")
		return err
	})
	return id, err
}

func (l *Live) Name() string  { return l.name }
func (l *Live) Netns() string { return l.netns }

// errClosed is returned by a Live used after Close: a closed namespace
// system must never fall back to acting on the host.
var errClosed = errors.New("system is closed")

// run runs fn where the system's namespace is: on its thread, or
// right here for the host.
func (l *Live) run(fn func()) error {
	if l.closed {
		return fmt.Errorf("%s: %w", l.name, errClosed)
	}
	if l.ns == nil {
		fn()
		return nil
	}
	return l.ns.Do(func() error { fn(); return nil })
}

// path maps a root-relative name to the path to open. In a namespace it
// is opened on the namespace's thread, where /sys is the namespace's sysfs.
func (l *Live) path(name string) (string, error) {
	c, err := cleanName(name)
	if err != nil {
		return "", err
	}
	return filepath.Join(hostRoot, filepath.FromSlash(c)), nil
}

func (l *Live) ReadFile(name string) (b []byte, err error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	if rerr := l.run(func() { b, err = os.ReadFile(p) }); rerr != nil {
		return nil, rerr
	}
	return b, err
}

func (l *Live) WriteFile(name string, data []byte) (err error) {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	if rerr := l.run(func() { err = writeExisting(p, data) }); rerr != nil {
		return rerr
	}
	return err
}

// SysFS calls fn on the system's thread, where /sys is its namespace's.
func (l *Live) SysFS(fn func(sysfs.FS) error) (err error) {
	if rerr := l.run(func() { err = fn(sysfs.NewFS(filepath.Join(hostRoot, "sys"))) }); rerr != nil {
		return rerr
	}
	return err
}

func (l *Live) ReadDir(name string) (names []string, err error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	if rerr := l.run(func() { names, err = readDirNames(p) }); rerr != nil {
		return nil, rerr
	}
	return names, err
}

// Ethtool opens the ioctl socket in the system's namespace on first use.
func (l *Live) Ethtool() (Ethtool, error) {
	if l.closed {
		return nil, fmt.Errorf("%s: %w", l.name, errClosed)
	}
	l.etOnce.Do(func() {
		if err := l.run(func() { l.et, l.etErr = ethtool.NewLive() }); err != nil {
			l.etErr = err
		}
	})
	if l.etErr != nil {
		return nil, l.etErr
	}
	return l.et, nil
}

// Links speaks rtnetlink in the system's namespace.
func (l *Live) Links() (Links, error) { return liveLinks{l}, nil }

// Tc runs tc in the system's namespace: for a namespace, forked from the
// namespace's thread, so that the child is born in its namespaces (a
// child inherits the namespaces of the thread that forks it).
func (l *Live) Tc(args ...string) (out []byte, err error) {
	if _, lerr := exec.LookPath("tc"); lerr != nil {
		return nil, errNone("tc (iproute2)", l.name)
	}
	rerr := l.run(func() { out, err = runTc(exec.Command("tc", args...)) })
	if rerr != nil {
		return nil, rerr
	}
	return out, err
}

// tcError is a tc command that failed, with the first line it wrote to
// stderr.
type tcError struct {
	args []string
	err  error
	msg  string
}

func (e *tcError) Error() string {
	return fmt.Sprintf("%s: %v: %s", strings.Join(e.args, " "), e.err, e.msg)
}

func (e *tcError) Unwrap() error { return e.err }

// runTc runs a tc command; its failure is a *tcError.
func runTc(c *exec.Cmd) ([]byte, error) {
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return out, &tcError{args: c.Args, err: err, msg: msg}
	}
	return out, nil
}

// errQdiscRefused is wrapped by probeQdisc's error when tc ran and the
// kernel (or tc itself, for an option) refused the qdisc.
var errQdiscRefused = errors.New("refused by tc in a scratch network namespace")

// probeQdisc asks the kernel whether it takes a root qdisc (args: the
// kind and its options, as tc writes them). tc adds it to the loopback of
// a network namespace made for the purpose, which nobody else sees and
// which ends with tc: the kinds a kernel has are the same in every
// namespace, and a module the kind needs is loaded as the apply would
// load it. The error wraps errQdiscRefused when tc ran and failed, and is
// another when it could not be asked (no tc, no privilege to make a
// namespace).
func (l *Live) probeQdisc(args []string) error {
	tc, err := exec.LookPath("tc")
	if err != nil {
		return errNone("tc (iproute2)", l.name)
	}
	c := exec.Command(tc, append([]string{"qdisc", "add", "dev", "lo", "root"}, args...)...)
	c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	_, err = runTc(c)
	var te *tcError
	var exit *exec.ExitError
	if errors.As(err, &te) && errors.As(err, &exit) {
		return fmt.Errorf("%w: %s", errQdiscRefused, te.msg)
	}
	return err
}

// Services is systemd through systemctl, when systemd runs: it made
// /run/systemd/system, as sd_booted(3) checks. Services are the host's:
// inside a network namespace there are none of its own.
func (l *Live) Services() (Services, error) {
	if l.ns != nil {
		return nil, errNone("service manager", l.name)
	}
	if st, err := os.Stat(filepath.Join(hostRoot, "run/systemd/system")); err != nil || !st.IsDir() {
		return nil, noneError{"systemd is not running (no /run/systemd/system)"}
	}
	return Systemctl{}, nil
}

// Close releases the ethtool socket and ends the namespace thread (its
// sysfs mount goes with it).
func (l *Live) Close() error {
	l.closed = true
	var errs []error
	if l.et != nil {
		errs = append(errs, l.et.Close())
		l.et = nil
	}
	if l.ns != nil {
		errs = append(errs, l.ns.Close())
		l.ns = nil
	}
	return errors.Join(errs...)
}

// liveLinks runs netlink requests in the system's namespace. The netlink
// package's functions open their socket in the namespace of the calling
// thread.
type liveLinks struct{ l *Live }

func (k liveLinks) Link(name string) (lk Link, err error) {
	if rerr := k.l.run(func() { lk, err = linkMTU(name) }); rerr != nil {
		return Link{}, rerr
	}
	return lk, err
}

func (k liveLinks) SetMTU(name string, mtu int) (err error) {
	rerr := k.l.run(func() { err = setMTU(name, mtu) })
	if rerr != nil {
		return rerr
	}
	return err
}

// linkMTU reads an interface's MTU and the range its driver accepts from
// the routing netlink's link dump of the calling thread's namespace
// (source.DumpLinks: the standard library, no netlink library, so the
// packages that read tune's types link none).
func linkMTU(name string) (Link, error) {
	links, err := source.DumpLinks()
	if err != nil {
		return Link{}, fmt.Errorf("%s: %w", name, err)
	}
	l, ok := links[name]
	if !ok {
		return Link{}, usage.Errorf("no interface %s", name)
	}
	return Link{Name: name, MTU: l.MTU, MinMTU: l.MinMTU, MaxMTU: l.MaxMTU}, nil
}

// setMTU sets an interface's MTU with SIOCSIFMTU, as ip link set mtu does
// through rtnetlink; the driver checks it against its range either way.
func setMTU(name string, mtu int) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	ifr.SetUint32(uint32(mtu))
	switch err := unix.IoctlIfreq(fd, unix.SIOCSIFMTU, ifr); {
	case errors.Is(err, unix.ENODEV):
		return fmt.Errorf("%s: %w", name, err)
	case err != nil:
		return fmt.Errorf("the driver of %s refused MTU %d: %w", name, mtu, err)
	}
	return nil
}
