package tune

import (
	"errors"
	"fmt"
	"io/fs"

	"linerate/internal/usage"
)

// Host-wide state and network namespaces.
//
// Part of what tune changes belongs to a network namespace: its
// interfaces (queues, offloads, channels, MTU, txqueuelen, qdiscs) and its
// net.* sysctls, which /proc/sys/net shows per namespace. The rest is the
// kernel's or the machine's whichever namespace asks: IRQ affinity
// (/proc/irq), CPU governors, sysctls outside net.* (vm.swappiness),
// irqbalance and its defaults file, boot files. A linerate working in a
// network namespace other than the kernel's initial one does not change
// those, however it got there: named with --netns, or entered around it
// with `ip netns exec` (which moves the whole process, so that it looks
// like the host from inside). There is no flag to do it anyway: the same
// change made on the host is the same change, journalled where it
// belongs, while one made from inside would be journalled as the
// namespace's, persisted by no one and rolled back only from there.

// initialMarker is a sysctl the kernel registers for its initial network
// namespace only: net/core's global table (netdev_max_backlog, the
// per-CPU backlog, with default_qdisc, busy_poll and others) is
// registered on init_net alone, and /proc/sys/net shows the table of the
// namespace of whoever opens the file. It needs no privilege to read,
// where comparing with /proc/1/ns/net needs ptrace access to PID 1.
const initialMarker = "proc/sys/net/core/netdev_max_backlog"

// initialNetns reports whether sys works in the kernel's initial network
// namespace, from initialMarker read where sys reads /proc/sys/net.
func initialNetns(sys System) (bool, error) {
	_, err := sys.ReadFile(initialMarker)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("cannot tell whether this is the host's network namespace: %w", err)
}

// netnsWhere says where sys works when that is not the host: "netns NAME"
// for --netns, else the namespace's identity when the process itself
// runs in a namespace other than the initial one; "" for the host and
// for a directory standing for a root.
func netnsWhere(sys System) (string, error) {
	if n := sys.Netns(); n != "" {
		return "netns " + n, nil
	}
	if liveOf(sys) == nil {
		return "", nil
	}
	initial, err := initialNetns(sys)
	if err != nil || initial {
		return "", err
	}
	id := netnsID(sys)
	if id == "" {
		id = "unknown"
	}
	return "network namespace " + id + ", not the host's (run under 'ip netns exec'?)", nil
}

// hostWide refuses a change to the host's state (what says whose it is:
// "IRQs are the host's") when sys works in another network namespace
// than the host's, with a usage error saying where it runs.
func hostWide(sys System, what string) error {
	where, err := netnsWhere(sys)
	if err != nil {
		return err
	}
	if where == "" {
		return nil
	}
	return usage.Errorf("%s; not changed from inside %s", what, where)
}

// liveOf is the live system under sys (opened for boot edits or not);
// nil for a directory.
func liveOf(sys System) *Live {
	switch s := sys.(type) {
	case *Live:
		return s
	case bootEditor:
		return liveOf(s.System)
	}
	return nil
}
