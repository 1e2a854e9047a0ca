package tune

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"linerate/diagnose"
	"linerate/internal/usage"
	"linerate/source/cpuset"
	"linerate/source/ethtool"
)

func init() {
	builders[diagnose.FixIRQBalanceBanned] = buildIRQBalanceBanned
	builders[diagnose.FixTxQueueLen] = buildTxQueueLen
}

// The irqbalance defaults file: Debian's and Raspberry Pi OS's, then
// Fedora's. irqbalance 1.8 and later read IRQBALANCE_BANNED_CPULIST
// (irqbalance(1), "IRQBALANCE_BANNED_CPULIST"); the older hex mask
// IRQBALANCE_BANNED_CPUS is replaced by it when present.
var irqbalanceDefaults = []string{"etc/default/irqbalance", "etc/sysconfig/irqbalance"}

const bannedKey = "IRQBALANCE_BANNED_CPULIST="

// buildIRQBalanceBanned: target "box", value a CPU list ("none" unbans):
// the CPUs irqbalance moves no interrupt to and leaves the interrupts of
// alone, so that IRQs pinned there by hand stay. The file is edited (its
// old bytes journalled) and a running irqbalance restarted to read it.
func buildIRQBalanceBanned(sys System, it Item) ([]Action, error) {
	if it.Target != "box" {
		return nil, usage.Errorf("target %q: want box", it.Target)
	}
	if err := hostWide(sys, "irqbalance is the host's"); err != nil {
		return nil, err
	}
	var file string
	var old []byte
	for _, n := range irqbalanceDefaults {
		if b, err := sys.ReadFile(n); err == nil {
			file, old = n, b
			break
		}
	}
	if file == "" {
		return nil, usage.Errorf("no irqbalance defaults file (/%s)", strings.Join(irqbalanceDefaults, ", /"))
	}
	edit := func(old []byte) (string, error) {
		cpus, err := cpuValue(it.Value)
		if err != nil {
			return "", err
		}
		if err := checkOnline(sys, cpus); err != nil {
			return "", err
		}
		return setBanned(string(old), cpus), nil
	}
	a, err := wholeFileEdit(sys, it, file, old, edit, bannedOf)
	if err != nil {
		return nil, err
	}
	svc, err := sys.Services()
	switch {
	case err == nil:
		a.c.Note = joinNote(a.c.Note, "edits "+display(file)+"; irqbalance restarts if it runs")
		a.after = func() error {
			st, err := svc.State(irqbalanceUnit)
			if err != nil || st.Active != "active" {
				return err
			}
			if err := svc.Stop(irqbalanceUnit); err != nil {
				return err
			}
			return svc.Start(irqbalanceUnit)
		}
	case !errors.Is(err, ethtool.ErrNotSupported):
		return nil, err
	default:
		// No service manager to restart irqbalance: the file is read when
		// irqbalance starts. One running now would keep its old list while
		// the journal said the new one holds; a restore is let through, so
		// that a rollback always can put the file back.
		pid, perr := processNamed(sys, "irqbalance")
		if perr != nil {
			return nil, perr
		}
		if pid != 0 && !a.c.Unchanged && !strings.HasPrefix(it.Value, restoreFile) {
			return nil, usage.Errorf("irqbalance runs (pid %d) and %v: it would not read the new list until it restarts; stop it, apply, start it", pid, err)
		}
		a.c.Note = joinNote(a.c.Note, fmt.Sprintf("edits %s; not restarted (%v): irqbalance reads it when it starts", display(file), err))
	}
	return []Action{a}, nil
}

// processNamed returns the pid of a process whose comm is name, 0 when
// none runs: the kernel's /proc/PID/comm, read on sys.
func processNamed(sys System, name string) (int, error) {
	ents, err := sys.ReadDir("proc")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fileErr("proc", err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e)
		if err != nil || pid <= 0 {
			continue
		}
		// A process that ended since the listing has no comm: not it.
		if comm, err := readTrim(sys, "proc/"+e+"/comm"); err == nil && comm == name {
			return pid, nil
		}
	}
	return 0, nil
}

// setBanned returns the defaults file with IRQBALANCE_BANNED_CPULIST set
// (removed for no CPUs), replacing a line that sets it or the old mask.
func setBanned(text string, cpus []int) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, bannedKey) || strings.HasPrefix(t, "IRQBALANCE_BANNED_CPUS=") {
			continue
		}
		out = append(out, l)
	}
	if len(cpus) > 0 {
		out = append(out, bannedKey+cpuset.FormatList(cpus))
	}
	return strings.Join(out, "\n") + "\n"
}

// bannedOf is the banned CPU list a defaults file sets, "none" if it
// sets none.
func bannedOf(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), bannedKey); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return "none"
}

// buildTxQueueLen: sys/class/net/IFACE/tx_queue_len, the length of the
// queue of a qdisc that takes it from the interface (pfifo_fast, the
// children of mq). 0 is a length too: what a veth or a loopback has, so
// what a rollback there puts back.
func buildTxQueueLen(sys System, it Item) ([]Action, error) {
	n, err := strconv.ParseUint(it.Value, 10, 32)
	if err != nil {
		return nil, usage.Errorf("value %q: want a queue length, e.g. 2000", it.Value)
	}
	if err := checkIface(sys, it.Target); err != nil {
		return nil, err
	}
	p := "sys/class/net/" + it.Target + "/tx_queue_len"
	cur, err := readTrim(sys, p)
	if err != nil {
		return nil, fileErr(p, err)
	}
	want := strconv.FormatUint(n, 10)
	c := Change{Kind: it.Kind, Target: it.Target, From: cur, To: want, Note: it.Note, Unchanged: cur == want}
	c.Restore = &Item{Kind: it.Kind, Target: it.Target, Value: cur}
	return []Action{&fileAction{sys: sys, c: c, file: p, data: want, match: func(got string) bool { return got == want }}}, nil
}
