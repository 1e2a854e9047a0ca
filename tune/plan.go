package tune

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"linerate/diagnose"
	"linerate/internal/jsonbudget"
	"linerate/internal/usage"
)

// Plan is a checked list of actions on one system: every item was built
// (target found, value parsed, driver support and current value read)
// before the plan exists.
type Plan struct {
	// Netns is the network namespace the plan changes; "" for the host.
	Netns string
	// Items are what was asked, in order (skipped ones excluded).
	Items []Item
	// Skipped are the items PlanFixes left out, with the reason.
	Skipped []Skip
	actions []Action
}

// Skip is an item left out of a plan, and why.
type Skip struct {
	Item   Item   `json:"item"`
	Reason string `json:"reason"`
}

// NewPlan builds every item against sys. All problems are reported
// together, as one line: a plan is applied whole or not at all.
func NewPlan(sys System, items []Item) (*Plan, error) { return newPlan(sys, items, false) }

// PlanFixes plans what it can of diagnose's fixes: an item this system
// cannot take (the driver lacks the setting, a queue or sysctl that is not
// there, an item for another namespace) is left out, with the reason, in
// Skipped. Failures to read the system are still errors.
func PlanFixes(sys System, items []Item) (*Plan, error) { return newPlan(sys, items, true) }

func newPlan(sys System, items []Item, lenient bool) (*Plan, error) {
	p := &Plan{Netns: sys.Netns()}
	var problems []string
	bad := false
	seen := map[string]bool{}
	for _, it := range items {
		acts, err := Build(sys, it)
		if err != nil && lenient && usage.Is(err) {
			p.Skipped = append(p.Skipped, Skip{Item: it, Reason: strings.TrimPrefix(err.Error(), it.String()+": ")})
			continue
		}
		if err != nil {
			problems = append(problems, err.Error())
			bad = bad || usage.Is(err)
			continue
		}
		p.Items = append(p.Items, it)
		for _, a := range acts {
			c := a.Describe()
			k := c.Kind.String() + ":" + c.Target
			if seen[k] && !c.Manual {
				problems = append(problems, fmt.Sprintf("%s: %s %s is set twice", it, c.Kind, c.Target))
				bad = true
				continue
			}
			seen[k] = true
			p.actions = append(p.actions, a)
		}
	}
	if c := queueConflicts(p.actions); len(c) > 0 {
		problems, bad = append(problems, c...), true
	}
	p.actions = resetsFirst(p.actions)
	if len(problems) > 0 {
		err := fmt.Errorf("%s", strings.Join(problems, "; "))
		if bad {
			return nil, usage.Wrap(err)
		}
		return nil, err
	}
	return p, nil
}

// queueConflicts refuses a plan that changes the channels of an
// interface and also settings of its queues: the channel count decides
// which queue directories exist, and every item is checked against the
// system as it is before the plan runs.
func queueConflicts(acts []Action) []string {
	channels := map[string]bool{}
	for _, a := range acts {
		if c := a.Describe(); c.Kind == diagnose.FixChannels {
			channels[c.Target] = true
		}
	}
	var out []string
	for _, a := range acts {
		c := a.Describe()
		switch c.Kind {
		case diagnose.FixRPS, diagnose.FixRPSFlow, diagnose.FixXPS:
			iface, _, _ := strings.Cut(c.Target, "/")
			if channels[iface] {
				out = append(out, fmt.Sprintf("%s %s: %s also changes channels, which decides the queues; apply the channels first, then plan the queues", c.Kind, c.Target, iface))
				channels[iface] = false // say it once
			}
		}
	}
	return out
}

// Actions are the plan's actions, in order (advice included).
func (p *Plan) Actions() []Action { return p.actions }

// Changes describes every action, in order.
func (p *Plan) Changes() []Change {
	out := make([]Change, len(p.actions))
	for i, a := range p.actions {
		out[i] = a.Describe()
	}
	return out
}

// ItemsFromFindings turns the fixes of diagnose findings into items, the
// most severe finding's first; a fix for something an earlier fix already
// changes is dropped.
func ItemsFromFindings(fs []diagnose.Finding) []Item {
	var out []Item
	seen := map[string]bool{}
	for _, f := range fs {
		for _, fx := range f.Fixes {
			it := Item{Kind: fx.Kind, Target: fx.Target, Value: fx.Value, Note: fx.Note}
			if it.Note == "" {
				it.Note = f.Rule
			} else {
				it.Note = f.Rule + ": " + it.Note
			}
			if seen[it.key()] {
				continue
			}
			seen[it.key()] = true
			out = append(out, it)
		}
	}
	return out
}

