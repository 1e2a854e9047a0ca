package live

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"linerate/box"
	"linerate/source/procfs"
	"linerate/source/sysfs"
)

// refreshEvery is how often a View looks again at which interfaces are up
// and what the interrupts are called: they rarely change, and reading them
// every second would cost more than the sampling itself.
const refreshEvery = 10 * time.Second

// View turns rates into snapshots: it picks the interfaces shown and
// names the interrupts. Safe for use by several goroutines.
type View struct {
	// Ifaces are the interfaces shown, in this order; empty: every
	// interface that is up except lo, sorted.
	Ifaces []string
	// Proc names the interrupts (/proc/interrupts); Sys finds each
	// interface's interrupts (device/msi_irqs).
	Proc procfs.FS
	Sys  sysfs.FS
	// Up lists the interfaces that are up (nil: net.Interfaces, in the
	// network namespace of the calling thread).
	Up func() ([]string, error)

	mu      sync.Mutex
	shown   []string
	irqs    map[string]IRQInfo
	checked time.Time
	now     func() time.Time
}

// Snapshot builds the snapshot of r.
func (v *View) Snapshot(r box.Rates) Snapshot {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := time.Now()
	if v.now != nil {
		now = v.now()
	}
	stale := v.irqs == nil || now.Sub(v.checked) >= refreshEvery
	for label := range r.Interrupts {
		if _, known := v.irqs[label]; !known && !stale {
			if _, err := strconv.Atoi(label); err == nil {
				stale = true // an interrupt appeared since the last look
			}
		}
	}
	if stale {
		v.refresh()
		v.checked = now
		// What the file did not name stays unnamed until the next look.
		for label := range r.Interrupts {
			if _, known := v.irqs[label]; !known {
				v.irqs[label] = IRQInfo{}
			}
		}
	}
	if len(v.Ifaces) > 0 {
		return Build(r, v.Ifaces, v.irqs)
	}
	return Build(r, v.shown, v.irqs)
}

// refresh re-reads the interfaces up and the interrupts' names. What
// cannot be read is left unnamed: the snapshot still has its numbers.
func (v *View) refresh() {
	v.shown = v.Ifaces
	if len(v.Ifaces) == 0 {
		up := v.Up
		if up == nil {
			up = UpInterfaces
		}
		if names, err := up(); err == nil {
			v.shown = names
		}
	}
	v.irqs = map[string]IRQInfo{}
	in, err := v.Proc.Interrupts()
	if err != nil && len(in.Rows) == 0 {
		return
	}
	owner := map[int]string{}
	for _, n := range v.shown {
		if d, err := v.Sys.NetDevice(n); err == nil {
			for _, irq := range d.MSIIRQs {
				owner[irq] = n
			}
		}
	}
	for _, row := range in.Rows {
		info := IRQInfo{Name: row.Actions}
		if row.Number >= 0 {
			info.Iface = owner[row.Number]
			if info.Iface == "" {
				info.Iface = actionOf(row.Actions, v.shown)
			}
		}
		v.irqs[row.Label] = info
	}
}

// actionOf is the interface among ifaces that one of an interrupt's
// comma-separated actions names: "eth0", "eth0-rx-0", "eth0-TxRx-1".
func actionOf(actions string, ifaces []string) string {
	for _, a := range strings.Split(actions, ",") {
		a = strings.TrimSpace(a)
		for _, n := range ifaces {
			if a == n || (len(a) > len(n) && strings.HasPrefix(a, n) && strings.ContainsRune("-_:@", rune(a[len(n)]))) {
				return n
			}
		}
	}
	return ""
}

// UpInterfaces lists the interfaces of the calling thread's network
// namespace that are up, loopback excepted, sorted by name.
func UpInterfaces() ([]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, i := range ifs {
		if i.Flags&net.FlagUp != 0 && i.Flags&net.FlagLoopback == 0 {
			names = append(names, i.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}
