package tune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"linerate/diagnose"
	"linerate/internal/usage"
)

func init() { builders[diagnose.FixQdisc] = buildQdisc }

// The qdisc kind replaces an interface's root queueing discipline through
// tc, run in the system's namespace (tune links no netlink library). Its
// value is a kind and options, comma-separated: "fq_codel",
// "fq_codel,limit=10240,target=5000us,ecn", "cake,bandwidth=100mbit",
// "pfifo,limit=1000"; or "default", the kernel's own (what `tc qdisc del
// dev X root` brings back: noqueue, pfifo_fast, or mq with default
// children). The root it replaces must be one tune can put back exactly:
// the kernel's default, or one of restorable's kinds alone on the device.

// qdiscDefault is the value of the kernel's default root qdisc.
const qdiscDefault = "default"

// qdiscOptions are the options tune sets and reads back per kind: the
// tc keyword, and whether it takes a value. cake's are passed to tc as
// given and only its kind is read back.
var qdiscOptions = map[string]map[string]bool{
	"fq_codel":   {"limit": true, "flows": true, "quantum": true, "target": true, "interval": true, "memory_limit": true, "drop_batch": true, "ecn": false, "noecn": false},
	"pfifo":      {"limit": true},
	"bfifo":      {"limit": true},
	"pfifo_fast": {},
	"cake":       nil,
}

// tcQdisc is one line of `tc -j qdisc show`.
type tcQdisc struct {
	Kind    string                     `json:"kind"`
	Handle  string                     `json:"handle"`
	Root    bool                       `json:"root"`
	Parent  string                     `json:"parent"`
	Options map[string]json.RawMessage `json:"options"`
}

// parseQdiscValue splits a value into the kind and its options in order.
func parseQdiscValue(v string) (kind string, opts [][2]string, err error) {
	parts := strings.Split(v, ",")
	kind = parts[0]
	if kind == qdiscDefault && len(parts) == 1 {
		return kind, nil, nil
	}
	known, ok := qdiscOptions[kind]
	if !ok {
		return "", nil, usage.Errorf("value %q: want fq_codel, cake, pfifo, bfifo, pfifo_fast or default, with options after commas (fq_codel,limit=10240)", v)
	}
	for _, p := range parts[1:] {
		k, val, hasVal := strings.Cut(p, "=")
		if k == "" || strings.ContainsAny(k+val, " \t\n") || hasVal && val == "" {
			return "", nil, usage.Errorf("value %q: option %q: want NAME=VALUE or NAME", v, p)
		}
		if known != nil {
			takes, ok := known[k]
			if !ok || takes != hasVal {
				return "", nil, usage.Errorf("value %q: %s takes no option %q here", v, kind, p)
			}
		}
		opts = append(opts, [2]string{k, val})
	}
	return kind, opts, nil
}

// tcArgs are the words after `tc qdisc replace dev X root`.
func tcArgs(kind string, opts [][2]string) []string {
	args := []string{kind}
	for _, o := range opts {
		args = append(args, o[0])
		if o[1] != "" {
			args = append(args, o[1])
		}
	}
	return args
}

// readQdiscs returns the qdiscs of iface as tc shows them.
func readQdiscs(sys System, iface string) ([]tcQdisc, error) {
	out, err := sys.Tc("-j", "qdisc", "show", "dev", iface)
	if err != nil {
		return nil, err
	}
	var qs []tcQdisc
	if err := json.Unmarshal(out, &qs); err != nil {
		return nil, fmt.Errorf("tc -j qdisc show dev %s: %w", iface, err)
	}
	return qs, nil
}

// qdiscValue says the root qdisc of iface as a value that asks for it
// again exactly, or why it cannot be.
func qdiscValue(qs []tcQdisc, iface string) (string, error) {
	var root *tcQdisc
	mine := 0
	for i := range qs {
		q := &qs[i]
		if q.Kind == "ingress" || q.Kind == "clsact" {
			continue // not under the root; a root replace leaves it alone
		}
		if q.Root {
			root = q
		}
		if q.Handle != "0:" {
			mine++
		}
	}
	if root == nil {
		return "", fmt.Errorf("%s has no root qdisc", iface)
	}
	if mine == 0 {
		return qdiscDefault, nil
	}
	if _, ok := qdiscOptions[root.Kind]; !ok || root.Kind == "cake" || mine > 1 {
		return "", usage.Errorf("%s: its root qdisc is %s %s, set by hand: tune replaces only a root it can put back exactly (the kernel's default, or fq_codel, pfifo, bfifo, pfifo_fast alone)", iface, root.Kind, root.Handle)
	}
	return qdiscValueOf(root)
}

