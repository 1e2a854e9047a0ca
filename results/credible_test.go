package results

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// Each check refuses what no honest peer reports, NaN and infinities
// included, and lets the honest figures through.
func TestDoubts(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		name  string
		check func(d *Doubts)
		want  string // "" passes
	}{
		{"received what was sent", func(d *Doubts) { d.Received("r", "bytes", 1000, 1000, 0) }, ""},
		{"received a hundredth more (duplicates)", func(d *Doubts) { d.Received("r", "datagrams", 100064+1000, 100000, 0) }, ""},
		{"received more", func(d *Doubts) { d.Received("r", "datagrams", 101065, 100000, 0) }, "r received 101065 datagrams of 100000 sent"},
		{"received the warmup's queue", func(d *Doubts) { d.Received("r", "bytes", 1500, 1000, 500) }, ""},
		{"sent less than arrived", func(d *Doubts) { d.Sent("s", "bytes", 10, 0, 1000) }, "s sent 10 bytes"},
		{"sent what arrived", func(d *Doubts) { d.Sent("s", "bytes", 1000, 0, 1000) }, ""},
		{"a rate a host moves", func(d *Doubts) { d.Rate("s", 125e9, 1e8, 10) }, ""},
		{"bits no host moves", func(d *Doubts) { d.Rate("s", 4e18, 0, 10) }, "more than a host moves"},
		{"packets no host moves", func(d *Doubts) { d.Rate("s", 0, 1e13, 1) }, "packets/s, more than a host moves"},
		{"a rate over no window", func(d *Doubts) { d.Rate("s", 4e18, 0, 0) }, ""},
		{"percent", func(d *Doubts) { d.Percent("cpu", 100, 100) }, ""},
		{"100 less idle, a hair under 0", func(d *Doubts) { d.Percent("cpu", 100-99.99999999999999-1e-14, 100) }, ""},
		{"percent below 0", func(d *Doubts) { d.Percent("cpu", -5, 100) }, "cpu -5: want 0 to 100"},
		{"percent beyond", func(d *Doubts) { d.Percent("cpu", 1e308, 100) }, "cpu 1e+308"},
		{"percent NaN", func(d *Doubts) { d.Percent("cpu", nan, 100) }, "cpu NaN"},
		{"percent Inf", func(d *Doubts) { d.Percent("cpu", inf, 100) }, "cpu +Inf"},
		{"seconds", func(d *Doubts) { d.Seconds("w", 10.2, 10) }, ""},
		{"seconds too few", func(d *Doubts) { d.Seconds("w", 1e-9, 10) }, "w 1e-09 s"},
		{"seconds NaN", func(d *Doubts) { d.Seconds("w", nan, 10) }, "w NaN s"},
		{"seconds Inf", func(d *Doubts) { d.Seconds("w", inf, 10) }, "w +Inf s"},
	} {
		var d Doubts
		c.check(&d)
		var tr TargetResult
		err := d.Mark(&tr)
		switch {
		case c.want == "" && (err != nil || tr.NotCredible != nil):
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.Is(err, ErrNotCredible) || !strings.Contains(err.Error(), c.want) || len(tr.NotCredible) != 1):
			t.Errorf("%s: %v, %q; want %q", c.name, err, tr.NotCredible, c.want)
		}
	}
}
