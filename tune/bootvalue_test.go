package tune

import (
	"slices"
	"strings"
	"testing"
)

// FuzzBootValue: whatever the value, an edit either is refused or changes
// only what its grammar allows: in grub's defaults the last assignment,
// double-quoted, of characters no reader treats as special; in
// cmdline.txt its one line, of the same characters; in config.txt lines
// KEY=NUMBER of the known keys (and an [all] to put them under).
func FuzzBootValue(f *testing.F) {
	for _, v := range append(hostileBootValues, "pci=pcie_bus_perf", "over_voltage=6,arm_freq=2147", "a=b=c d", "arm_freq=1,[x]") {
		f.Add(v)
	}
	grub := "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX=\"\"\n"
	f.Fuzz(func(t *testing.T, value string) {
		safe := func(s string) bool { return strings.Trim(s, paramValueChars+" ") == "" }
		if out, err := editBoot("grub", []byte(grub), value); err == nil {
			was, now := strings.SplitAfter(grub, "\n"), strings.SplitAfter(out, "\n")
			v, ok := strings.CutPrefix(now[1], grubKey+"=\"")
			if len(now) != len(was) || now[0] != was[0] || now[2] != was[2] || !ok || !strings.HasSuffix(v, "\"\n") || !safe(strings.TrimSuffix(v, "\"\n")) {
				t.Fatalf("grub, %q:\n%s", value, out)
			}
		}
		if out, err := editBoot("cmdline.txt", []byte(piCmdline), value); err == nil {
			if strings.Count(out, "\n") != 1 || !safe(strings.TrimSuffix(out, "\n")) {
				t.Fatalf("cmdline.txt, %q:\n%s", value, out)
			}
		}
		if out, err := editBoot("config.txt", []byte(piConfig), value); err == nil {
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if strings.Contains(piConfig, l+"\n") {
					continue
				}
				k, n, _ := strings.Cut(l, "=")
				if !slices.Contains(configKeys, k) || !wholeNumber(n) {
					t.Fatalf("config.txt, %q: line %q\n%s", value, l, out)
				}
			}
		}
	})
}
