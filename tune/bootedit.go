package tune

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"linerate/diagnose"
	"linerate/internal/usage"
)

// Boot items are advice unless the system is opened for boot edits
// (WithBoot; `tune apply --boot`). Then cmdline.txt and config.txt (in
// /boot/firmware on Raspberry Pi OS Bookworm, /boot before it) and GRUB's
// default command line (/etc/default/grub, target "grub") are edited in
// place. The journal's restore item holds the whole old file (restoreFile),
// so rollback puts back exactly the bytes that were there.

// bootEditor is a System opened for boot edits.
type bootEditor struct{ System }

// WithBoot returns sys with boot items applied instead of printed.
func WithBoot(sys System) System { return bootEditor{sys} }

func bootEdits(sys System) bool { _, ok := sys.(bootEditor); return ok }

// restoreFile prefixes the value of a boot restore item: the old file,
// base64.
const restoreFile = "restore-file:"

const grubDefault = "etc/default/grub"

// bootFile is the file a boot target edits.
func bootFile(sys System, target string) (string, []byte, error) {
	var names []string
	switch target {
	case "cmdline.txt", "config.txt":
		names = []string{"boot/firmware/" + target, "boot/" + target}
	case "grub":
		names = []string{grubDefault}
	default:
		return "", nil, usage.Errorf("boot target %q: only cmdline.txt, config.txt and grub are edited; the rest is advice", target)
	}
	for _, n := range names {
		if b, err := sys.ReadFile(n); err == nil {
			return n, b, nil
		}
	}
	return "", nil, usage.Errorf("no %s on this system (looked for %s)", target, "/"+strings.Join(names, ", /"))
}

// bootParams are the kernel parameters of a cmdline or grub value.
func bootParams(v string) []string { return strings.Fields(v) }

// withParams returns line with params added, a param key=value replacing
// the one with the same key, new ones before rootwait when there is one.
func withParams(line string, params []string) string {
	f := strings.Fields(line)
	for _, p := range params {
		key, _, _ := strings.Cut(p, "=")
		i := slices.IndexFunc(f, func(s string) bool { k, _, _ := strings.Cut(s, "="); return k == key })
		switch {
		case i >= 0:
			f[i] = p
		default:
			if j := slices.Index(f, "rootwait"); j >= 0 {
				f = slices.Insert(f, j, p)
			} else {
				f = append(f, p)
			}
		}
	}
	return strings.Join(f, " ")
}

// editBoot returns the file with the item's change made.
func editBoot(target string, old []byte, value string) (string, error) {
	text := string(old)
	switch target {
	case "cmdline.txt":
		// One line; anything after it is kept as it was.
		line, rest, _ := strings.Cut(text, "\n")
		return withParams(line, bootParams(value)) + "\n" + rest, nil
	case "grub":
		lines := strings.SplitAfter(text, "\n")
		const key = "GRUB_CMDLINE_LINUX_DEFAULT="
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), key) {
				v := strings.Trim(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), key)), `"'`)
				lines[i] = key + `"` + withParams(v, bootParams(value)) + "\"\n"
				return strings.Join(lines, ""), nil
			}
		}
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return text + key + `"` + strings.Join(bootParams(value), " ") + "\"\n", nil
	case "config.txt":
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		section := "all"
		set := map[string]string{}
		var order []string
		for _, kv := range strings.Split(value, ",") {
			k, _, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k == "" {
				return "", usage.Errorf("value %q: want KEY=VALUE[,KEY=VALUE...] lines for config.txt", value)
			}
			set[k] = strings.TrimSpace(kv)
			order = append(order, k)
		}
		done := map[string]bool{}
		for i, l := range lines {
			t := strings.TrimSpace(l)
			if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
				section = strings.Trim(t, "[]")
				continue
			}
			k, _, ok := strings.Cut(t, "=")
			if ok && section == "all" && set[k] != "" && !done[k] {
				lines[i], done[k] = set[k], true
			}
		}
		var add []string
		for _, k := range order {
			if !done[k] {
				add = append(add, set[k])
			}
		}
		if len(add) > 0 {
			if section != "all" {
				lines = append(lines, "[all]")
			}
			lines = append(lines, add...)
		}
		return strings.Join(lines, "\n") + "\n", nil
	}
	return "", fmt.Errorf("boot target %q", target)
}

// buildBootEdit is buildBoot on a system opened for boot edits.
func buildBootEdit(sys System, it Item) ([]Action, error) {
	file, old, err := bootFile(sys, it.Target)
	if err != nil {
		return nil, err
	}
	a, err := wholeFileEdit(sys, it, file, old, func(old []byte) (string, error) { return editBoot(it.Target, old, it.Value) },
		func(b []byte) string { return bootSummary(it.Target, b) })
	if err != nil {
		return nil, err
	}
	a.c.Boot = true
	a.c.Note = joinNote(a.c.Note, "edits "+display(file)+"; takes effect at the next boot")
	if it.Target == "grub" {
		a.c.Note = joinNote(a.c.Note, "run update-grub (grub2-mkconfig -o /boot/grub2/grub.cfg on Fedora) before rebooting")
	}
	return []Action{a}, nil
}

// wholeFileEdit builds the change of a configuration file by edit, whose
// restore item holds the whole old file; an item whose value is such a
// restore writes it back. summary says what a plan shows of the file.
func wholeFileEdit(sys System, it Item, file string, old []byte, edit func([]byte) (string, error), summary func([]byte) string) (*fileAction, error) {
	var data string
	if enc, ok := strings.CutPrefix(it.Value, restoreFile); ok {
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return nil, usage.Errorf("restore value of %s: %w", it.Target, err)
		}
		data = string(b)
	} else {
		var err error
		if data, err = edit(old); err != nil {
			return nil, err
		}
	}
	c := Change{Kind: it.Kind, Target: it.Target, From: summary(old), To: it.Value, Note: it.Note, Unchanged: string(old) == data}
	if strings.HasPrefix(it.Value, restoreFile) {
		c.To = summary([]byte(data))
	}
	c.Restore = &Item{Kind: it.Kind, Target: it.Target, Value: restoreFile + base64.StdEncoding.EncodeToString(old)}
	return &fileAction{sys: sys, c: c, file: file, data: data, whole: true}, nil
}

// bootSummary is what a plan shows as a boot file's value: the command
// line, or config.txt's line count.
func bootSummary(target string, b []byte) string {
	switch target {
	case "config.txt":
		return fmt.Sprintf("%d lines", strings.Count(string(b), "\n"))
	case "grub":
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "GRUB_CMDLINE_LINUX_DEFAULT="); ok {
				return v
			}
		}
		return "no GRUB_CMDLINE_LINUX_DEFAULT"
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}

// BootState says whether a boot entry is in effect: "active" when every
// kernel parameter it adds is on the running kernel's command line
// (/proc/cmdline), else "pending until reboot". config.txt lines are the
// firmware's, which the kernel does not show: "pending until reboot" when
// the record was made in this boot, else "active".
func BootState(sys System, r *Record, e Entry) string {
	if e.Kind != diagnose.FixBoot {
		return ""
	}
	if e.Target == "config.txt" {
		if r.BootID != "" && r.BootID == bootID(sys) {
			return "pending until reboot"
		}
		return "active"
	}
	running, err := readTrim(sys, "proc/cmdline")
	if err != nil {
		return "unknown (no /proc/cmdline)"
	}
	have := strings.Fields(running)
	for _, p := range bootParams(e.To) {
		if !slices.Contains(have, p) {
			return "pending until reboot"
		}
	}
	return "active"
}
