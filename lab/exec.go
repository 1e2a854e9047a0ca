package lab

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"

	"github.com/vishvananda/netns"

	"linerate/internal/usage"
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

// Do runs fn on a throwaway OS thread inside the node's network namespace,
// where /sys is the node's sysfs (nsthread). Sockets fn opens belong to the
// node and stay there after Do returns, so a listener made in Do can be
// served from any goroutine. The calling goroutine's thread is untouched.
func (l *Lab) Do(node string, fn func() error) error {
	if l.IsVM(node) {
		return usage.Errorf("node %s of lab %s is a virtual machine: Go code runs only in a namespace node; run a command in it instead (lab exec)", node, l.Spec.Name)
	}
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
// cmd.Env is nil), and LINERATE_TOKEN, the agents' secret, when the lab
// has agents. Wait for it as usual.
//
// How: a child process takes the namespaces of the thread that forks it,
// so cmd is started from an nsthread.Thread set up that way, which ends
// right after; the child keeps the namespaces. (Re-executing linerate with
// a hidden subcommand would also work, but only for the linerate binary;
// this works for any caller, tests included.)
func (l *Lab) Start(node string, cmd *exec.Cmd) error {
	if l.IsVM(node) {
		return l.startVM(node, cmd)
	}
	n, h, err := l.open(node)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := l.giveSecret(cmd); err != nil {
		return err
	}
	return l.startIn(n, h, cmd)
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

// startVM starts cmd in a VM node's guest (startGuestCmd), with the
// agents' secret in its environment as Start gives it.
func (l *Lab) startVM(node string, cmd *exec.Cmd) error {
	n, err := l.Node(node)
	if err != nil {
		return err
	}
	if err := RequireRoot("entering a lab node"); err != nil {
		return err
	}
	if !l.Complete {
		return usage.Errorf("lab %s is not completely up (linerate lab down %s, then up again)", l.Spec.Name, l.Spec.Name)
	}
	if err := l.giveSecret(cmd); err != nil {
		return err
	}
	return l.startGuestCmd(n, cmd)
}

// giveSecret puts the agents' secret in cmd's environment when the lab
// has agents: the command reaches them as bench and serve read a secret,
// from the environment.
func (l *Lab) giveSecret(cmd *exec.Cmd) error {
	if l.Spec.Serve == nil {
		return nil
	}
	secret, err := l.Secret()
	if err != nil {
		return err
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, EnvToken+"="+secret)
	return nil
}
