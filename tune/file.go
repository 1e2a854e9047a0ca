package tune

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"linerate/diagnose"
	"linerate/internal/order"
	"linerate/internal/usage"
	"linerate/source/cpuset"
	"linerate/source/procfs"
)

// fileAction changes one value in one proc or sys file (the kinds
// irq-affinity, rps, rps-flow, xps, sysctl and governor), or writes a whole
// configuration file (a boot file, the irqbalance defaults: whole).
type fileAction struct {
	sys  System
	c    Change
	file string // root-relative
	data string // what is written
	// match reports whether a value read from file is the new value; nil
	// with whole.
	match func(got string) bool
	// whole compares the file's every byte with data, not its trimmed value.
	whole bool
	// refused words an error of the write itself, when the kernel says no.
	refused func(err error) error
	// after runs once the new value reads back (a service restart).
	after func() error
}

// read is the file's value as match and whole compare it.
func (a *fileAction) read() (string, error) {
	if !a.whole {
		return readTrim(a.sys, a.file)
	}
	b, err := a.sys.ReadFile(a.file)
	return string(b), err
}

// holds reports whether got is the new value.
func (a *fileAction) holds(got string) bool {
	if a.whole {
		return got == a.data
	}
	return a.match(got)
}

func (a *fileAction) Describe() Change { return a.c }

func (a *fileAction) Apply(ctx context.Context) (Undo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cur, err := a.read()
	if err != nil {
		return nil, fileErr(a.file, err)
	}
	if a.holds(cur) {
		return noUndo, nil
	}
	undo := undoWith(a.sys, *a.c.Restore)
	if err := a.sys.WriteFile(a.file, []byte(a.data)); err != nil {
		// A proc or sysfs file that refuses a write keeps its value: the
		// Undo is nil, nothing changed.
		if a.refused != nil {
			if e := a.refused(err); e != nil {
				return nil, e
			}
		}
		if a.whole {
			return nil, fmt.Errorf("write %s: %w", display(a.file), err)
		}
		return nil, fmt.Errorf("write %q to %s: %w", a.data, display(a.file), err)
	}
	got, err := a.read()
	if err != nil {
		return undo, fmt.Errorf("read back: %w", fileErr(a.file, err))
	}
	switch {
	case a.whole && !a.holds(got):
		return undo, fmt.Errorf("%s reads back different from what was written", display(a.file))
	case !a.holds(got):
		return undo, fmt.Errorf("%s reads %q after writing %q", display(a.file), got, a.data)
	case a.after != nil:
		return undo, a.after()
	}
	return undo, nil
}

// display shows a root-relative name as the absolute path it stands for.
func display(name string) string { return "/" + name }

func fileErr(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s: %w", display(name), err)
}

// sameSet compares two CPU sets.
func sameSet(a, b []int) bool { return slices.Equal(a, b) }

// maskMatch matches a hex mask file against a CPU set.
func maskMatch(want []int) func(string) bool {
	return func(got string) bool {
		l, err := cpuset.ParseMask(got)
		return err == nil && sameSet(l, want)
	}
}

// listMatch matches a CPU list file against a CPU set.
func listMatch(want []int) func(string) bool {
	return func(got string) bool {
		l, err := cpuset.ParseList(got)
		return err == nil && sameSet(l, want)
	}
}

// cpuValue parses a CPU list value; "none" or "" is the empty set.
func cpuValue(v string) ([]int, error) {
	if v == "none" {
		v = ""
	}
	l, err := cpuset.ParseList(v)
	if err != nil {
		return nil, usage.Errorf("value %q: %w", v, err)
	}
	return l, nil
}

// listString prints a CPU set in value syntax: "1-3", or "none".
func listString(l []int) string {
	if len(l) == 0 {
		return "none"
	}
	return cpuset.FormatList(l)
}

// checkOnline refuses CPUs that are not online, when the system says
// which are (sys/devices/system/cpu/online).
func checkOnline(sys System, cpus []int) error {
	s, err := readTrim(sys, "sys/devices/system/cpu/online")
	if err != nil {
		return nil // a system that does not say: the kernel will
	}
	online, err := cpuset.ParseList(s)
	if err != nil {
		return fmt.Errorf("/sys/devices/system/cpu/online: %w", err)
	}
	for _, c := range cpus {
		if !slices.Contains(online, c) {
			return usage.Errorf("CPU %d is not online (online: %s)", c, cpuset.FormatList(online))
		}
	}
	return nil
}

// netDevices lists the interfaces of the system's namespace.
func netDevices(sys System) ([]string, error) {
	names, err := sys.ReadDir("sys/class/net")
	if err != nil {
		return nil, fileErr("sys/class/net", err)
	}
	return names, nil
}

