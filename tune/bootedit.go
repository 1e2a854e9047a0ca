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

// withParams returns the parameters f with params added, a param
// key=value replacing the one with the same key, new ones before rootwait
// when there is one.
func withParams(f []string, params []string) []string {
	f = slices.Clone(f)
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
	return f
}

// editBoot returns the file with the item's change made. The value is
// read by its target's grammar (bootvalue.go) before anything is written.
func editBoot(target string, old []byte, value string) (string, error) {
	text := string(old)
	switch target {
	case "cmdline.txt":
		params, err := kernelParams(value)
		if err != nil {
			return "", err
		}
		// One line; anything after it is kept as it was.
		line, rest, _ := strings.Cut(text, "\n")
		return strings.Join(withParams(strings.Fields(line), params), " ") + "\n" + rest, nil
	case "grub":
		params, err := kernelParams(value)
		if err != nil {
			return "", err
		}
		return editGrub(text, params)
	case "config.txt":
		set, keys, err := configLines(value)
		if err != nil {
			return "", err
		}
		return editConfig(text, set, keys), nil
	}
	return "", fmt.Errorf("boot target %q", target)
}

// editConfig sets lines (KEY=VALUE, one per key of keys) in config.txt: a
// line of the same key in an [all] section is replaced, the rest added at
// the end under [all].
func editConfig(text string, set, keys []string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	section := "all"
	done := make([]bool, len(keys))
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			section = strings.Trim(t, "[]")
			continue
		}
		k, _, ok := strings.Cut(t, "=")
		if j := slices.Index(keys, k); ok && section == "all" && j >= 0 && !done[j] {
			lines[i], done[j] = set[j], true
		}
	}
	var add []string
	for j := range keys {
		if !done[j] {
			add = append(add, set[j])
		}
	}
	if len(add) > 0 {
		if section != "all" {
			lines = append(lines, "[all]")
		}
		lines = append(lines, add...)
	}
	return strings.Join(lines, "\n") + "\n"
}

// grubKey is the variable of /etc/default/grub whose kernel parameters a
// grub item edits.
const grubKey = "GRUB_CMDLINE_LINUX_DEFAULT"

// grubAssign is an assignment of grubKey on one line of /etc/default/grub,
// as sh reads it: head is what precedes the value (indentation, "export ",
// the name and '='), quote the value's quote (a double or a single quote,
// or 0 for a bare word), words its parameters, tail what follows (spaces,
// a comment, the line break).
type grubAssign struct {
	head  string
	quote byte
	words []string
	tail  string
}

// lastGrubAssign finds the last line of lines that assigns grubKey: the
// one that wins when sh sources the file. It returns -1 when none does.
func lastGrubAssign(lines []string) int {
	for i := len(lines) - 1; i >= 0; i-- {
		t := strings.TrimLeft(lines[i], " \t")
		if rest, ok := strings.CutPrefix(t, "export"); ok && strings.TrimLeft(rest, " \t") != rest {
			t = strings.TrimLeft(rest, " \t")
		}
		if strings.HasPrefix(t, grubKey+"=") {
			return i
		}
	}
	return -1
}

// parseGrubAssign reads the assignment of grubKey on line: one value,
// double-quoted, single-quoted or bare, followed by nothing but spaces and
// a comment. A value that sh would do more with (a backquote, $( ), a
// backslash, a quote left open, a second command after it) is not one to
// edit by machine.
func parseGrubAssign(line string) (grubAssign, error) {
	i := strings.Index(line, grubKey+"=") + len(grubKey) + 1
	a := grubAssign{head: line[:i]}
	rest := line[i:]
	var content string
	switch {
	case strings.HasPrefix(rest, `"`), strings.HasPrefix(rest, "'"):
		a.quote = rest[0]
		end := strings.IndexByte(rest[1:], a.quote)
		if end < 0 {
			return a, fmt.Errorf("its value's quote does not close on its line")
		}
		content, rest = rest[1:1+end], rest[2+end:]
		if a.quote == '"' && strings.ContainsAny(content, "\\`") || strings.Contains(content, "$(") {
			return a, fmt.Errorf("its value holds a backslash, a backquote or $( )")
		}
	default:
		end := strings.IndexAny(rest, " \t\n#")
		if end < 0 {
			end = len(rest)
		}
		content, rest = rest[:end], rest[end:]
		if strings.Trim(content, paramValueChars) != "" {
			return a, fmt.Errorf("its unquoted value %.40q holds characters sh reads", content)
		}
	}
	if t := strings.TrimLeft(rest, " \t"); t != "" && t != "\n" && !strings.HasPrefix(t, "#") {
		return a, fmt.Errorf("%.40q follows its value", strings.TrimSuffix(t, "\n"))
	}
	a.words, a.tail = strings.Fields(content), rest
	return a, nil
}

// String is the line with the assignment's words, in double quotes where
// the value was bare: the parameters' charset (bootvalue.go) is plain in
// either quote.
func (a grubAssign) String() string {
	q := a.quote
	if q == 0 {
		q = '"'
	}
	return a.head + string(q) + strings.Join(a.words, " ") + string(q) + a.tail
}

// editGrub adds params to the last assignment of grubKey in
// /etc/default/grub, or adds one at the end.
func editGrub(text string, params []string) (string, error) {
	lines := strings.SplitAfter(text, "\n")
	i := lastGrubAssign(lines)
	if i < 0 {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return text + grubAssign{head: grubKey + "=", words: params, tail: "\n"}.String(), nil
	}
	a, err := parseGrubAssign(lines[i])
	if err != nil {
		return "", usage.Errorf("line %d, %s: %v; edit it by hand", i+1, strings.TrimSpace(lines[i]), err)
	}
	a.words = withParams(a.words, params)
	if !strings.HasSuffix(a.tail, "\n") {
		a.tail += "\n"
	}
	lines[i] = a.String()
	return strings.Join(lines, ""), nil
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
		if !it.restore {
			return nil, usage.Errorf("a whole file (%s...) is a value only tune rollback puts back from the journal", restoreFile)
		}
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
	c.Restore = &Item{Kind: it.Kind, Target: it.Target, Value: restoreFile + base64.StdEncoding.EncodeToString(old), restore: true}
	return &fileAction{sys: sys, c: c, file: file, data: data, whole: true}, nil
}

// bootSummary is what a plan shows as a boot file's value: the command
// line, or config.txt's line count.
func bootSummary(target string, b []byte) string {
	switch target {
	case "config.txt":
		return fmt.Sprintf("%d lines", strings.Count(string(b), "\n"))
	case "grub":
		lines := strings.Split(string(b), "\n")
		if i := lastGrubAssign(lines); i >= 0 {
			_, v, _ := strings.Cut(lines[i], grubKey+"=")
			return strings.TrimSpace(v)
		}
		return "no " + grubKey
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
