package tune

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"linerate/diagnose"
	"linerate/internal/usage"
	"linerate/source/procfs"
	"linerate/source/sysfs"
)

// sameIRQPrefix marks the value of an irq-affinity item whose target is a
// whole interface and whose IRQs all go to the set ("same:1-3", what
// --same asks for); without it they are spread one per CPU of the set.
const sameIRQPrefix = "same:"

// resolveIRQs turns an irq-affinity target into interrupts: "41" is IRQ 41;
// "eth0/rx-0" (or "eth0/TxRx-0", "eth0/#2", procfs.MatchIRQ) the one
// interrupt of eth0 that serves that queue; "eth0" every interrupt of eth0
// that the kernel lists in /proc/interrupts (whole is then true). The
// interrupts of an interface are found as box finds them
// (procfs.NICIRQs): its device's msi_irqs (a virtio NIC's are its PCI
// function's), else the /proc/interrupts lines whose action names it, else
// those whose chip names its PCI address.
func resolveIRQs(sys System, target string) (irqs []procfs.IRQName, whole bool, err error) {
	if n, err := strconv.Atoi(target); err == nil {
		if n < 0 {
			return nil, false, usage.Errorf("target %q: want an IRQ number or IFACE[/QUEUE]", target)
		}
		return []procfs.IRQName{{Ref: target, Number: n}}, false, nil
	}
	iface, queue, _ := strings.Cut(target, "/")
	if err := checkIface(sys, iface); err != nil {
		return nil, false, err
	}
	named, rows, err := ifaceIRQs(sys, iface)
	if err != nil {
		return nil, false, err
	}
	if len(named) == 0 {
		return nil, false, usage.Errorf("%s has no interrupts (no msi_irqs, and no /proc/interrupts line names it or its PCI address)", iface)
	}
	if queue == "" {
		for _, q := range named {
			if rows[q.Number] {
				irqs = append(irqs, q)
			}
		}
		return irqs, true, nil
	}
	q, ok := procfs.MatchIRQ(named, iface, queue)
	if !ok {
		have := make([]string, len(named))
		for i, q := range named {
			have[i] = fmt.Sprintf("%s (IRQ %d)", q.Ref, q.Number)
		}
		return nil, false, usage.Errorf("no interrupt of %s serves %s (has: %s)", iface, queue, strings.Join(have, ", "))
	}
	return []procfs.IRQName{q}, false, nil
}

// ifaceIRQs names the interrupts of iface, and says which of them
// /proc/interrupts lists (a vector with a handler).
func ifaceIRQs(sys System, iface string) ([]procfs.IRQName, map[int]bool, error) {
	const procInterrupts = "proc/interrupts"
	b, err := sys.ReadFile(procInterrupts)
	if err != nil {
		return nil, nil, fileErr(procInterrupts, err)
	}
	in, err := procfs.ParseInterrupts(bytes.NewReader(b))
	if err != nil {
		return nil, nil, fileErr(procInterrupts, err)
	}
	actions, listed := map[int]string{}, map[int]bool{}
	for _, r := range in.Rows {
		if r.Number >= 0 {
			actions[r.Number], listed[r.Number] = r.Actions, true
		}
	}
	var pci, device string
	var msi []int
	err = sys.SysFS(func(s sysfs.FS) (err error) {
		pci, msi, device, err = s.DeviceIRQs(iface)
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%s's device: %w", iface, err)
	}
	nums, _ := procfs.NICIRQs(iface, device, pci, msi, &in)
	return procfs.NameIRQs(iface, device, nums, actions), listed, nil
}

// SameCPUs marks an irq-affinity item whose target is a whole interface
// ("eth0") to put every IRQ on the whole set; other items come back as
// they are.
func SameCPUs(it Item) Item {
	if it.Kind == diagnose.FixIRQAffinity && ItemIface(it) != "" && !strings.Contains(it.Target, "/") &&
		!strings.HasPrefix(it.Value, sameIRQPrefix) {
		it.Value = sameIRQPrefix + it.Value
	}
	return it
}

// irqByName is the affinity of an interrupt named by what it serves
// ("a/rx-0"): it is resolved again when applied, since a change applied
// before it in the same transaction (rings, channels, an MTU) may have
// reset the NIC and given its interrupts new numbers.
type irqByName struct {
	sys   System
	it    Item
	ref   string
	cpus  []int
	inner Action
	said  string
}

func (a *irqByName) Describe() Change { return a.inner.Describe() }

// Said reports a number that changed since the plan.
func (a *irqByName) Said() string { return a.said }

func (a *irqByName) Apply(ctx context.Context) (Undo, error) {
	was := a.inner.Describe().IRQ
	irqs, _, err := resolveIRQs(a.sys, a.ref)
	if err != nil {
		return nil, fmt.Errorf("find %s again: %w", a.ref, err)
	}
	if len(irqs) == 1 && irqs[0].Number != was {
		inner, err := irqAction(a.sys, a.it, irqs[0], a.cpus)
		if err != nil {
			return nil, err
		}
		a.inner = inner
		a.said = fmt.Sprintf("%s is IRQ %d now (IRQ %d when planned)", a.ref, irqs[0].Number, was)
	}
	return a.inner.Apply(ctx)
}
