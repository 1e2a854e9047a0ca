package page

import (
	"fmt"
	"strconv"
	"time"

	"linerate/internal/units"
)

// searchRow is one frame size of a zero-loss search.
type searchRow struct {
	Size, Frame, NDR, NDRBps, PDR, PDRBps, PDRLoss, LossBegins, Ceiling, Trials string
	Latency                                                                     []string
	TrialRows                                                                   []trialLine
}

// trialLine is one trial of a search.
type trialLine struct {
	N, Phase, Purpose, Goal, Rate, Duration, Sent, Received, Loss string
	Lost                                                          bool
}

// search lays out the zero-loss search: a row, a chart of the trials' rates
// and a table of the trials per frame size.
func (v *benchView) search() {
	for i, z := range v.res.Search {
		row := searchRow{Size: z.Size, Frame: fmt.Sprintf("%.0f", z.FrameBytes), NDR: pps(z.NDRPPS), NDRBps: units.Bps(z.NDRBps),
			PDR: "-", PDRBps: "-", PDRLoss: "-", LossBegins: "-", Ceiling: "-", Trials: strconv.Itoa(len(z.Trials))}
		if z.PDRPPS > 0 {
			row.PDR, row.PDRBps, row.PDRLoss = pps(z.PDRPPS), units.Bps(z.PDRBps), pct(z.PDRLoss)
		}
		if z.LossBeginsPPS > 0 {
			row.LossBegins = pps(z.LossBeginsPPS)
		}
		if z.CeilingPPS > 0 {
			row.Ceiling = fmt.Sprintf("%s (NDR %s)", pps(z.CeilingPPS), units.Percent(z.NDRPPS/z.CeilingPPS, 1))
		}
		for _, l := range z.Latency {
			if lat := l.Result.Latency; lat != nil {
				row.Latency = append(row.Latency, fmt.Sprintf("at %s: p50 %s, p99 %s", pps(l.Spec.Rate), lat.P50, lat.P99))
			}
		}
		for n, tr := range z.Trials {
			d := tr.Spec.Duration
			if tr.Result.Seconds > 0 {
				d = time.Duration(tr.Result.Seconds * float64(time.Second))
			}
			row.TrialRows = append(row.TrialRows, trialLine{N: strconv.Itoa(n + 1), Phase: strconv.Itoa(tr.Phase), Purpose: string(tr.Purpose),
				Goal: tr.Goal, Rate: pps(tr.Spec.Rate), Duration: d.String(), Sent: count(tr.Result.Sent), Received: count(tr.Result.Received),
				Loss: pct(tr.Loss), Lost: tr.Loss > 0})
		}
		v.Search = append(v.Search, row)
		if len(z.Trials) > 0 {
			var x, y []float64
			for _, t := range z.Trials {
				x = append(x, float64(len(x)+1))
				y = append(y, t.Spec.Rate)
			}
			refs := []ref{{Y: z.NDRPPS, Label: "NDR " + SI(z.NDRPPS) + " pps"}}
			v.SearchCharts = append(v.SearchCharts, chart{Title: fmt.Sprintf("%s B: the rate of each trial, in order", z.Size), X: x,
				Series: []series{{Name: "trial rate", Color: colour(i), Y: y}}, Refs: refs, Unit: "",
				XFormat: func(f float64) string { return "#" + strconv.Itoa(int(f)) }}.Render())
		}
	}
}
