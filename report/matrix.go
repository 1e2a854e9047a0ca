package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"linerate/internal/units"
	"linerate/plan"
)

// Matrix writes a plan's matrix: a table of its cells (the mean received
// rate over the rounds with its t-based 95 % interval, the lowest and
// highest round) and a heat map, a row per flow set and a column per size,
// MSS or rate, shaded by the cell's share of the best cell.
func Matrix(w io.Writer, cells []plan.CellResult) error {
	ew := &ceilErrWriter{w: w}
	fmt.Fprintln(ew, "matrix: total received per cell, mean over its rounds ± the 95 % interval (Student's t; none with one round)")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CELL\tROUNDS\tRECEIVED\t± 95 %\tLOWEST\tHIGHEST\t")
	for _, c := range cells {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range c.Rounds {
			lo, hi = min(lo, r.Total.ReceivedBPS), max(hi, r.Total.ReceivedBPS)
		}
		if len(c.Rounds) == 0 {
			fmt.Fprintf(tw, "%s\t0\t-\t\t\t\t%s\n", c.Key, strings.Join(c.Errors, "; "))
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", c.Key, len(c.Rounds), bps(c.Received.Mean), interval(c.Received),
			bps(lo), bps(hi), strings.Join(c.Errors, "; "))
	}
	tw.Flush()
	fmt.Fprintln(ew)
	MatrixHeat(ew, plan.NewGrid(cells))
	return ew.err
}

func bps(v float64) string { return units.Rate(v, "b/s") }

// interval is an estimate's half-width, "-" without one.
func interval(e plan.Estimate) string {
	if !e.HasInterval() {
		return "-"
	}
	return bps(e.Half)
}

// shades run from the lowest share of the best cell to the highest.
var shades = []rune(" ░▒▓█")

// shade is the block for a share of 0 to 1.
func shade(share float64) string {
	i := int(share * float64(len(shades)-1))
	return strings.Repeat(string(shades[max(0, min(i, len(shades)-1))]), 2)
}

// MatrixHeat writes the grid as a heat map in text: each cell's mean
// received rate behind a block shaded by its share of the best cell.
func MatrixHeat(w io.Writer, g *plan.Grid) {
	fmt.Fprintf(w, "heat map: received, shaded by the share of the best cell (%s = %s)\n", shade(1), bps(g.Max))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "SET")
	for _, c := range g.Cols {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(cmp.Or(c, "received")))
	}
	fmt.Fprintln(tw, "\t")
	for r, row := range g.Rows {
		fmt.Fprint(tw, row)
		for _, c := range g.At[r] {
			if c == nil || len(c.Rounds) == 0 {
				fmt.Fprint(tw, "\t  -")
				continue
			}
			fmt.Fprintf(tw, "\t%s %s", shade(g.Share(c)), bps(c.Received.Mean))
		}
		fmt.Fprintln(tw, "\t")
	}
	tw.Flush()
}

// MatrixCompare writes two matrices cell by cell (cells of the same key):
// each one's mean, the change, and whether the change is beyond both
// cells' 95 % intervals taken together.
func MatrixCompare(w io.Writer, a, b []plan.CellResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CELL\tA\tB\tCHANGE\t")
	matched := 0
	for _, x := range a {
		var y *plan.CellResult
		for i := range b {
			if b[i].Key == x.Key {
				y = &b[i]
			}
		}
		if y == nil {
			fmt.Fprintf(tw, "%s\t%s\t-\t\tonly in A\n", x.Key, bps(x.Received.Mean))
			continue
		}
		matched++
		change := "-"
		if x.Received.Mean > 0 {
			change = fmt.Sprintf("%+.1f %%", (y.Received.Mean-x.Received.Mean)/x.Received.Mean*100)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", x.Key, bps(x.Received.Mean), bps(y.Received.Mean), change, beyond(x.Received, y.Received))
	}
	for _, y := range b {
		if !containsKey(a, y.Key) {
			fmt.Fprintf(tw, "%s\t-\t%s\t\tonly in B\n", y.Key, bps(y.Received.Mean))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if matched == 0 {
		return fmt.Errorf("compare: the two matrices have no cell in common")
	}
	return nil
}

func containsKey(cells []plan.CellResult, key string) bool {
	for _, c := range cells {
		if c.Key == key {
			return true
		}
	}
	return false
}

// beyond judges a change between two estimates: beyond the noise when the
// means are further apart than the two 95 % half-widths added.
func beyond(a, b plan.Estimate) string {
	if !a.HasInterval() || !b.HasInterval() {
		return "not judged: one round (no interval)"
	}
	d := b.Mean - a.Mean
	switch {
	case math.Abs(d) <= a.Half+b.Half:
		return "within the intervals"
	case d > 0:
		return "higher, beyond the intervals"
	}
	return "lower, beyond the intervals"
}

// MatrixPlan writes what a plan's matrix will run (run --check): how many
// cells, rounds and the time it takes, and each cell's key.
func MatrixPlan(w io.Writer, pl *plan.Plan) error {
	cells := pl.Matrix.Cells()
	each := pl.Duration + pl.Warmup
	total := time.Duration(len(cells)*pl.Matrix.Rounds) * each
	_, err := fmt.Fprintf(w, "\nmatrix: %d cells, %d rounds each of %s after a %s warmup: at least %s in all\n", len(cells), pl.Matrix.Rounds, pl.Duration, pl.Warmup, total)
	for i, c := range cells {
		if _, err := fmt.Fprintf(w, "  %3d  %s\n", i+1, c.Key); err != nil {
			return err
		}
	}
	return err
}
