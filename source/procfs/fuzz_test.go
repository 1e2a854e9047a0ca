package procfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"linerate/source/tree"
)

// FuzzParsers runs every /proc parser on each input: none may panic, and
// an error names a line of the input and quotes little of it.
func FuzzParsers(f *testing.F) {
	for _, g := range []string{"testdata/vm/*", "testdata/vm/net/*", "../../testdata/captures/*/proc/*", "../../testdata/captures/*/proc/net/*"} {
		files, _ := filepath.Glob(g)
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		lines := bytes.Count(text, []byte("\n")) + 1
		check := func(name string, err error) {
			var pe *tree.ParseError
			if errors.As(err, &pe) && (pe.Line < 0 || pe.Line > lines) {
				t.Errorf("%s: %v for a text of %d lines", name, err, lines)
			}
			if err != nil && len(err.Error()) > 512 {
				t.Errorf("%s: a message of %d bytes", name, len(err.Error()))
			}
		}
		r := func() *bytes.Reader { return bytes.NewReader(text) }
		_, err := ParseStat(r())
		check("stat", err)
		in, err := ParseInterrupts(r())
		check("interrupts", err)
		if err == nil {
			for _, row := range in.Rows {
				if row.Number >= 0 && len(row.Counts) != len(in.CPUs) {
					t.Errorf("irq %d: %d counts for %d CPUs", row.Number, len(row.Counts), len(in.CPUs))
				}
			}
		}
		_, err = ParseSoftIRQs(r())
		check("softirqs", err)
		_, err = ParseSoftnet(r())
		check("softnet_stat", err)
		_, err = ParseNetDev(r())
		check("net/dev", err)
		_, err = ParseSNMP(r())
		check("net/snmp", err)
		_, err = ParseProcessStat(r())
		check("pid/stat", err)
		if v, err := ParsePeakRSS(r()); err == nil && v < 0 {
			t.Errorf("status: VmHWM %d", v)
		} else {
			check("status", err)
		}
	})
}
