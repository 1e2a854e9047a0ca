package page

import (
	"fmt"
	"math"

	"linerate/internal/units"
	"linerate/results"
)

// comparison sets two or more runs side by side: each headline figure of
// each run, and its change from the first run.
type comparison struct {
	Runs []*section
	Rows []compareRow
	// Notes say which runs were offered a different load than the first.
	Notes []string
}

type compareRow struct {
	Name  string
	Cells []compareCell
}

type compareCell struct {
	Value string
	// Load is the run's offered load, beside a loss.
	Load string
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
				cell.Value, cell.Load = f.Text(), f.Load
				if base == nil {
					base = f
				} else {
					cell.Delta, cell.Class = delta(*base, *f)
				}
				if base != f && (f.Offered || f.Load != "") {
					cell.Delta, cell.Class = c.atLoad(name, base, f, s, cell)
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
	return units.SignedPercent(d/a.Value, 1), class
}

// offeredOf is the offered-load figure of a section, if it has one.
func offeredOf(s *section) *figure {
	for i := range s.Figures {
		if s.Figures[i].Offered {
			return &s.Figures[i]
		}
	}
	return nil
}

// atLoad is the change of the offered load, or of a loss, against the
// base run: the offered load is neither better nor worse; a loss at a
// load more than results.LoadsApart from the base run's is not judged,
// and the comparison says why once.
func (c *comparison) atLoad(name string, base, f *figure, s *section, cell compareCell) (string, string) {
	if f.Offered {
		return cell.Delta, "same"
	}
	var a *figure
	for _, r := range c.Runs {
		if a = offeredOf(r); a != nil {
			break
		}
	}
	b := offeredOf(s)
	if a == nil || b == nil || !results.LoadsDiffer(a.Value, b.Value) {
		return cell.Delta, cell.Class
	}
	c.Notes = append(c.Notes, fmt.Sprintf("%s was offered %s, the first run %s (more than %s apart): its %s is not judged against it",
		s.Name, f.Load, base.Load, units.Percent(results.LoadsApart, 0), name))
	return cell.Delta + " (not judged: offered loads differ)", "apart"
}
