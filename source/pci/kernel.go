package pci

import (
	"bufio"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Alias is one line of modules.alias, "alias PATTERN MODULE": depmod
// writes one for each entry of a module's device table
// (MODULE_DEVICE_TABLE), PATTERN being a glob over a device's modalias
// ("pci:v00008086d0000150Esv*sd*bc*sc*i* igb").
type Alias struct {
	Pattern, Module string
}

// ParseModulesAlias reads lib/modules/RELEASE/modules.alias, keeping the
// pci: aliases. Lines that are not aliases are skipped.
func ParseModulesAlias(r io.Reader) ([]Alias, error) {
	var out []Alias
	err := eachLine(r, func(line string) {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "alias" && strings.HasPrefix(f[1], "pci:") {
			out = append(out, Alias{Pattern: f[1], Module: f[2]})
		}
	})
	return out, err
}

// eachLine calls fn with each line of r (up to 1 MiB long).
func eachLine(r io.Reader, fn func(string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fn(sc.Text())
	}
	return sc.Err()
}

// ModulesFor lists the modules whose alias matches a device's modalias,
// as modprobe would find them (fnmatch globs), each once.
func ModulesFor(aliases []Alias, modalias string) []string {
	var out []string
	for _, a := range aliases {
		if ok, err := path.Match(a.Pattern, modalias); err == nil && ok && !slices.Contains(out, a.Module) {
			out = append(out, a.Module)
		}
	}
	return out
}

// KernelEvent is a kernel log line that says a PCI function or link
// failed to come up.
type KernelEvent struct {
	// Device is what the line names: a PCI address ("0000:01:00.0") or a
	// host controller ("fd500000.pcie").
	Device string `json:"device"`
	// Kind is "bar" (a BAR could not be given address space) or "link" (a
	// PCIe link did not train or went down).
	Kind string `json:"kind"`
	Line string `json:"line"`
}

var (
	// The PCI core's messages (drivers/pci/setup-res.c, setup-bus.c):
	// "BAR 6: no space for [mem size 0x00080000 pref]", "BAR 6: failed to
	// assign [mem size ...]", "can't claim BAR 0 [mem ...]: no compatible
	// bridge window".
	barFail = regexp.MustCompile(`(?i)\bBAR \d+: (no space|failed to assign)|can't claim BAR|can't assign|\bBAR \d+: error`)
	// Host controllers and the PCIe core: the Pi 4's "brcm-pcie
	// fd500000.pcie: link down", DesignWare's "Phy link never came up",
	// "link training failed", "Link Training Error", "not ready ... after
	// FLR; giving up".
	linkFail = regexp.MustCompile(`(?i)\blink down\b|link never came up|link training (failed|error|timed out)|failed to (bring|train) link|not ready \d+ms after .*giving up`)
	// "pci 0000:01:00.0: ...", "brcm-pcie fd500000.pcie: ...", "igb
	// 0000:01:00.0: ...": the device is the second word before the colon.
	devicePrefix = regexp.MustCompile(`^(?:\[[ \d.]+\]\s*)?\S+ ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]|[0-9a-f]+\.\S+?):`)
)

// ParseKernelLog picks the PCI failures out of kernel log text (dmesg, or
// /dev/kmsg's messages one a line), in order.
func ParseKernelLog(r io.Reader) ([]KernelEvent, error) {
	var out []KernelEvent
	err := eachLine(r, func(line string) {
		line = strings.TrimSpace(line)
		kind := ""
		switch {
		case barFail.MatchString(line):
			kind = "bar"
		case linkFail.MatchString(line):
			kind = "link"
		default:
			return
		}
		ev := KernelEvent{Kind: kind, Line: line}
		if m := devicePrefix.FindStringSubmatch(line); m != nil {
			ev.Device = m[1]
		}
		out = append(out, ev)
	})
	return out, err
}
