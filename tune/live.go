package tune

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"linerate/internal/usage"
	"linerate/source/ethtool"
)

// The live machine's root and where `ip netns add` binds named network
// namespaces. These are the only places package tune names them.
const (
	hostRoot  = "/"
	sysMount  = "/sys"
	netnsRoot = "/var/run/netns"
)

// Live is the running machine, or one of its network namespaces.
//
// In a namespace, everything that depends on the caller's namespace runs
// on one OS thread parked there (nsThread): opening the ethtool socket
// (a socket keeps the namespace it was made in), netlink requests, and
// every file access: /proc/sys/net answers for the namespace of the thread
// that opens the file, and sysfs shows class/net for the namespace of
// whoever mounted it, so the thread mounts a sysfs of its own over /sys.
// It first moves into a mount namespace of its own (unshare(CLONE_NEWNS),
// / made private), so that mount is seen by nobody else and disappears
// with the thread, even when the process is killed.
//
// A Live is used by one goroutine at a time.
type Live struct {
	name  string
	netns string
	ns    *nsThread // nil for the host

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
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, usage.Errorf("netns %q: not a namespace name", name)
	}
	p := filepath.Join(netnsRoot, name)
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usage.Errorf("no network namespace %s (have: %s)", name, listNetns())
		}
		return nil, fmt.Errorf("netns %s: %w", name, err)
	}
	ns, err := startNSThread(p)
	if err != nil {
		return nil, fmt.Errorf("enter netns %s: %w", name, err)
	}
	return &Live{name: "live netns " + name, netns: name, ns: ns}, nil
}

// NetnsExists reports whether a named network namespace exists.
func NetnsExists(name string) bool {
	_, err := os.Stat(filepath.Join(netnsRoot, name))
	return err == nil
}

func listNetns() string {
	names, err := readDirNames(netnsRoot)
	if err != nil || len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (l *Live) Name() string  { return l.name }
func (l *Live) Netns() string { return l.netns }

// errClosed is returned by a Live used after Close: a closed namespace
// system must never fall back to acting on the host.
var errClosed = errors.New("system is closed")

// run runs fn where the system's namespace is: on the parked thread, or
// right here for the host.
func (l *Live) run(fn func()) error {
	if l.closed {
		return fmt.Errorf("%s: %w", l.name, errClosed)
	}
	if l.ns == nil {
		fn()
		return nil
	}
	l.ns.do(fn)
	return nil
}

// path maps a root-relative name to the path to open. In a namespace it
// is opened on the parked thread, where /sys is the namespace's sysfs.
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

// Services is systemd through systemctl. Services are the host's: inside
// a network namespace there are none of its own.
func (l *Live) Services() (Services, error) {
	if l.ns != nil {
		return nil, errNone("service manager", l.name)
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
		errs = append(errs, l.ns.stop())
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
	rerr := k.l.run(func() {
		var link netlink.Link
		if link, err = netlink.LinkByName(name); err != nil {
			err = fmt.Errorf("%s: %w", name, err)
			return
		}
		if err = netlink.LinkSetMTU(link, mtu); err != nil {
			err = fmt.Errorf("the driver of %s refused MTU %d: %w", name, mtu, err)
		}
	})
	if rerr != nil {
		return rerr
	}
	return err
}

// linkMTU asks rtnetlink (RTM_GETLINK by name) for an interface's MTU and
// the range its driver accepts. The netlink package's LinkAttrs has no
// IFLA_MIN_MTU / IFLA_MAX_MTU, so the request is made with its nl helpers
// and those attributes are read here.
func linkMTU(name string) (Link, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(name)))
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
	if err != nil {
		if errors.Is(err, unix.ENODEV) {
			return Link{}, usage.Errorf("no interface %s", name)
		}
		return Link{}, fmt.Errorf("%s: rtnetlink: %w", name, err)
	}
	if len(msgs) == 0 || len(msgs[0]) < unix.SizeofIfInfomsg {
		return Link{}, fmt.Errorf("%s: rtnetlink: empty answer", name)
	}
	attrs, err := nl.ParseRouteAttr(msgs[0][unix.SizeofIfInfomsg:])
	if err != nil {
		return Link{}, fmt.Errorf("%s: rtnetlink: %w", name, err)
	}
	lk := Link{Name: name}
	for _, a := range attrs {
		if len(a.Value) < 4 {
			continue
		}
		v := int(nl.NativeEndian().Uint32(a.Value[:4]))
		switch a.Attr.Type {
		case unix.IFLA_MTU:
			lk.MTU = v
		case unix.IFLA_MIN_MTU:
			lk.MinMTU = v
		case unix.IFLA_MAX_MTU:
			lk.MaxMTU = v
		}
	}
	return lk, nil
}

// nsThread is an OS thread in a network namespace, with a mount namespace
// of its own where /sys is a sysfs of that network namespace. It runs the
// functions it is given, one at a time.
type nsThread struct {
	reqs chan func()
	done chan struct{}
}

// startNSThread starts a goroutine locked to a new thread and moves the
// thread into the network namespace at nsPath.
func startNSThread(nsPath string) (*nsThread, error) {
	t := &nsThread{reqs: make(chan func()), done: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		defer close(t.done)
		// Never unlocked: when this goroutine returns, the Go runtime ends
		// the thread rather than reuse it in the wrong namespaces, and the
		// thread's mount namespace and its sysfs mount go with it.
		runtime.LockOSThread()
		if err := enterNetns(nsPath); err != nil {
			errc <- err
			return
		}
		errc <- nil
		for fn := range t.reqs {
			fn()
		}
	}()
	if err := <-errc; err != nil {
		<-t.done
		return nil, err
	}
	return t, nil
}

// enterNetns moves the calling (locked) thread into a private mount
// namespace and the network namespace at nsPath, and mounts that network
// namespace's sysfs over /sys, as `ip netns exec` does. Nothing needs
// removing afterwards: the mount lives only in the thread's mount
// namespace, which ends with the thread, also when the process is killed.
func enterNetns(nsPath string) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare mount namespace: %w", err)
	}
	// Private, so the sysfs mount below does not propagate back to the
	// host's mount namespace.
	if err := unix.Mount("", hostRoot, "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	f, err := os.Open(nsPath)
	if err != nil {
		return err
	}
	err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
	f.Close()
	if err != nil {
		return fmt.Errorf("setns %s: %w", nsPath, err)
	}
	if err := unix.Mount("sysfs", sysMount, "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount sysfs on %s: %w", sysMount, err)
	}
	return nil
}

// do runs fn on the thread and waits for it.
func (t *nsThread) do(fn func()) {
	done := make(chan struct{})
	t.reqs <- func() { defer close(done); fn() }
	<-done
}

// stop ends the thread.
func (t *nsThread) stop() error {
	close(t.reqs)
	<-t.done
	return nil
}
