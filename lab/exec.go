package lab

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"linerate/internal/usage"
)

// Paths a command started in a node sees replaced, as `ip netns exec`
// replaces them (ip-netns(8)).
const (
	sysMount  = "/sys"       // remounted so /sys/class/net lists the node's interfaces
	hostsFile = "/etc/hosts" // bind-mounted over with the node's Hosts
)

// open returns the node and a handle to its namespace, checking that the
// namespace is the one Up created.
func (l *Lab) open(node string) (Node, netns.NsHandle, error) {
	n, err := l.Node(node)
	if err != nil {
		return Node{}, netns.None(), err
	}
	if err := RequireRoot("entering a lab node"); err != nil {
		return Node{}, netns.None(), err
	}
	if !l.Complete {
		return Node{}, netns.None(), usage.Errorf("lab %s is not completely up (linerate lab down %s, then up again)", l.Spec.Name, l.Spec.Name)
	}
	for _, o := range l.Objects {
		if o.Kind != KindNetns || o.Netns != n.Netns {
			continue
		}
		h, ok, err := openOwned(o)
		if err != nil {
			return Node{}, netns.None(), err
		}
		if !ok {
			return Node{}, netns.None(), fmt.Errorf("network namespace %s of lab %s is gone or was replaced", n.Netns, l.Spec.Name)
		}
		return n, h, nil
	}
	return Node{}, netns.None(), fmt.Errorf("lab %s state records no namespace %s", l.Spec.Name, n.Netns)
}

// Do runs fn on a throwaway OS thread inside the node's network namespace.
// Sockets fn opens belong to the node and stay there after Do returns, so a
// listener made in Do can be served from any goroutine. Only the network
// namespace changes: files fn reads under /sys are still the caller's.
func (l *Lab) Do(node string, fn func() error) error {
	_, h, err := l.open(node)
	if err != nil {
		return err
	}
	defer h.Close()
	return inNetns(h, fn)
}

// Start starts cmd inside a node, the way `ip netns exec` does: in the
// node's network namespace and a mount namespace of its own in which /sys
// is a sysfs of the node (so /sys/class/net lists its interfaces and they
// can be tuned) and /etc/hosts names the lab's nodes at the addresses this
// node reaches them at. LINERATE_LAB, LINERATE_LAB_NODE and
// LINERATE_LAB_DIR are added to its environment (os.Environ() when
// cmd.Env is nil). Wait for it as usual.
//
// How: a child process takes the namespaces of the thread that forks it.
// Start locks a goroutine to a fresh thread, unshares the thread's mount
// namespace (the kernel allows it per thread), makes it a slave so nothing
// propagates back to the host, enters the node's network namespace, mounts
// /sys and /etc/hosts there, and calls cmd.Start on that thread: Go forks
// the child from the calling thread, so the child starts in the node. The
// thread is never unlocked, so the runtime ends it afterwards and no other
// goroutine ever runs in those namespaces. (Re-executing linerate with a
// hidden subcommand would also work, but only for the linerate binary;
// this works for any caller, tests included.)
func (l *Lab) Start(node string, cmd *exec.Cmd) error {
	n, h, err := l.open(node)
	if err != nil {
		return err
	}
	defer h.Close()
	hosts, err := os.CreateTemp("", "linerate-hosts-")
	if err != nil {
		return fmt.Errorf("hosts file for %s: %w", n.Netns, err)
	}
	// The bind mount keeps the file's inode; its name can go at once.
	defer os.Remove(hosts.Name())
	_, err = hosts.WriteString(l.Hosts(node))
	if err == nil {
		err = hosts.Chmod(0o644) // /etc/hosts is world-readable
	}
	if cerr := hosts.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("hosts file for %s: %w", n.Netns, err)
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, EnvLab+"="+l.Spec.Name, EnvNode+"="+node, EnvDir+"="+string(l.dir))
	return onLockedThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("new mount namespace: %w", err)
		}
		if err := unix.Mount("", "/", "none", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("make mounts private: %w", err)
		}
		if err := netns.Set(h); err != nil {
			return fmt.Errorf("enter network namespace %s: %w", n.Netns, err)
		}
		// A sysfs shows the network namespace of the task that mounts it.
		if err := unix.Unmount(sysMount, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s in %s: %w", sysMount, n.Netns, err)
		}
		if err := unix.Mount(n.Netns, sysMount, "sysfs", 0, ""); err != nil {
			return fmt.Errorf("mount sysfs of %s: %w", n.Netns, err)
		}
		err := unix.Mount(hosts.Name(), hostsFile, "none", unix.MS_BIND, "")
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("bind hosts file in %s: %w", n.Netns, err)
		}
		return cmd.Start()
	})
}

// Run starts cmd inside a node and waits for it.
func (l *Lab) Run(node string, cmd *exec.Cmd) error {
	if err := l.Start(node, cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

// Resolve turns a node name ("wan", or "wan.LAB") into its address as seen
// from the node the calling process runs in, when it was started by `lab
// exec` or Start (LINERATE_LAB and LINERATE_LAB_NODE are set). ok is false
// outside a lab and for names that are not nodes the caller reaches, which
// the caller then resolves as usual. /etc/hosts inside a node says the same;
// Resolve serves programs that do not read it.
func Resolve(host string) (addr netip.Addr, ok bool, err error) {
	name, node := os.Getenv(EnvLab), os.Getenv(EnvNode)
	if name == "" || node == "" {
		return netip.Addr{}, false, nil
	}
	l, err := DefaultDir().Load(name)
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("%s=%s: %w", EnvLab, name, err)
	}
	host = strings.TrimSuffix(host, "."+name)
	if _, err := l.Node(host); err != nil {
		return netip.Addr{}, false, nil
	}
	addr, ok = l.Addr(node, host)
	return addr, ok, nil
}
