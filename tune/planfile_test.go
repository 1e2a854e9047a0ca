package tune

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"linerate/internal/jsonbudget"
	"linerate/internal/usage"
)

// Findings and plan files are read within jsonbudget's budget: an array
// of a million empty findings or items (3 MB, several hundred MB once
// decoded) is bad input naming where, with little allocated.
func TestTuneFilesBounded(t *testing.T) {
	empty := strings.TrimSuffix(strings.Repeat("{},", 1_000_000), ",")
	for _, tc := range []struct {
		name, text, at string
		read           func(string) error
	}{
		{"findings", "[" + empty + "]", "[", func(s string) error { _, err := ReadFindings(strings.NewReader(s)); return err }},
		{"findings object", `{"findings":[` + empty + "]}", "findings[", func(s string) error { _, err := ReadFindings(strings.NewReader(s)); return err }},
		{"plan", `{"schema":1,"items":[` + empty + "]}", "items[", func(s string) error { _, err := ReadPlanFile(strings.NewReader(s)); return err }},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := tc.read(tc.text)
		runtime.ReadMemStats(&after)
		var be *jsonbudget.Error
		if !errors.As(err, &be) || !usage.Is(err) || !strings.HasPrefix(be.Path, tc.at) {
			t.Errorf("%s: %v, want bad input over budget at %s...", tc.name, err, tc.at)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
			t.Errorf("%s: %d MiB allocated to refuse %d MB", tc.name, got>>20, len(tc.text)>>20)
		}
	}
}
