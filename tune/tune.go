// Package tune owns the changes linerate makes to a box: each one an Action
// that says what it will change (Describe: current and new value) and does
// it (Apply), a Plan of them built from diagnose fixes or from explicit
// items, the journal that makes a Plan one reversible Transaction (also
// across kill -9), and Persist, which makes an applied set survive reboot
// with a systemd unit and a sysctl.d file.
//
// Every read and write goes through a System: the live host, a network
// namespace of it (NewLiveNetns), or a directory laid out like / (NewDir).
// An Item is the serialisable form of a change ("rps", "eth1/rx-0", "1-3");
// Build turns it into Actions after checking that the target exists, the
// value parses and the driver supports the change, before anything changes.
// The journal stores for every Action the Item that puts the old value
// back, so a later process can restore exactly what an earlier one changed.
package tune

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"linerate/diagnose"
	"linerate/internal/usage"
	"linerate/source/ethtool"
)

// Item is one requested change in words: Kind says what is changed (a
// diagnose.FixKind, as a string), Target names the object, Value is the
// new value. The table of kinds is the one of diagnose.Fix, plus rss-table
// (a whole indirection table) which restores what rss-equal replaced:
//
//	irq-affinity  "41", "eth0/rx-0", "eth0"        CPU list "1-3" ("same:1-3": every IRQ of eth0 to the set)
//	rps           "eth1/rx-0" ("eth1/rx-*": all)  CPU list "1-3", "none"
//	rps-flow      "eth1/rx-0" ("eth1/rx-*")       "4096" (a power of two, or 0)
//	xps           "eth1/tx-0" ("eth1/tx-*")       CPU list
//	sysctl        "net.core.rmem_max"             "8388608"
//	coalesce      "eth0"                          "rx-usecs=100,rx-frames=10,adaptive-rx=off"
//	rings         "eth0"                          "rx=4096,tx=max"
//	channels      "eth0"                          "combined=4" (rx, tx, other, combined)
//	rss-equal     "eth0"                          "2" (spread over the first N rx queues)
//	rss-table     "eth0"                          "0,1,0,1,..." (one queue per bucket)
//	flow-hash     "eth0/udp4"                     "sdfn"
//	feature       "eth0/generic-receive-offload"  "on" / "off"
//	feature       "eth0"                          "rx-gro=on,tx-checksum-ipv4=off"
//	mtu           "eth1"                          "9000"
//	irqbalance    "box"                           "stop" / "start"
//	irqbalance-banned "box"                       CPU list "2-3", "none"
//	txqueuelen    "eth0"                          "2000"
//	qdisc         "eth0"                          "fq_codel", "cake,bandwidth=100mbit", "default"
//	governor      "all", "cpu0-3", "2"            "performance"
//	boot          "cmdline.txt", "config.txt"     "pci=pcie_bus_perf", "arm_freq=2000"
//
// boot items are printed as the exact edit to make, or, on a system
// opened with WithBoot (`tune apply --boot`), made to cmdline.txt,
// config.txt and /etc/default/grub as journalled edits. The advice-only
// items of diagnose (bench, and boot items about hardware or cables) are
// never applied: they are printed as exact suggestions.
type Item struct {
	Kind   diagnose.FixKind `json:"kind"`
	Target string           `json:"target"`
	Value  string           `json:"value"`
	// Note says why; shown beside the change.
	Note string `json:"note,omitempty"`
	// restore marks an item this package made to put a value back (a
	// Change's Restore, a journal entry's): only such an item may carry a
	// whole file (restoreFile). Items read from a user, a plan or findings
	// never have it: JSON does not fill an unexported field.
	restore bool
}

// String is the item in the --set form; a value with a line break or
// another control character is quoted, so that a message naming the item
// stays one line.
func (it Item) String() string {
	v := it.Value
	if strings.ContainsFunc(v, unicode.IsControl) {
		v = strconv.Quote(v)
	}
	return it.Kind.String() + ":" + it.Target + "=" + v
}

// key identifies what an item changes, to refuse the same thing set twice.
func (it Item) key() string { return it.Kind.String() + ":" + it.Target }

// ParseItem reads the --set form KIND:TARGET=VALUE, e.g.
// "rps:eth1/rx-0=1-3" or "coalesce:eth0=rx-usecs=100,rx-frames=10" (the
// value is everything after the first '='). Its errors are
// *usage.FieldError with the field "Item".
func ParseItem(s string) (Item, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || kind == "" {
		return Item{}, usage.Field("Item", "%q: want KIND:TARGET=VALUE, e.g. rps:eth1/rx-0=1-3", s)
	}
	target, value, ok := strings.Cut(rest, "=")
	if !ok || target == "" {
		return Item{}, usage.Field("Item", "%q: want KIND:TARGET=VALUE, e.g. %s:TARGET=VALUE", s, kind)
	}
	it := Item{Kind: diagnose.FixKind(strings.TrimSpace(kind)), Target: strings.TrimSpace(target), Value: strings.TrimSpace(value)}
	if _, err := builderOf(it.Kind); err != nil {
		return Item{}, usage.Field("Item", "%q: %w", s, err)
	}
	return it, nil
}

