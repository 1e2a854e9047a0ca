package page

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"strings"

	"linerate/internal/units"
	"linerate/plan"
)

//go:embed matrix.html
var matrixHTML string

func init() { template.Must(tmpl.New("matrix").Parse(matrixHTML)) }

// matrixView is a plan's matrix: a row per cell and the heat map.
type matrixView struct {
	Plan  string
	Cells []matrixRow
	Heat  template.HTML
	// Tune is the tune plan of an A/B matrix ("" without one).
	Tune string
}

type matrixRow struct {
	Key, Rounds, Received, Interval, Errors string
	// Change is a "tune on" cell's change from its "tune off" cell and
	// whether it is beyond the intervals; "" elsewhere.
	Change string
}

func newMatrixView(r *plan.Result) *matrixView {
	v := &matrixView{Plan: r.Plan}
	if r.Tune != nil {
		v.Tune = r.Tune.File
	}
	changes := map[*plan.CellResult]string{}
	for _, p := range plan.TunePairs(r.Matrix) {
		if p.Off != nil && p.On != nil && len(p.Off.Rounds) > 0 && len(p.On.Rounds) > 0 {
			changes[p.On] = plan.Change(p.Off.Received, p.On.Received) + ", " + plan.Beyond(p.Off.Received, p.On.Received)
		}
	}
	for i := range r.Matrix {
		c := &r.Matrix[i]
		row := matrixRow{Key: c.Key, Rounds: fmt.Sprint(len(c.Rounds)), Received: "-", Interval: "-", Errors: strings.Join(c.Errors, "; "),
			Change: changes[c]}
		if len(c.Rounds) > 0 {
			row.Received = units.Rate(c.Received.Mean, "b/s")
		}
		if c.Received.HasInterval() {
			row.Interval = "± " + units.Rate(c.Received.Half, "b/s")
		}
		v.Cells = append(v.Cells, row)
	}
	v.Heat = heatMap(plan.NewGrid(r.Matrix))
	return v
}

// Heat map geometry: a label column, then cells of cellW × cellH.
const (
	heatLabelW = 220
	heatCellW  = 110
	heatCellH  = 28
	heatHeadH  = 24
)

// heatMap draws the grid: a row per flow set, a column per variant, each
// cell coloured by its mean received rate's share of the best cell (pale
// to dark blue) with the rate written in it.
func heatMap(g *plan.Grid) template.HTML {
	w := heatLabelW + heatCellW*len(g.Cols)
	h := heatHeadH + heatCellH*len(g.Rows) + 20
	var b strings.Builder
	fmt.Fprintf(&b, `<figure class="chart heat"><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" font-size="11" font-family="sans-serif">`, w, h, w, h)
	for j, col := range g.Cols {
		x := heatLabelW + j*heatCellW + heatCellW/2
		fmt.Fprintf(&b, `<text x="%d" y="16" text-anchor="middle">%s</text>`, x, template.HTMLEscapeString(cmp.Or(col, "received")))
	}
	for i, row := range g.Rows {
		y := heatHeadH + i*heatCellH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, heatLabelW-6, y+heatCellH/2+4, template.HTMLEscapeString(row))
		for j, c := range g.At[i] {
			x := heatLabelW + j*heatCellW
			if c == nil || len(c.Rounds) == 0 {
				fmt.Fprintf(&b, `<rect class="cell none" x="%d" y="%d" width="%d" height="%d" fill="#eee" stroke="#fff"/>`, x, y, heatCellW, heatCellH)
				continue
			}
			share := g.Share(c)
			ink := "#000"
			if share > 0.55 {
				ink = "#fff"
			}
			fmt.Fprintf(&b, `<rect class="cell" x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#fff"><title>%s: %s</title></rect>`,
				x, y, heatCellW, heatCellH, heatColour(share), template.HTMLEscapeString(c.Key), units.Rate(c.Received.Mean, "b/s"))
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="%s">%s</text>`, x+heatCellW/2, y+heatCellH/2+4, ink, units.Rate(c.Received.Mean, "b/s"))
		}
	}
	fmt.Fprintf(&b, `<text x="0" y="%d">colour: total received over the best cell (%s)</text>`, h-6, units.Rate(g.Max, "b/s"))
	b.WriteString(`</svg><figcaption>received per cell, mean over its rounds</figcaption></figure>`)
	return template.HTML(b.String())
}

// heatColour runs from a pale blue (share 0) to a dark one (share 1).
func heatColour(share float64) string {
	share = max(0, min(1, share))
	return fmt.Sprintf("hsl(212, 70%%, %.0f%%)", 95-share*65)
}