// checkIface makes sure the interface exists.
func checkIface(sys System, iface string) error {
	if iface == "" || len(iface) > 15 || strings.ContainsAny(iface, "/\x00 ") || iface == "." || iface == ".." {
		return usage.Errorf("%q is not an interface name", iface)
	}
	names, err := netDevices(sys)
	if err != nil {
		return err
	}
	if !slices.Contains(names, iface) {
		where := ""
		if sys.Netns() != "" {
			where = " in netns " + sys.Netns()
		}
		return usage.Errorf("no interface %s%s (have: %s)", iface, where, strings.Join(names, ", "))
	}
	return nil
}

// queueTargets expands "eth1/rx-0" or "eth1/rx-*" (dir is "rx" or "tx")
// into queue directories "sys/class/net/eth1/queues/rx-0", with the
// target each one is known by.
func queueTargets(sys System, target, dir string) (targets, dirs []string, err error) {
	iface, q, ok := strings.Cut(target, "/")
	if !ok || !strings.HasPrefix(q, dir+"-") {
		return nil, nil, usage.Errorf("target %q: want IFACE/%s-N or IFACE/%s-*", target, dir, dir)
	}
	if err := checkIface(sys, iface); err != nil {
		return nil, nil, err
	}
	base := "sys/class/net/" + iface + "/queues"
	names, err := sys.ReadDir(base)
	if err != nil {
		return nil, nil, fileErr(base, err)
	}
	var have []string
	for _, n := range names {
		if strings.HasPrefix(n, dir+"-") {
			have = append(have, n)
		}
	}
	order.Sort(have, func(a, b string) int { return queueIndex(a) - queueIndex(b) })
	if q == dir+"-*" {
		for _, n := range have {
			targets = append(targets, iface+"/"+n)
			dirs = append(dirs, base+"/"+n)
		}
		return targets, dirs, nil
	}
	if _, err := strconv.Atoi(strings.TrimPrefix(q, dir+"-")); err != nil || !slices.Contains(have, q) {
		return nil, nil, usage.Errorf("%s has no queue %s (has: %s)", iface, q, strings.Join(have, ", "))
	}
	return []string{target}, []string{base + "/" + q}, nil
}

func queueIndex(name string) int {
	_, n, _ := strings.Cut(name, "-")
	i, _ := strconv.Atoi(n)
	return i
}

func init() {
	builders[diagnose.FixRPS] = func(sys System, it Item) ([]Action, error) { return buildQueueMask(sys, it, "rx", "rps_cpus") }
	builders[diagnose.FixXPS] = func(sys System, it Item) ([]Action, error) { return buildQueueMask(sys, it, "tx", "xps_cpus") }
	builders[diagnose.FixRPSFlow] = buildRPSFlow
	builders[diagnose.FixIRQAffinity] = buildIRQAffinity
	builders[diagnose.FixSysctl] = buildSysctl
	builders[diagnose.FixGovernor] = buildGovernor
}

// buildQueueMask: rps (rx-N/rps_cpus) and xps (tx-N/xps_cpus), CPU lists
// written as hex masks.
func buildQueueMask(sys System, it Item, dir, file string) ([]Action, error) {
	want, err := cpuValue(it.Value)
	if err != nil {
		return nil, err
	}
	if err := checkOnline(sys, want); err != nil {
		return nil, err
	}
	targets, dirs, err := queueTargets(sys, it.Target, dir)
	if err != nil {
		return nil, err
	}
	var acts []Action
	for i, d := range dirs {
		p := d + "/" + file
		cur, err := readTrim(sys, p)
		if errors.Is(err, fs.ErrNotExist) {
			if names, derr := sys.ReadDir(d); derr == nil && file == "xps_cpus" && slices.Contains(names, file) {
				// The file is there but reading it says ENOENT: the
				// kernel keeps XPS for NICs with more than one tx queue
				// (net/core/net-sysfs.c, xps_cpus_show).
				iface, _, _ := strings.Cut(targets[i], "/")
				return nil, usage.Errorf("%s: %s has a single tx queue, and the kernel steers transmits (XPS) only between several", targets[i], iface)
			}
			return nil, usage.Errorf("%s: not supported by this kernel (no %s)", targets[i], display(p))
		}
		if err != nil {
			return nil, fileErr(p, err)
		}
		from, err := cpuset.ParseMask(cur)
		if err != nil {
			return nil, fileErr(p, err)
		}
		c := Change{Kind: it.Kind, Target: targets[i], From: listString(from), To: listString(want),
			Note: it.Note, Unchanged: sameSet(from, want)}
		c.Restore = &Item{Kind: it.Kind, Target: targets[i], Value: c.From}
		acts = append(acts, &fileAction{sys: sys, c: c, file: p, data: cpuset.FormatMask(want), match: maskMatch(want)})
	}
	return acts, nil
}