// Change is what an Action will do, for a person to read before it runs.
// From and To are written in the value syntax of the kind, so that
// Item{Kind, Target, To} asks for the same change again.
type Change struct {
	Kind   diagnose.FixKind `json:"kind"`
	Target string           `json:"target"`
	// IRQ is the number an irq-affinity target named by what it serves
	// ("eth0/TxRx-1") resolved to when the change was built.
	IRQ  int    `json:"irq,omitempty"`
	From string `json:"from"`
	To   string `json:"to"`
	// Unchanged is true when the system already holds To.
	Unchanged bool `json:"unchanged,omitempty"`
	// ResetsLink marks a change that takes the link down for a moment
	// (rings, channels; MTU on a physical NIC).
	ResetsLink bool `json:"resets_link,omitempty"`
	// Boot marks a change that takes effect at the next boot (kernel
	// command line, firmware config). Boot changes are Manual.
	Boot bool `json:"boot,omitempty"`
	// Manual marks advice linerate does not apply; Advice says what to do.
	Manual bool   `json:"manual,omitempty"`
	Advice string `json:"advice,omitempty"`
	Note   string `json:"note,omitempty"`
	// Restore is the item that puts From back exactly; nil for Manual
	// changes. It is what the journal keeps.
	Restore *Item `json:"restore,omitempty"`
}

// Item is the item that asks for this change again.
func (c Change) Item() Item { return Item{Kind: c.Kind, Target: c.Target, Value: c.To} }

// Undo puts back what an Apply changed.
type Undo func(ctx context.Context) error

// Action is one change to a System. Build checks everything it can before
// returning one, so that Apply fails only when the system itself refuses.
type Action interface {
	// Describe says what Apply will change, from what, to what.
	Describe() Change
	// Apply makes the change and reads it back; a value read back that
	// differs from the one written is an error. Apply on a system that
	// already holds the value changes nothing. The Undo is non-nil
	// whenever something may have changed, also when err is not nil.
	Apply(ctx context.Context) (Undo, error)
}

// builder turns an item into actions against a system.
type builder func(sys System, it Item) ([]Action, error)

// builders maps each kind to its builder; filled by the files that
// implement them.
var builders = map[diagnose.FixKind]builder{}

// ErrUnknownKind is wrapped by the error of an item whose kind tune has
// no builder for.
var ErrUnknownKind = errors.New("unknown kind")

// builderOf returns the builder of a kind, or a usage error wrapping
// ErrUnknownKind that lists the kinds there are.
func builderOf(kind diagnose.FixKind) (builder, error) {
	b, ok := builders[kind]
	if !ok {
		return nil, usage.Errorf("%w %q (kinds: %s)", ErrUnknownKind, kind, strings.Join(Kinds(), ", "))
	}
	return b, nil
}

// Kinds lists the item kinds tune knows, sorted.
func Kinds() []string {
	out := make([]string, 0, len(builders))
	for k := range builders {
		out = append(out, k.String())
	}
	sort.Strings(out)
	return out
}

// Build checks an item against the system and returns the actions that
// carry it out: one, or one per queue or CPU for a target such as
// "eth1/rx-*" or "all". Problems with the item (unknown target, a value
// that does not parse, a driver that lacks the setting) are usage errors
// naming the item.
func Build(sys System, it Item) ([]Action, error) {
	b, err := builderOf(it.Kind)
	if err != nil {
		return nil, itemErr(it, err)
	}
	acts, err := b(sys, it)
	if err != nil {
		// What the system lacks (a driver without the setting, a directory
		// without ethtool) is the user's to change, not a failure.
		if errors.Is(err, ethtool.ErrNotSupported) {
			err = usage.Wrap(err)
		}
		return nil, itemErr(it, err)
	}
	return acts, nil
}

// itemErr prefixes err with the item, keeping whether it is bad input.
func itemErr(it Item, err error) error {
	if strings.HasPrefix(err.Error(), it.String()) {
		return err
	}
	e := fmt.Errorf("%s: %w", it, err)
	if usage.Is(err) {
		return usage.Wrap(e)
	}
	return e
}

// undoWith returns an Undo that applies the restore item on sys.
func undoWith(sys System, restore Item) Undo {
	restore.restore = true
	return func(ctx context.Context) error {
		acts, err := Build(sys, restore)
		if err != nil {
			return fmt.Errorf("restore %s: %w", restore, err)
		}
		for _, a := range acts {
			if _, err := a.Apply(ctx); err != nil {
				return fmt.Errorf("restore %s: %w", restore, err)
			}
		}
		return nil
	}
}

// noUndo is the Undo of an Apply that changed nothing.
func noUndo(context.Context) error { return nil }
