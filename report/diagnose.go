package report

import (
	"fmt"
	"io"
	"strings"

	"linerate/diagnose"
)

// Findings prints diagnose findings for a person: the most severe first,
// each with its evidence and fixes. seconds is how much sampled traffic the
// rules saw (0: configuration only).
func Findings(w io.Writer, fs []diagnose.Finding, rules int, seconds float64) {
	if seconds <= 0 {
		fmt.Fprintln(w, "note: no counter samples — only configuration was checked; rules that need traffic were skipped")
		fmt.Fprintln(w, "      (capture with --samples N while traffic runs, or use --live 10s)")
	}
	if len(fs) == 0 {
		fmt.Fprintf(w, "no bottleneck found: %d rules checked over %.0f s of samples\n", rules, seconds)
		return
	}
	count := map[diagnose.Severity]int{}
	for _, f := range fs {
		count[f.Severity]++
	}
	fmt.Fprintf(w, "%d findings (%d critical, %d warning, %d info) from %d rules over %.0f s of samples\n",
		len(fs), count[diagnose.Critical], count[diagnose.Warning], count[diagnose.Info], rules, seconds)
	for _, f := range fs {
		fmt.Fprintf(w, "\n%-8s %s  [%s]\n", strings.ToUpper(string(f.Severity)), f.Summary, f.Rule)
		for _, e := range f.Evidence {
			fmt.Fprintf(w, "         · %s\n", e)
		}
		for _, fx := range f.Fixes {
			fmt.Fprintf(w, "    fix: %s\n", fx)
		}
	}
}

// Rules lists the catalog.
func Rules(w io.Writer, rules []diagnose.Rule) {
	for _, r := range rules {
		fmt.Fprintf(w, "%-24s %s\n", r.ID(), r.Explain())
	}
}
