package page

import (
	"fmt"
	"math"
)

// comparison sets two or more runs side by side: each headline figure of
// each run, and its change from the first run.
type comparison struct {
	Runs []*section
	Rows []compareRow
}

type compareRow struct {
	Name  string
	Cells []compareCell
}

type compareCell struct {
	Value string
	// Delta is the change from the first run that has the figure; Class
	// says whether it is better or worse.
	Delta, Class string
}

func compare(ss []*section) *comparison {
	c := &comparison{Runs: ss}
	var names []string
	seen := map[string]bool{}
	for _, s := range ss {
		for _, f := range s.Figures {
			if !seen[f.Name] {
				seen[f.Name] = true
				names = append(names, f.Name)
			}
		}
	}
	for _, name := range names {
		row := compareRow{Name: name}
		var base *figure
		for _, s := range ss {
			var f *figure
			for i := range s.Figures {
				if s.Figures[i].Name == name {
					f = &s.Figures[i]
				}
			}
			cell := compareCell{Value: "-"}
			if f != nil {
				cell.Value = f.Text()
				if base == nil {
					base = f
				} else {
					cell.Delta, cell.Class = delta(*base, *f)
				}
			}
			row.Cells = append(row.Cells, cell)
		}
		c.Rows = append(c.Rows, row)
	}
	return c
}

// delta is the change from a to b in words, and whether it is better.
func delta(a, b figure) (string, string) {
	d := b.Value - a.Value
	class := "same"
	switch {
	case d > 0 && b.Higher, d < 0 && !b.Higher:
		class = "better"
	case d != 0:
		class = "worse"
	}
	switch {
	case d == 0:
		return "±0", class
	case b.Points != nil:
		return b.Points(d), class
	case a.Value == 0:
		sign := "+"
		if d < 0 {
			sign = "−"
		}
		return sign + b.Format(math.Abs(d)), class
	}
	return fmt.Sprintf("%+.1f %%", d/a.Value*100), class
}
