package tune

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"linerate/diagnose"
	"linerate/internal/usage"
)

// Boot-level items and other advice are printed as the exact edit to make
// (seed 001: pci=pcie_bus_perf before rootwait in /boot/cmdline.txt;
// over_voltage=6 and arm_freq=2000 in /boot/config.txt), unless the system
// is opened for boot edits (bootedit.go): a wrong kernel command line or
// firmware setting can leave a box that does not boot, and linerate cannot
// undo it from there. Either way a value is read by its file's grammar
// first (bootvalue.go).

func init() {
	builders[diagnose.FixBoot] = buildBoot
	builders[diagnose.FixBench] = buildManual
}

// adviceAction is a Change that Apply refuses to make.
type adviceAction struct{ c Change }

func (a *adviceAction) Describe() Change { return a.c }

func (a *adviceAction) Apply(context.Context) (Undo, error) {
	return nil, fmt.Errorf("%s %s is not applied by linerate: %s", a.c.Kind, a.c.Target, a.c.Advice)
}

// firstFile returns the first of names that exists on sys, else the last.
func firstFile(sys System, names ...string) (string, []byte) {
	for _, n := range names {
		if b, err := sys.ReadFile(n); err == nil {
			return n, b
		}
	}
	return names[len(names)-1], nil
}

// buildBoot: target cmdline.txt (kernel parameters) or config.txt
// (Raspberry Pi firmware lines); any other target is advice in words
// ("hardware", "cable").
func buildBoot(sys System, it Item) ([]Action, error) {
	if it.Value == "" {
		return nil, usage.Errorf("empty value")
	}
	if strings.HasPrefix(it.Value, restoreFile) {
		if err := hostWide(sys, "boot files are the host's"); err != nil {
			return nil, err
		}
		return buildBootEdit(sys, it)
	}
	if err := checkBootValue(it.Target, it.Value); err != nil {
		return nil, err
	}
	if bootEdits(sys) && (it.Target == "cmdline.txt" || it.Target == "config.txt" || it.Target == "grub") {
		if err := hostWide(sys, "boot files are the host's"); err != nil {
			return nil, err
		}
		return buildBootEdit(sys, it)
	}
	c := Change{Kind: it.Kind, Target: it.Target, To: it.Value, Note: it.Note, Boot: true, Manual: true}
	switch it.Target {
	case "cmdline.txt":
		// Raspberry Pi OS Bookworm moved the boot partition to /boot/firmware.
		file, text := firstFile(sys, "boot/firmware/cmdline.txt", "boot/cmdline.txt")
		params := strings.Fields(it.Value)
		running, _ := readTrim(sys, "proc/cmdline")
		have := strings.Fields(running)
		var missing []string
		for _, p := range params {
			if !slices.Contains(have, p) {
				missing = append(missing, p)
			}
		}
		c.From = "not on the running kernel's command line"
		if len(missing) == 0 && running != "" {
			c.From, c.Unchanged = "on the running kernel's command line", true
		}
		where := "before rootwait"
		if text != nil && !slices.Contains(strings.Fields(string(text)), "rootwait") {
			where = "at the end of the line"
		}
		c.Advice = fmt.Sprintf("add %s %s in %s (it is a single line), then reboot",
			strings.Join(params, " "), where, display(file))
	case "config.txt":
		file, text := firstFile(sys, "boot/firmware/config.txt", "boot/config.txt")
		lines, keys, err := configLines(it.Value)
		if err != nil {
			return nil, err
		}
		var cur []string
		for _, key := range keys {
			for _, have := range strings.Split(string(text), "\n") {
				if k, _, ok := strings.Cut(strings.TrimSpace(have), "="); ok && k == key {
					cur = append(cur, strings.TrimSpace(have))
				}
			}
		}
		c.From = "not set"
		if len(cur) > 0 {
			c.From = strings.Join(cur, ",")
		}
		c.Unchanged = c.From == strings.Join(lines, ",")
		c.Advice = fmt.Sprintf("add these lines under [all] in %s, then reboot: %s",
			display(file), strings.Join(lines, "  "))
	default:
		c.From = "-"
		c.Advice = it.Value
		if it.Note != "" {
			c.Advice += " (" + it.Note + ")"
		}
	}
	return []Action{&adviceAction{c: c}}, nil
}

// buildManual: advice for the person running the measurement (diagnose's
// "bench" fixes), not a change to the box.
func buildManual(sys System, it Item) ([]Action, error) {
	c := Change{Kind: it.Kind, Target: it.Target, From: "-", To: it.Value, Note: it.Note, Manual: true,
		Advice: it.Value}
	return []Action{&adviceAction{c: c}}, nil
}