// buildRPSFlow: rx-N/rps_flow_cnt. The kernel rounds the count up to a
// power of two (net/core/net-sysfs.c, store_rps_dev_flow_table_cnt), so
// only powers of two (or 0, off) read back as written.
func buildRPSFlow(sys System, it Item) ([]Action, error) {
	n, err := strconv.ParseUint(it.Value, 10, 32)
	if err != nil {
		return nil, usage.Errorf("value %q: want a number of flows, e.g. 4096", it.Value)
	}
	if n != 0 && n&(n-1) != 0 {
		p := uint64(1)
		for p < n {
			p <<= 1
		}
		return nil, usage.Errorf("value %d: the kernel rounds rps_flow_cnt up to a power of two; ask for %d", n, p)
	}
	targets, dirs, err := queueTargets(sys, it.Target, "rx")
	if err != nil {
		return nil, err
	}
	want := strconv.FormatUint(n, 10)
	var acts []Action
	for i, d := range dirs {
		p := d + "/rps_flow_cnt"
		cur, err := readTrim(sys, p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usage.Errorf("%s: not supported by this kernel (no %s)", targets[i], display(p))
		}
		if err != nil {
			return nil, fileErr(p, err)
		}
		c := Change{Kind: it.Kind, Target: targets[i], From: cur, To: want, Note: it.Note, Unchanged: cur == want}
		c.Restore = &Item{Kind: it.Kind, Target: targets[i], Value: cur}
		acts = append(acts, &fileAction{sys: sys, c: c, file: p, data: want,
			match: func(got string) bool { return got == want }})
	}
	return acts, nil
}

// buildIRQAffinity: proc/irq/N/smp_affinity_list (or smp_affinity, as a
// mask, on kernels without the list file). The target is a number, or an
// interrupt named by what it serves (irqname.go), resolved now: the change
// and its restore item keep the name, the change also the number.
func buildIRQAffinity(sys System, it Item) ([]Action, error) {
	if err := hostWide(sys, "IRQs are the host's"); err != nil {
		return nil, err
	}
	val, same := strings.CutPrefix(it.Value, sameIRQPrefix)
	want, err := cpuValue(val)
	if err != nil {
		return nil, err
	}
	if len(want) == 0 {
		return nil, usage.Errorf("value %q: an IRQ needs at least one CPU", it.Value)
	}
	if err := checkOnline(sys, want); err != nil {
		return nil, err
	}
	irqs, whole, err := resolveIRQs(sys, it.Target)
	if err != nil {
		return nil, err
	}
	var acts []Action
	for i, q := range irqs {
		cpus := want
		if whole && !same {
			cpus = []int{want[i%len(want)]}
		}
		a, err := irqAction(sys, it, q, cpus)
		if err != nil {
			return nil, err
		}
		if q.Ref != strconv.Itoa(q.Number) {
			a = &irqByName{sys: sys, it: it, ref: q.Ref, cpus: cpus, inner: a}
		}
		acts = append(acts, a)
	}
	return acts, nil
}

// irqAction sets one interrupt's affinity to want.
func irqAction(sys System, it Item, q procfs.IRQName, want []int) (Action, error) {
	n := q.Number
	dir := fmt.Sprintf("proc/irq/%d", n)
	list, mask := dir+"/smp_affinity_list", dir+"/smp_affinity"
	a := &fileAction{sys: sys}
	var from []int
	if cur, err := readTrim(sys, list); err == nil {
		if from, err = cpuset.ParseList(cur); err != nil {
			return nil, fileErr(list, err)
		}
		a.file, a.data, a.match = list, cpuset.FormatList(want), listMatch(want)
	} else if cur, err2 := readTrim(sys, mask); err2 == nil {
		if from, err = cpuset.ParseMask(cur); err != nil {
			return nil, fileErr(mask, err)
		}
		a.file, a.data, a.match = mask, cpuset.FormatMask(want), maskMatch(want)
	} else if errors.Is(err, fs.ErrNotExist) {
		return nil, usage.Errorf("no IRQ %d (%s is missing)", n, display(dir))
	} else {
		return nil, fileErr(list, err)
	}
	a.c = Change{Kind: it.Kind, Target: q.Ref, IRQ: n, From: listString(from), To: listString(want),
		Note: it.Note, Unchanged: sameSet(from, want)}
	if q.Ref != strconv.Itoa(n) {
		a.c.Note = joinNote(a.c.Note, fmt.Sprintf("IRQ %d now", n))
	}
	a.c.Restore = &Item{Kind: it.Kind, Target: q.Ref, Value: a.c.From}
	a.refused = func(err error) error {
		// An interrupt whose chip cannot move it answers EIO (the CM4's PCIe
		// MSI, for one: kernel/irq/proc.c write_irq_affinity).
		if errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("IRQ %d cannot move to CPUs %s (%s: %w): steer its packets with rps instead",
				n, a.c.To, display(a.file), err)
		}
		return nil
	}
	return a, nil
}

