package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"linerate/internal/units"
	"linerate/search"
)

// Search writes the zero-loss search's table: per frame size the NDR and
// PDR in frames per second and Mb/s (whole frames), each as a share of
// the path's ceiling when known, and the trials it took.
func Search(w io.Writer, rs []search.SizeResult) error {
	ew := &ceilErrWriter{w: w}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	pdrLoss := ""
	for _, r := range rs {
		if r.PDRLoss > 0 {
			pdrLoss = " (loss ≤ " + units.Percent(r.PDRLoss, -1) + ")"
		}
	}
	fmt.Fprintf(tw, "size\tNDR pps\tMb/s\tof line\tPDR%s pps\tMb/s\tof line\ttrials\ttrial time\t\n", pdrLoss)
	share := func(pps, ceil float64) string {
		if ceil <= 0 {
			return "-"
		}
		return units.Percent(pps/ceil, 1)
	}
	for _, r := range rs {
		var secs float64
		for _, t := range r.Trials {
			secs += t.Spec.Duration.Seconds()
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%s\t%.1f\t%s\t%d\t%.1f s\t\n", r.Size,
			units.Count(r.NDRPPS), r.NDRBps/1e6, share(r.NDRPPS, r.CeilingPPS),
			units.Count(r.PDRPPS), r.PDRBps/1e6, share(r.PDRPPS, r.CeilingPPS), len(r.Trials), secs)
	}
	tw.Flush()
	return ew.err
}
