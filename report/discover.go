//go:build !small

package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"linerate/plan"
)

// Expansions prints what each host a plan gives through DNS (dns://,
// dns+srv://) stood for: the agents it found, each under the name the
// plan's hosts and flows then use, its address and its SRV target.
func Expansions(w io.Writer, pl *plan.Plan) error {
	for _, e := range pl.Expansions {
		fmt.Fprintf(w, "%s (%s:%d): %s gave %s\n", e.Host, pl.File, e.Line, e.At, plural(len(e.Members), "agent"))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, m := range e.Members {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", m.Name, m.At, m.Target)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(pl.Expansions) > 0 {
		_, err := fmt.Fprintln(w)
		return err
	}
	return nil
}
