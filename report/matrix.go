//go:build !small

package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"linerate/internal/units"
	"linerate/plan"
)

// Matrix writes a plan's matrix: a table of its cells (the mean received
// rate over the rounds with its t-based 95 % interval, the lowest and
// highest round, the cell's ceiling), the goodput through each port cell
// by cell, and a heat map, a row per flow set and a column per size, MSS
// or rate, shaded by the cell's share of the best cell.
func Matrix(w io.Writer, cells []plan.CellResult) error {
	ew := &ceilErrWriter{w: w}
	fmt.Fprintln(ew, "matrix: total received per cell, mean over its rounds ± the 95 % interval (Student's t; none with one round);")
	fmt.Fprintln(ew, "CEILING: the goodput its links carry at line rate, and what the plan's bus leaves of it")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CELL\tROUNDS\tRECEIVED\t± 95 %\tLOWEST\tHIGHEST\tCEILING\t")
	var busWhy string
	for _, c := range cells {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range c.Rounds {
			lo, hi = min(lo, r.Total.ReceivedBPS), max(hi, r.Total.ReceivedBPS)
		}
		if x := c.Expected; x != nil && x.Bus && !x.BusApplies && busWhy == "" {
			busWhy = x.Why
		}
		if len(c.Rounds) == 0 {
			fmt.Fprintf(tw, "%s\t0\t-\t\t\t\t%s\t%s\n", c.Key, cellCeiling(c.Expected), strings.Join(c.Errors, "; "))
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Key, len(c.Rounds), bps(c.Received.Mean), interval(c.Received),
			bps(lo), bps(hi), cellCeiling(c.Expected), strings.Join(c.Errors, "; "))
	}
	tw.Flush()
	if busWhy != "" {
		fmt.Fprintf(ew, "* the plan's bus does not apply here: %s; the links alone are the ceiling\n", busWhy)
	}
	fmt.Fprintln(ew)
	matrixPorts(ew, cells)
	MatrixHeat(ew, plan.NewGrid(cells))
	if len(plan.TunePairs(cells)) > 0 {
		fmt.Fprintln(ew)
		MatrixTune(ew, cells)
	}
	return ew.err
}

func bps(v float64) string { return units.Rate(v, "b/s") }

// cellCeiling is a cell's ceiling: "941.50 Mb/s", "4.71 Gb/s, 4.03 after
// the bus" (with "*" when the bus does not apply), "-" when unknown.
func cellCeiling(x *plan.CellExpected) string {
	switch {
	case x == nil || x.LineBps <= 0:
		return "-"
	case x.Bus && x.LimitedBps < x.LineBps && !x.BusApplies:
		return fmt.Sprintf("%s (%s after the bus*)", bps(x.LineBps), bps(x.LimitedBps))
	case x.Bus && x.LimitedBps < x.LineBps:
		return fmt.Sprintf("%s, %s after the bus", bps(x.LineBps), bps(x.LimitedBps))
	}
	return bps(x.LineBps)
}

// matrixPorts writes the goodput into each port cell by cell: a column
// per port (host and name) of any cell, "-" where a cell sends it
// nothing; nothing for cells of a result from before ports were kept.
func matrixPorts(w io.Writer, cells []plan.CellResult) {
	var cols []string
	for _, c := range cells {
		for _, p := range c.Ports {
			if k := portCol(p); !slices.Contains(cols, k) {
				cols = append(cols, k)
			}
		}
	}
	if len(cols) == 0 {
		return
	}
	fmt.Fprintln(w, "per port: goodput received into each port (UDP payload, TCP data), mean over the cell's rounds; at line rate in brackets")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "CELL")
	for _, k := range cols {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(k))
	}
	fmt.Fprintln(tw, "\t")
	for _, c := range cells {
		fmt.Fprint(tw, c.Key)
		for _, k := range cols {
			i := slices.IndexFunc(c.Ports, func(p plan.CellPort) bool { return portCol(p) == k })
			switch {
			case i < 0 || c.Ports[i].In.N == 0:
				fmt.Fprint(tw, "\t-")
			case c.Ports[i].ExpectedIn > 0:
				fmt.Fprintf(tw, "\t%s (%s)", bps(c.Ports[i].In.Mean), bps(c.Ports[i].ExpectedIn))
			default:
				fmt.Fprintf(tw, "\t%s", bps(c.Ports[i].In.Mean))
			}
		}
		fmt.Fprintln(tw, "\t")
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// portCol names a port's column: its host and its name (or first address).
func portCol(p plan.CellPort) string {
	name, _, _ := strings.Cut(p.Port, " ")
	return p.Host + " " + name
}

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
	var pairs []cellPair
	for i := range a {
		p := cellPair{key: a[i].Key, a: &a[i]}
		for j := range b {
			if b[j].Key == a[i].Key {
				p.b = &b[j]
			}
		}
		pairs = append(pairs, p)
	}
	for j := range b {
		if !containsKey(a, b[j].Key) {
			pairs = append(pairs, cellPair{key: b[j].Key, b: &b[j]})
		}
	}
	matched, err := writePairs(w, [2]string{"A", "B"}, [2]string{"only in A", "only in B"}, pairs)
	if err == nil && matched == 0 {
		err = fmt.Errorf("compare: the two matrices have no cell in common")
	}
	return err
}

// MatrixTune writes a matrix with a tune plan cell by cell: each cell
// without the plan and with it, the change, and whether it is beyond the
// two 95 % intervals. Nothing for a matrix without a tune plan.
func MatrixTune(w io.Writer, cells []plan.CellResult) error {
	tp := plan.TunePairs(cells)
	if len(tp) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w, "tune: each cell without the tune plan and with it"); err != nil {
		return err
	}
	pairs := make([]cellPair, len(tp))
	for i, p := range tp {
		pairs[i] = cellPair{key: p.Key, a: p.Off, b: p.On}
	}
	_, err := writePairs(w, [2]string{"TUNE OFF", "TUNE ON"}, [2]string{"not run with the tune plan", "not run without the tune plan"}, pairs)
	return err
}

// cellPair is one row of a comparison: a cell in two results, nil where
// one has none.
type cellPair struct {
	key  string
	a, b *plan.CellResult
}

// writePairs writes a row per pair under the column names: both means,
// the change and whether it is beyond the intervals, or what only says
// of a pair with one cell only; matched counts the pairs with both.
func writePairs(w io.Writer, names, only [2]string, pairs []cellPair) (matched int, err error) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "CELL\t%s\t%s\tCHANGE\t\n", names[0], names[1])
	for _, p := range pairs {
		switch {
		case p.b == nil:
			fmt.Fprintf(tw, "%s\t%s\t-\t\t%s\n", p.key, cellMean(p.a), only[0])
		case p.a == nil:
			fmt.Fprintf(tw, "%s\t-\t%s\t\t%s\n", p.key, cellMean(p.b), only[1])
		default:
			matched++
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.key, cellMean(p.a), cellMean(p.b),
				plan.Change(p.a.Received, p.b.Received), plan.Beyond(p.a.Received, p.b.Received))
		}
	}
	return matched, tw.Flush()
}

// cellMean is a cell's mean received rate, "-" for a cell that measured
// nothing.
func cellMean(c *plan.CellResult) string {
	if len(c.Rounds) == 0 && c.Received.N == 0 {
		return "-"
	}
	return bps(c.Received.Mean)
}

func containsKey(cells []plan.CellResult, key string) bool {
	for _, c := range cells {
		if c.Key == key {
			return true
		}
	}
	return false
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
