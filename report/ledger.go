package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"linerate/internal/units"
	"linerate/ledger"
)

// Ledger writes "where the N lost packets died": one line per host and
// place with its packets, its share of the loss and the counters that say
// so (further evidence on the lines below), then the notes.
func Ledger(w io.Writer, l ledger.Ledger) error {
	ew := &ceilErrWriter{w: w}
	if l.Lost == 0 {
		fmt.Fprintf(ew, "no packets lost (%s sent, %s received)\n", units.Count(float64(l.Sent)), units.Count(float64(l.Received)))
	} else {
		fmt.Fprintf(ew, "where the %s lost packets died (%s sent, %s received):\n",
			units.Count(float64(l.Lost)), units.Count(float64(l.Sent)), units.Count(float64(l.Received)))
	}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	for _, e := range l.Entries {
		host, side := e.Host, string(e.Side)
		if e.Place == ledger.Unaccounted {
			host, side = "", ""
		}
		share := ""
		if l.Lost > 0 {
			share = units.Percent(float64(e.Packets)/float64(l.Lost), 1)
		}
		first := ""
		if len(e.Evidence) > 0 {
			first = e.Evidence[0]
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%9s\t%6s\t%s\n", host, side, e.Place, units.Count(float64(e.Packets)), share, first)
		for _, ev := range e.Evidence[min(1, len(e.Evidence)):] {
			fmt.Fprintf(tw, "  \t\t\t\t\t%s\n", ev)
		}
	}
	tw.Flush()
	if l.Excess > 0 {
		fmt.Fprintf(ew, "  the counters place %s more than were lost\n", units.Count(float64(l.Excess)))
	}
	for _, n := range l.Notes {
		fmt.Fprintf(ew, "  note: %s\n", n)
	}
	return ew.err
}
