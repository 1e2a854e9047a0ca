package tune

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"linerate/diagnose"
)

// ReapplyStep is one transaction of a re-apply: the items of one scope
// (the box, or an interface) in one stage.
type ReapplyStep struct {
	Scope string `json:"scope"`
	// Changed are the changes made; empty when everything already held.
	Changed []Change `json:"changed"`
	// Skipped are items the system cannot take now, with the reason (an
	// interface that is not there, a queue that is gone).
	Skipped []Skip `json:"skipped,omitempty"`
	// Record is the journal record, "" when nothing changed.
	Record string `json:"record,omitempty"`
}

// queueKinds are the kinds whose targets the channel count decides: they
// are re-applied after the interface's other settings.
var queueKinds = []diagnose.FixKind{diagnose.FixRPS, diagnose.FixRPSFlow, diagnose.FixXPS, diagnose.FixIRQAffinity}

// Reapply applies again the persisted items of scope: an interface's
// ("eth0"), the box-wide ones ("box"), or, with "", the box's and those
// of every interface that exists now. It is what the hooks run when an
// interface appears or comes up (a udev/systemd device unit, OpenWrt's
// hotplug) and at boot; after a driver reset or a re-created interface its
// settings come back. An interface's items go in two transactions, its
// NIC settings (channels first of all) and then its queues' and IRQs'
// masks, whose targets exist only once the channels are set. Each change
// is journalled and read back as in apply; values that already hold are
// not touched, so running it again changes nothing.
func Reapply(ctx context.Context, store Store, sys System, items []Item, scope string) ([]ReapplyStep, error) {
	scopes := []string{scope}
	if scope == "" {
		scopes = []string{"box"}
		have, err := netDevices(sys)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if iface := ItemIface(it); iface != "" && !slices.Contains(scopes, iface) && slices.Contains(have, iface) {
				scopes = append(scopes, iface)
			}
		}
	}
	var out []ReapplyStep
	for _, sc := range scopes {
		mine := Scope(items, sc)
		nic := slices.DeleteFunc(slices.Clone(mine), func(it Item) bool { return slices.Contains(queueKinds, it.Kind) })
		queues := slices.DeleteFunc(slices.Clone(mine), func(it Item) bool { return !slices.Contains(queueKinds, it.Kind) })
		for i, stage := range [][]Item{nic, queues} {
			if len(stage) == 0 {
				continue
			}
			if i == 1 && sc != "box" && namesIRQs(stage) && !ifaceUp(sys, sc) {
				// A driver names its vectors when the interface is
				// opened (e1000e, vmxnet3: request_irq in ndo_open): an
				// interface that has just appeared (a reset, a driver
				// bound again) has numbers without names until whatever
				// manages the network brings it up.
				awaitUp(ctx, sys, sc, reapplyUpWait)
			}
			st, err := reapplyStage(ctx, store, sys, stage, sc)
			out = append(out, st)
			if err != nil {
				return out, fmt.Errorf("reapply %s: %w", sc, err)
			}
		}
	}
	return out, nil
}

func reapplyStage(ctx context.Context, store Store, sys System, items []Item, scope string) (ReapplyStep, error) {
	st := ReapplyStep{Scope: scope, Changed: []Change{}}
	p, err := PlanFixes(sys, items)
	if err != nil {
		return st, err
	}
	st.Skipped = p.Skipped
	tx, err := store.Begin(sys, p)
	if err != nil {
		return st, err
	}
	if len(tx.Record().Entries) == 0 {
		return st, nil
	}
	st.Record = tx.Record().ID
	if err := tx.Apply(ctx); err != nil {
		return st, err
	}
	for _, e := range tx.Record().Entries {
		st.Changed = append(st.Changed, e.Change)
	}
	return st, nil
}

// ReapplyLine says what a step did, in one line for a log.
func (s ReapplyStep) String() string {
	var parts []string
	for _, c := range s.Changed {
		parts = append(parts, fmt.Sprintf("%s %s %s → %s", c.Kind, c.Target, c.From, c.To))
	}
	for _, k := range s.Skipped {
		parts = append(parts, fmt.Sprintf("skipped %s (%s)", k.Item, k.Reason))
	}
	what := "everything holds"
	if len(s.Changed) > 0 {
		what = fmt.Sprintf("%d changed (journal %s)", len(s.Changed), s.Record)
	}
	if len(parts) > 0 {
		what += ": " + strings.Join(parts, "; ")
	}
	return "reapply " + s.Scope + ": " + what
}

// Log appends lines, each stamped with the time, to reapply.log in the
// state directory (beside the journal): the hooks run with nobody
// watching.
func (s Store) Log(lines ...string) error {
	if err := os.MkdirAll(filepath.Dir(s.Dir), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(filepath.Dir(s.Dir), "reapply.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	now := time.Now().Format(time.RFC3339)
	for _, l := range lines {
		fmt.Fprintf(f, "%s %s\n", now, l)
	}
	return f.Close()
}

// PersistedCheck is what one persistence target holds, each item
// checked against the live system (CheckItems).
type PersistedCheck struct {
	Target string
	Lines  []string
}

// CheckPersisted reads the items persisted under root for target, or for
// every target when target is "", and checks each against sys: what the
// next boot or re-apply would do. A target with nothing persisted is left
// out, and so is OpenWrt's when every target is asked for: it writes the
// same files as systemd's, and differs only in its hooks. An unknown
// target is a usage.FieldError on Target.
func CheckPersisted(sys System, root, target string) ([]PersistedCheck, error) {
	targets := Targets()
	if target != "" {
		targets = []string{target}
	}
	var out []PersistedCheck
	for _, t := range targets {
		items, err := Persisted(root, t)
		if err != nil {
			return out, err
		}
		if (t == TargetOpenWrt && target == "") || len(items) == 0 {
			continue
		}
		out = append(out, PersistedCheck{Target: t, Lines: CheckItems(sys, items)})
	}
	return out, nil
}

// CheckItems says, for each item, whether the system holds its value now:
// "holds", "differs, now X", or why it cannot be built here.
func CheckItems(sys System, items []Item) []string {
	var out []string
	for _, it := range items {
		if it.Kind.Advice() {
			continue
		}
		acts, err := Build(sys, it)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: cannot check: %s", it, strings.TrimPrefix(err.Error(), it.String()+": ")))
			continue
		}
		for _, a := range acts {
			c := a.Describe()
			state := "holds"
			if !c.Unchanged {
				state = "differs, now " + c.From
			}
			out = append(out, fmt.Sprintf("%s %s %s: %s", c.Kind, c.Target, c.To, state))
		}
	}
	return out
}

// reapplyUpWait bounds how long a re-apply waits for an interface to be
// brought up before it sets the affinity of interrupts named by what
// they serve.
const reapplyUpWait = 60 * time.Second

// namesIRQs reports whether items hold an interrupt named by what it
// serves ("eth0/rx-0", "eth0").
func namesIRQs(items []Item) bool {
	return slices.ContainsFunc(items, func(it Item) bool {
		return it.Kind == diagnose.FixIRQAffinity && ItemIface(it) != ""
	})
}

// ifaceUp reports whether iface is administratively up (IFF_UP in
// sysfs's flags).
func ifaceUp(sys System, iface string) bool {
	v, err := readTrim(sys, "sys/class/net/"+iface+"/flags")
	if err != nil {
		return false
	}
	f, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 32)
	return err == nil && f&1 != 0
}

// awaitUp waits until iface is up, ctx ends or within has passed.
func awaitUp(ctx context.Context, sys System, iface string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for !ifaceUp(sys, iface) {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return true
}
