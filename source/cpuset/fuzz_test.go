package cpuset

import (
	"slices"
	"testing"
)

// FuzzSets parses masks and lists: no panic, no set beyond MaxCPU, and a
// set that parses formats to text that parses back to it.
func FuzzSets(f *testing.F) {
	for _, s := range []string{"0", "f", "ff,ffffffff", "00000000,00000003", "0x3", "", "0-3,5", "0-63", "1,3-4", "7", "0-4000000000", ",", "3-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := ParseMask(s); err == nil {
			if len(m) > MaxCPU || (len(m) > 0 && m[len(m)-1] >= MaxCPU) {
				t.Fatalf("ParseMask(%q): %d CPUs up to %d", s, len(m), m[len(m)-1])
			}
			if back, err := ParseMask(FormatMask(m)); err != nil || !slices.Equal(back, m) {
				t.Errorf("ParseMask(%q) = %v, formats as %q, reads back as %v, %v", s, m, FormatMask(m), back, err)
			}
		}
		if l, err := ParseList(s); err == nil {
			if len(l) > MaxCPU+1 {
				t.Fatalf("ParseList(%q): %d CPUs", s, len(l))
			}
			if back, err := ParseList(FormatList(l)); err != nil || !slices.Equal(back, l) {
				t.Errorf("ParseList(%q) = %v, formats as %q, reads back as %v, %v", s, l, FormatList(l), back, err)
			}
		}
	})
}