// sysctlFile maps a sysctl name to its file under proc/sys, as
// procfs.FS.SysctlPath reads it; a bad name is bad input.
func sysctlFile(name string) (string, error) {
	p, err := procfs.NewFS("proc").SysctlPath(name)
	return p, usage.Wrap(err)
}

// buildSysctl: proc/sys/NAME. Inside a network namespace only net.*
// sysctls are the namespace's own; the rest would change the host and
// are refused.
func buildSysctl(sys System, it Item) ([]Action, error) {
	p, err := sysctlFile(it.Target)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(p, "proc/sys/net/") {
		if err := hostWide(sys, "only net.* sysctls belong to a network namespace; "+it.Target+" would change the host"); err != nil {
			return nil, err
		}
	}
	want := strings.Fields(it.Value)
	if len(want) == 0 {
		return nil, usage.Errorf("empty value")
	}
	cur, err := readTrim(sys, p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		where := "on this system"
		if ns, _ := netnsWhere(sys); ns != "" {
			where = "in " + ns + " (a host-wide sysctl is set on the host)"
		}
		return nil, usage.Errorf("no sysctl %s %s", it.Target, where)
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("sysctl %s cannot be read, so it could not be restored: %w", it.Target, err)
	case err != nil:
		return nil, fileErr(p, err)
	}
	from := strings.Join(strings.Fields(cur), " ")
	to := strings.Join(want, " ")
	c := Change{Kind: it.Kind, Target: it.Target, From: from, To: to, Note: it.Note, Unchanged: from == to}
	c.Restore = &Item{Kind: it.Kind, Target: it.Target, Value: from}
	return []Action{&fileAction{sys: sys, c: c, file: p, data: to + "\n",
		match: func(got string) bool { return strings.Join(strings.Fields(got), " ") == to }}}, nil
}

// governorCPUs expands a governor target: "all", "cpu0-3", "0-3", "cpu2".
func governorCPUs(sys System, target string) ([]int, error) {
	if target == "all" {
		if s, err := readTrim(sys, "sys/devices/system/cpu/online"); err == nil {
			return cpuset.ParseList(s)
		}
		names, err := sys.ReadDir("sys/devices/system/cpu")
		if err != nil {
			return nil, fileErr("sys/devices/system/cpu", err)
		}
		var cpus []int
		for _, n := range names {
			if id, err := strconv.Atoi(strings.TrimPrefix(n, "cpu")); err == nil && strings.HasPrefix(n, "cpu") {
				cpus = append(cpus, id)
			}
		}
		slices.Sort(cpus)
		return cpus, nil
	}
	l, err := cpuset.ParseList(strings.TrimPrefix(target, "cpu"))
	if err != nil || len(l) == 0 {
		return nil, usage.Errorf("target %q: want all, cpuN, cpuN-M or a CPU list", target)
	}
	return l, nil
}

// buildGovernor: sys/devices/system/cpu/cpuN/cpufreq/scaling_governor, one
// action per CPU. CPUs sharing a clock policy change together; the later
// ones then find the value already set.
func buildGovernor(sys System, it Item) ([]Action, error) {
	if err := hostWide(sys, "CPU governors are the host's"); err != nil {
		return nil, err
	}
	if it.Value == "" || strings.ContainsAny(it.Value, " /\n") {
		return nil, usage.Errorf("value %q: want a governor name, e.g. performance", it.Value)
	}
	cpus, err := governorCPUs(sys, it.Target)
	if err != nil {
		return nil, err
	}
	var acts []Action
	for _, cpu := range cpus {
		dir := fmt.Sprintf("sys/devices/system/cpu/cpu%d/cpufreq", cpu)
		p := dir + "/scaling_governor"
		cur, err := readTrim(sys, p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usage.Errorf("cpu%d has no cpufreq (%s): not supported on this machine", cpu, display(p))
		}
		if err != nil {
			return nil, fileErr(p, err)
		}
		if avail, err := readTrim(sys, dir+"/scaling_available_governors"); err == nil {
			if !slices.Contains(strings.Fields(avail), it.Value) {
				return nil, usage.Errorf("cpu%d has no governor %q (available: %s)", cpu, it.Value, avail)
			}
		}
		target := fmt.Sprintf("cpu%d", cpu)
		c := Change{Kind: it.Kind, Target: target, From: cur, To: it.Value, Note: it.Note, Unchanged: cur == it.Value}
		c.Restore = &Item{Kind: it.Kind, Target: target, Value: cur}
		want := it.Value
		acts = append(acts, &fileAction{sys: sys, c: c, file: p, data: want,
			match: func(got string) bool { return got == want }})
	}
	return acts, nil
}
