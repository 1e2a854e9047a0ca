package procfs

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// An interrupt's number is whatever the kernel handed out at probe time:
// it moves when another device probes first, when a driver is reloaded,
// when a USB NIC is replugged. What an interrupt serves is in its action
// name ("eth0-TxRx-1", "enp4s0-rx-0") and in the device's msi_irqs, and
// survives all three. The functions below name a NIC's interrupts that
// way, so that a tuning can be stored by name and resolved to a number
// whenever it is applied. box names the IRQs it collects and tune resolves
// names with the same functions, so diagnose's proposals and tune's
// targets agree.

// ActionLabel reports whether one of the comma-separated actions of an
// interrupt belongs to iface ("eth0", "eth0-rx-0", "eth0-TxRx-1",
// "eth0@pci:..."), and the part that follows the interface's name and its
// separator ("rx-0", "TxRx-1"; "" for an action that is the name itself).
func ActionLabel(actions, iface string) (label string, ok bool) {
	for _, a := range strings.Split(actions, ",") {
		a = strings.TrimSpace(a)
		if a == iface {
			return "", true
		}
		if len(a) > len(iface) && strings.HasPrefix(a, iface) {
			switch a[len(iface)] {
			case '-', '_', ':', '@':
				return a[len(iface)+1:], true
			}
		}
	}
	return "", false
}

// IRQName is one interrupt of a NIC, named by what it serves.
type IRQName struct {
	// Ref is "IFACE/LABEL" ("eth0/TxRx-1") when the action's label tells
	// this vector apart from the NIC's others; else "IFACE/#K", the K-th of
	// the NIC's interrupts in ascending number (a controller that names
	// every vector after the interface, as the Pi's GENET does, or after
	// something else, as mlx5 does).
	Ref    string
	Number int
}

// NameIRQs names the interrupts of iface: numbers are its vectors
// (device/msi_irqs, or the /proc/interrupts lines that name it), actions
// maps a number to its action names in /proc/interrupts, and device, when
// not "", is what the driver names the vectors after instead of the
// interface (virtio's "virtio2": "virtio2-input.0" is eth0/input.0). The
// result is in ascending number.
func NameIRQs(iface, device string, numbers []int, actions map[int]string) []IRQName {
	nums := append([]int(nil), numbers...)
	sort.Ints(nums)
	labels := make([]string, len(nums))
	count := map[string]int{}
	for i, n := range nums {
		l, ok := ActionLabel(actions[n], iface)
		if !ok && device != "" {
			l, ok = ActionLabel(actions[n], device)
		}
		if ok && l != "" {
			labels[i] = l
			count[strings.ToLower(l)]++
		}
	}
	out := make([]IRQName, len(nums))
	for i, n := range nums {
		ref := fmt.Sprintf("%s/#%d", iface, i)
		if l := labels[i]; l != "" && count[strings.ToLower(l)] == 1 && !strings.HasPrefix(l, "#") {
			ref = iface + "/" + l
		}
		out[i] = IRQName{Ref: ref, Number: n}
	}
	return out
}

// MatchIRQ finds the interrupt a queue name stands for among a NIC's named
// interrupts: the exact label ("TxRx-1", "#0", case aside), or a queue
// written as rx-N or tx-N, which matches the one label that is that queue
// in the driver's words: rx-N, rxN, TxRx-N, rxtx-N, combined-N, queue-N,
// and virtio-net's input.N (tx-N: tx-N, TxRx-N, ..., output.N). The bool
// is false when none, or more than one, matches.
func MatchIRQ(named []IRQName, iface, queue string) (IRQName, bool) {
	for _, q := range named {
		if strings.EqualFold(q.Ref, iface+"/"+queue) {
			return q, true
		}
	}
	dir, idx, ok := strings.Cut(strings.ToLower(queue), "-")
	if _, err := strconv.Atoi(idx); !ok || err != nil || dir != "rx" && dir != "tx" {
		return IRQName{}, false
	}
	want := map[string]bool{dir + idx: true, "txrx" + idx: true, "rxtx" + idx: true, "combined" + idx: true, "queue" + idx: true}
	if dir == "rx" {
		want["input"+idx] = true
	} else {
		want["output"+idx] = true
	}
	var found []IRQName
	for _, q := range named {
		label := strings.TrimPrefix(q.Ref, iface+"/")
		if want[squash(label)] {
			found = append(found, q)
		}
	}
	if len(found) != 1 {
		return IRQName{}, false
	}
	return found[0], true
}

// squash lowercases s and drops everything but letters and digits.
func squash(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// NICIRQs finds the interrupts of iface, in ascending number, and says
// where they were found: the device's MSI vectors when it has any (pci and
// msi as sysfs.FS.DeviceIRQs reads them; source "msi_irqs"); else the rows
// of in whose action is the interface's name or starts with it ("eth0",
// "eth0-rx-0", "eth0-TxRx-1"), or the device's the driver names the
// vectors after ("virtio2-input.0"; "proc/interrupts"); else, for a PCI device,
// the rows whose chip names its PCI address ("PCI-MSIX-0000:00:03.0", as
// virtio's "virtio2-input.0" vectors are; "proc/interrupts chip"). None
// found is nil and "".
func NICIRQs(iface, device, pci string, msi []int, in *Interrupts) (irqs []int, source string) {
	if len(msi) > 0 {
		irqs = append(irqs, msi...)
		sort.Ints(irqs)
		return irqs, "msi_irqs"
	}
	match := func(r InterruptRow) bool {
		_, ok := ActionLabel(r.Actions, iface)
		if !ok && device != "" {
			_, ok = ActionLabel(r.Actions, device)
		}
		return ok
	}
	source = "proc/interrupts"
	if pci != "" && !slices.ContainsFunc(in.Rows, func(r InterruptRow) bool { return r.Number >= 0 && match(r) }) {
		match = func(r InterruptRow) bool { return strings.Contains(r.Chip, pci) }
		source = "proc/interrupts chip"
	}
	for _, r := range in.Rows {
		if r.Number >= 0 && match(r) {
			irqs = append(irqs, r.Number)
		}
	}
	if len(irqs) == 0 {
		return nil, ""
	}
	sort.Ints(irqs)
	return irqs, source
}