// Findings is `linerate diagnose --json` output as tune reads it.
type Findings struct {
	Findings []diagnose.Finding
	// Origin is the machine they were made from; nil when the file does
	// not say (a bare array, or an older linerate).
	Origin *diagnose.Origin
}

// ReadFindings reads `linerate diagnose --json` output: an array of
// findings, or an object holding them under "findings" (and their origin
// under "origin").
func ReadFindings(r io.Reader) (Findings, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return Findings{}, err
	}
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var fs []diagnose.Finding
		if err := jsonbudget.Unmarshal(b, &fs); err != nil {
			return Findings{}, usage.Errorf("findings: %w", err)
		}
		return Findings{Findings: fs}, nil
	}
	var doc struct {
		Findings *[]diagnose.Finding `json:"findings"`
		Origin   *diagnose.Origin    `json:"origin"`
	}
	if err := jsonbudget.Unmarshal(b, &doc); err != nil {
		return Findings{}, usage.Errorf("findings: %w", err)
	}
	if doc.Findings == nil {
		return Findings{}, usage.Errorf("findings: no \"findings\" array (want the output of linerate diagnose --json)")
	}
	return Findings{Findings: *doc.Findings, Origin: doc.Origin}, nil
}

// PlanFileSchema is the version of the plan file format.
const PlanFileSchema = 1

// PlanFile is a saved plan: `tune plan -o FILE` writes it, `tune apply
// --plan FILE` and the boot-time unit of Persist read it.
type PlanFile struct {
	Schema int    `json:"schema"`
	Netns  string `json:"netns,omitempty"`
	Items  []Item `json:"items"`
}

// ReadPlanFile reads a plan file and checks its items' kinds.
func ReadPlanFile(r io.Reader) (PlanFile, error) {
	var pf PlanFile
	b, err := io.ReadAll(r)
	if err != nil {
		return pf, err
	}
	if err := jsonbudget.Check(b, reflect.TypeFor[PlanFile](), jsonbudget.Limit(len(b))); err != nil {
		return pf, usage.Errorf("plan file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pf); err != nil {
		return pf, usage.Errorf("plan file: %w", err)
	}
	if pf.Schema != PlanFileSchema {
		return pf, usage.Errorf("plan file: schema %d, this linerate reads %d", pf.Schema, PlanFileSchema)
	}
	for i, it := range pf.Items {
		if _, err := builderOf(it.Kind); err != nil {
			return pf, usage.Errorf("plan file: item %d: %w", i+1, err)
		}
	}
	return pf, nil
}

// WritePlanFile writes a plan file.
func WritePlanFile(w io.Writer, pf PlanFile) error {
	pf.Schema = PlanFileSchema
	if pf.Items == nil {
		pf.Items = []Item{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(pf)
}

// ItemIface is the interface an item changes, "" for a box-wide item
// (IRQs by number, sysctls, irqbalance, governors, boot). An IRQ named by
// what it serves ("eth0/rx-0") is its interface's: it is resolved, and
// applied again, when the interface appears.
func ItemIface(it Item) string {
	switch it.Kind {
	case diagnose.FixIRQAffinity:
		if _, err := strconv.Atoi(it.Target); err == nil {
			return ""
		}
		iface, _, _ := strings.Cut(it.Target, "/")
		return iface
	case diagnose.FixRPS, diagnose.FixRPSFlow, diagnose.FixXPS, diagnose.FixFlowHash, diagnose.FixFeature:
		iface, _, _ := strings.Cut(it.Target, "/")
		return iface
	case diagnose.FixCoalesce, diagnose.FixRings, diagnose.FixChannels, diagnose.FixRSSEqual, diagnose.FixRSSTable, diagnose.FixMTU,
		diagnose.FixTxQueueLen, diagnose.FixQdisc:
		return it.Target
	}
	return ""
}

// Scope keeps the items of one interface (scope "IFACE") or the box-wide
// ones (scope "box"); "" keeps all.
func Scope(items []Item, scope string) []Item {
	if scope == "" {
		return items
	}
	var out []Item
	for _, it := range items {
		iface := ItemIface(it)
		if scope == "box" && iface == "" || iface == scope {
			out = append(out, it)
		}
	}
	return out
}