// qdiscValueOf writes an explicit root qdisc's options as a value.
func qdiscValueOf(q *tcQdisc) (string, error) {
	parts := []string{q.Kind}
	for _, k := range slices.Sorted(maps.Keys(q.Options)) {
		raw := q.Options[k]
		switch {
		case q.Kind == "fq_codel" && k == "ecn":
			var on bool
			if err := json.Unmarshal(raw, &on); err != nil {
				return "", fmt.Errorf("%s option ecn: %w", q.Kind, err)
			}
			parts = append(parts, map[bool]string{true: "ecn", false: "noecn"}[on])
		case qdiscOptions[q.Kind][k]:
			var n uint64
			if err := json.Unmarshal(raw, &n); err != nil {
				return "", fmt.Errorf("%s option %s: %w", q.Kind, k, err)
			}
			v := strconv.FormatUint(n, 10)
			if k == "target" || k == "interval" {
				v = codelMicros(n)
			}
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, ","), nil
}

// codelMicros is the tc value that sets a CoDel time the kernel shows as
// us microseconds: it keeps the time in units of 1024 ns and shows it
// rounded down, so us itself would come back one unit shorter; us+1
// lands on the same unit (one unit is less than a microsecond more).
func codelMicros(us uint64) string { return strconv.FormatUint(us+1, 10) + "us" }

// qdiscHolds reports whether what tc shows is the value asked for: the
// kind, and the options tune reads back.
func qdiscHolds(qs []tcQdisc, iface, want string) bool {
	kind, opts, err := parseQdiscValue(want)
	if err != nil {
		return false
	}
	got, err := qdiscValue(qs, iface)
	if kind == qdiscDefault || err != nil {
		return err == nil && got == qdiscDefault
	}
	gk, gopts, _ := parseQdiscValue(got)
	if gk != kind {
		// cake cannot be written back (qdiscValue refuses it): its kind is
		// read from the root itself.
		for _, q := range qs {
			if q.Root && q.Kind == kind && kind == "cake" {
				return true
			}
		}
		return false
	}
	for _, o := range opts {
		if o[0] == "target" || o[0] == "interval" {
			continue // kept in 1024 ns units: shown rounded
		}
		if !slices.Contains(gopts, o) {
			return false
		}
	}
	return true
}

func buildQdisc(sys System, it Item) ([]Action, error) {
	kind, opts, err := parseQdiscValue(it.Value)
	if err != nil {
		return nil, err
	}
	if err := checkIface(sys, it.Target); err != nil {
		return nil, err
	}
	qs, err := readQdiscs(sys, it.Target)
	if err != nil {
		return nil, err
	}
	cur, err := qdiscValue(qs, it.Target)
	if err != nil {
		return nil, err
	}
	c := Change{Kind: it.Kind, Target: it.Target, From: cur, To: it.Value, Note: it.Note,
		Unchanged: qdiscHolds(qs, it.Target, it.Value)}
	c.Restore = &Item{Kind: it.Kind, Target: it.Target, Value: cur}
	if l := liveOf(sys); l != nil && kind != qdiscDefault && !c.Unchanged {
		err := l.probeQdisc(tcArgs(kind, opts))
		switch {
		case errors.Is(err, errQdiscRefused):
			return nil, usage.Errorf("value %q: %v", it.Value, err)
		case err != nil:
			c.Note = joinNote(c.Note, "not tried beforehand ("+err.Error()+"): apply finds out")
		}
	}
	return []Action{&qdiscAction{sys: sys, c: c, kind: kind, opts: opts}}, nil
}

type qdiscAction struct {
	sys  System
	c    Change
	kind string
	opts [][2]string
}

func (a *qdiscAction) Describe() Change { return a.c }

func (a *qdiscAction) Apply(ctx context.Context) (Undo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	iface := a.c.Target
	qs, err := readQdiscs(a.sys, iface)
	if err != nil {
		return nil, err
	}
	if qdiscHolds(qs, iface, a.c.To) {
		return noUndo, nil
	}
	undo := undoWith(a.sys, *a.c.Restore)
	args := append([]string{"qdisc", "replace", "dev", iface, "root"}, tcArgs(a.kind, a.opts)...)
	if a.kind == qdiscDefault {
		args = []string{"qdisc", "del", "dev", iface, "root"}
	}
	if _, err := a.sys.Tc(args...); err != nil {
		return undo, fmt.Errorf("%s: %w", iface, err)
	}
	if qs, err = readQdiscs(a.sys, iface); err != nil {
		return undo, fmt.Errorf("read back: %w", err)
	}
	if !qdiscHolds(qs, iface, a.c.To) {
		got, err := qdiscValue(qs, iface)
		return undo, errors.Join(fmt.Errorf("%s: the root qdisc reads %q after setting %q", iface, got, a.c.To), err)
	}
	return undo, nil
}
