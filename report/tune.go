package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"linerate/tune"
)

// JSON writes v as indented JSON, the form of every command's --json:
// a box's is the schema of docs/inspect-json.md, a result's that of
// docs/bench.md.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// TunePlanJSON is the JSON form of a plan: its changes (advice included),
// and the items left out with the reason.
type TunePlanJSON struct {
	Netns   string        `json:"netns,omitempty"`
	Changes []tune.Change `json:"changes"`
	Skipped []tune.Skip   `json:"skipped,omitempty"`
}

// TunePlanDoc turns a plan into its JSON form.
func TunePlanDoc(p *tune.Plan) TunePlanJSON {
	return TunePlanJSON{Netns: p.Netns, Changes: p.Changes(), Skipped: p.Skipped}
}

// tuneWhere names the system a plan or record is for.
func tuneWhere(netns string) string {
	if netns == "" {
		return "this host"
	}
	return "netns " + netns
}

// tuneShort keeps long values (a whole RSS table, an offload snapshot)
// readable on one line.
func tuneShort(s string) string {
	const limit = 48
	if len(s) <= limit {
		return s
	}
	return s[:limit-1] + "… (" + fmt.Sprint(strings.Count(s, ",")+1) + " values)"
}

// TunePlan prints a plan for a person: the changes that will run, marked
// when they reset the link; what is already in place; what was skipped;
// and the advice linerate never applies (boot items), as exact edits.
func TunePlan(w io.Writer, p *tune.Plan) error {
	var todo, same, manual []tune.Change
	resets := 0
	for _, c := range p.Changes() {
		switch {
		case c.Manual:
			manual = append(manual, c)
		case c.Unchanged:
			same = append(same, c)
		default:
			todo = append(todo, c)
			if c.ResetsLink {
				resets++
			}
		}
	}
	head := fmt.Sprintf("plan for %s: %d change%s", tuneWhere(p.Netns), len(todo), tunePlural(len(todo)))
	if resets > 0 {
		head += fmt.Sprintf(", %d of them reset%s a link", resets, map[bool]string{true: "s", false: ""}[resets == 1])
	}
	fmt.Fprintln(w, head)
	if len(todo) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  KIND\tTARGET\tNOW\t\tNEW")
		for _, c := range todo {
			flag := ""
			if c.ResetsLink {
				flag = "RESETS LINK"
			}
			line := fmt.Sprintf("  %s\t%s\t%s\t→\t%s\t%s", c.Kind, c.Target, tuneShort(c.From), tuneShort(c.To), flag)
			if c.Note != "" {
				line += "  (" + c.Note + ")"
			}
			fmt.Fprintln(tw, strings.TrimRight(line, "\t "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(same) > 0 {
		fmt.Fprintf(w, "already set (%d):\n", len(same))
		for _, c := range same {
			fmt.Fprintf(w, "  %s %s = %s\n", c.Kind, c.Target, tuneShort(c.To))
		}
	}
	if len(p.Skipped) > 0 {
		fmt.Fprintf(w, "skipped (%d):\n", len(p.Skipped))
		for _, s := range p.Skipped {
			fmt.Fprintf(w, "  %s: %s\n", s.Item, s.Reason)
		}
	}
	if len(manual) > 0 {
		fmt.Fprintf(w, "by hand — linerate never applies these:\n")
		for _, c := range manual {
			state := ""
			if c.Unchanged {
				state = " (already in effect)"
			}
			fmt.Fprintf(w, "  %s %s: %s%s\n", c.Kind, c.Target, c.Advice, state)
		}
	}
	return nil
}

func tunePlural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// TuneApplied says what an apply did.
func TuneApplied(w io.Writer, r *tune.Record, store, stateFlag string) {
	n := 0
	for _, e := range r.Entries {
		if e.State == tune.Applied {
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "nothing to change: every item is already in place")
		return
	}
	fmt.Fprintf(w, "applied %d change%s on %s, each read back; journal %s in %s\n", n, tunePlural(n), tuneWhere(r.Netns), r.ID, store)
	for _, e := range r.Entries {
		if e.State == tune.Applied && e.Said != "" {
			fmt.Fprintf(w, "  %s %s: %s\n", e.Kind, e.Target, e.Said)
		}
	}
	fmt.Fprintf(w, "undo with: linerate tune rollback%s; keep across reboots with: linerate tune persist%s\n", stateFlag, stateFlag)
}

// TuneStatus prints the applied set and whether the live values still
// match.
func TuneStatus(w io.Writer, recs []tune.RecordStatus) error {
	if len(recs) == 0 {
		fmt.Fprintln(w, "nothing applied: the journal is empty")
		return nil
	}
	drift := 0
	for _, rs := range recs {
		r := rs.Record
		fmt.Fprintf(w, "%s  %s  %s  %s\n", r.ID, r.Created.Local().Format("2006-01-02 15:04:05"), tuneWhere(r.Netns), r.State)
		switch {
		case rs.Err != "":
			fmt.Fprintf(w, "  cannot check: %s\n", rs.Err)
			continue
		case rs.Stale:
			fmt.Fprintln(w, "  from before the last boot: its changes did not survive the reboot (rollback drops it)")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, e := range rs.Entries {
			state := "holds"
			switch {
			case e.Err != "":
				state = "cannot read: " + e.Err
				drift++
			case !e.Holds:
				state = "DRIFTED, now " + tuneShort(e.Live)
				drift++
			}
			if e.State != tune.Applied {
				state += " (journal: " + e.State + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t→\t%s\t%s\n", e.Kind, e.Target, tuneShort(e.From), tuneShort(e.To), state)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if drift > 0 {
		fmt.Fprintf(w, "%d change%s no longer hold%s (irqbalance, a driver reload or a person may have changed them)\n",
			drift, tunePlural(drift), map[bool]string{true: "s", false: ""}[drift == 1])
	}
	return nil
}

// TuneRolledBack says what rollback did with each journal record.
func TuneRolledBack(w io.Writer, res []tune.RollbackResult) {
	if len(res) == 0 {
		fmt.Fprintln(w, "nothing to roll back: the journal is empty")
		return
	}
	for _, r := range res {
		switch {
		case r.Err != nil:
			fmt.Fprintf(w, "%s: restored %d change%s, then failed: %v\n", r.ID, r.Restored, tunePlural(r.Restored), r.Err)
		case r.Dropped != "":
			fmt.Fprintf(w, "%s: %s; dropped\n", r.ID, r.Dropped)
		default:
			fmt.Fprintf(w, "%s: restored %d change%s on %s\n", r.ID, r.Restored, tunePlural(r.Restored), tuneWhere(r.Netns))
		}
	}
}

// TunePersisted says what persist wrote, and prints the boot items as the
// edits to make by hand.
func TunePersisted(w io.Writer, res *tune.PersistResult) {
	for _, s := range res.Skipped {
		fmt.Fprintf(w, "not persisted: %s\n", s)
	}
	if len(res.Written) == 0 {
		fmt.Fprintln(w, "nothing to persist: no applied changes on this host")
	}
	for _, f := range res.Written {
		fmt.Fprintf(w, "wrote %s\n", f)
	}
	if len(res.Boot) > 0 {
		fmt.Fprintln(w, "by hand — linerate never writes boot files:")
		if res.Advice != nil {
			for _, c := range res.Advice {
				fmt.Fprintf(w, "  %s %s: %s\n", c.Kind, c.Target, c.Advice)
			}
			return
		}
		for _, it := range res.Boot {
			fmt.Fprintf(w, "  %s %s: %s\n", it.Kind, it.Target, it.Value)
		}
	}
}

// TuneHeld prints what each persistence target holds under root,
// each item checked against the live system (tune.CheckPersisted).
func TuneHeld(w io.Writer, root string, checks []tune.PersistedCheck) {
	for _, c := range checks {
		fmt.Fprintf(w, "persisted (%s, under %s):\n", c.Target, root)
		for _, l := range c.Lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}
