package page

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"

	"linerate/internal/units"
)

// The charts are SVG drawn here rather than by a charting library: the
// page must work from a file with scripts off, and what it draws (time
// series, stacks, bars, a CDF) is a few hundred lines. gonum/plot draws
// SVG too, but as a file per chart with its own fonts and sizes that do
// not follow the page's.

// palette holds the series colours, chosen to stay apart for people with
// the common colour-vision deficiencies (Okabe and Ito's set).
var palette = []string{"#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#f0e442", "#000000"}

// colour is the i-th series colour.
func colour(i int) string { return palette[i%len(palette)] }

// maxPoints is the most points a series keeps on a chart (maxSmallPoints
// on a small multiple): longer ones are averaged in buckets. A chart is a
// few hundred pixels wide, so more points only make the file bigger.
const (
	maxPoints      = 300
	maxSmallPoints = 120
)

// series is one line (or one layer of a stack) of a chart. X, when set,
// replaces the chart's X for this series.
type series struct {
	Name  string
	Color string
	X, Y  []float64
}

// ref is a horizontal line across a chart: a ceiling, a noise band's edge.
type ref struct {
	Y     float64
	Label string
}

// band shades a span of a chart's X axis: a time some link of the path
// was down.
type band struct {
	From, To float64
	Label    string
}

// chart is a time series chart (or an XY chart, such as a CDF).
type chart struct {
	Title string
	// X are the abscissae (seconds), shared by the series without their
	// own.
	X      []float64
	XLabel string
	Series []series
	// Stacked draws the series as areas stacked from the first up.
	Stacked bool
	// Unit is the Y values' unit, for the tick labels ("pps", "b/s", "%").
	Unit string
	// YMax fixes the top of the Y axis (100 for a percentage); 0 fits it.
	YMax float64
	// XFormat formats the X ticks (seconds by default).
	XFormat func(float64) string
	Refs    []ref
	// Bands are spans of X shaded behind the data, each titled.
	Bands []band
	// XLog draws the X axis on a logarithmic scale (for latencies, which
	// span decades); X values must be positive.
	XLog bool
	// Small draws a small multiple: smaller, no legend.
	Small bool
	Width int
}

// geometry of a chart, in SVG user units.
type frame struct {
	w, h                     float64
	left, right, top, bottom float64
	x0, x1, y0, y1           float64
	xlog                     bool
}

func (f frame) px(x float64) float64 {
	x0, x1 := f.x0, f.x1
	if f.xlog {
		x, x0, x1 = math.Log10(math.Max(x, f.x0)), math.Log10(x0), math.Log10(x1)
	}
	if x1 == x0 {
		return f.left
	}
	return f.left + (x-x0)/(x1-x0)*(f.w-f.left-f.right)
}

func (f frame) py(y float64) float64 {
	if f.y1 == f.y0 {
		return f.h - f.bottom
	}
	return f.h - f.bottom - (y-f.y0)/(f.y1-f.y0)*(f.h-f.top-f.bottom)
}

// num formats an SVG coordinate.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// downsample averages x and y in buckets so that at most max points
// remain; NaN values (gaps) are left out of a bucket's mean.
func downsample(x, y []float64, max int) ([]float64, []float64) {
	n := min(len(x), len(y))
	if n <= max {
		return x[:n], y[:n]
	}
	k := (n + max - 1) / max
	var ox, oy []float64
	for i := 0; i < n; i += k {
		var sx, sy float64
		var cx, cy int
		for j := i; j < min(i+k, n); j++ {
			sx += x[j]
			cx++
			if !math.IsNaN(y[j]) {
				sy += y[j]
				cy++
			}
		}
		ox = append(ox, sx/float64(cx))
		if cy == 0 {
			oy = append(oy, math.NaN())
		} else {
			oy = append(oy, sy/float64(cy))
		}
	}
	return ox, oy
}

// ticks returns about n round values covering lo..hi.
func ticks(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		return []float64{lo}
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, v)
	}
	return out
}

// logTicks returns the values of 1, 2 and 5 times a power of ten within
// lo..hi (lo > 0), only the powers of ten when they are enough.
func logTicks(lo, hi float64) []float64 {
	var all, decades []float64
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
				all = append(all, v)
				if m == 1 {
					decades = append(decades, v)
				}
			}
		}
	}
	if len(decades) >= 3 {
		return decades
	}
	return all
}

// niceMax rounds a chart's top up to a round value.
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	t := ticks(0, v, 4)
	step := v / 4
	if len(t) > 1 {
		step = t[1] - t[0]
	}
	return math.Ceil(v/step-1e-9) * step
}

func seconds(v float64) string { return SI(v) + "s" }

// SI is a figure as the page writes it, with a k, M, G or T prefix and at
// most two decimals ("1.49M", "940k", "12"): what a test looks for on a
// page.
func SI(v float64) string { return units.Trim(2).Format(v) }

// Render draws the chart as an inline SVG in a figure with its title and
// legend.
func (c chart) Render() template.HTML {
	f := frame{w: 550, h: 220, left: 56, right: 14, top: 10, bottom: 28}
	if c.Width > 0 {
		f.w = float64(c.Width)
	}
	if c.Small {
		f = frame{w: 270, h: 120, left: 40, right: 6, top: 6, bottom: 22}
	}
	// The points to draw, downsampled, and the stack's running sums.
	type line struct {
		s    series
		x, y []float64
		base []float64
	}
	var lines []line
	var cum []float64
	limit := maxPoints
	if c.Small {
		limit = maxSmallPoints
	}
	f.x0, f.x1 = math.Inf(1), math.Inf(-1)
	ymax := 0.0
	for _, s := range c.Series {
		x := s.X
		if x == nil {
			x = c.X
		}
		dx, dy := downsample(x, s.Y, limit)
		l := line{s: s, x: dx, y: dy}
		if c.Stacked {
			if cum == nil {
				cum = make([]float64, len(dy))
			}
			l.base = append([]float64(nil), cum[:min(len(cum), len(dy))]...)
			l.y = make([]float64, len(dy))
			for i, v := range dy {
				if i < len(cum) {
					if !math.IsNaN(v) {
						cum[i] += v
					}
					l.y[i] = cum[i]
				}
			}
		}
		for i, v := range l.x {
			f.x0, f.x1 = math.Min(f.x0, v), math.Max(f.x1, v)
			if y := l.y[i]; !math.IsNaN(y) {
				ymax = math.Max(ymax, y)
			}
		}
		lines = append(lines, l)
	}
	for _, r := range c.Refs {
		ymax = math.Max(ymax, r.Y)
	}
	if math.IsInf(f.x0, 0) {
		f.x0, f.x1 = 0, 1
	}
	if c.XLog {
		f.xlog = true
		f.x0 = math.Max(f.x0, 1e-3)
		// Whole decades, or the 1-2-5 values around the data.
		f.x0 = math.Pow(10, math.Floor(math.Log10(f.x0)))
		f.x1 = math.Pow(10, math.Ceil(math.Log10(math.Max(f.x1, f.x0*10))))
	}
	f.y0, f.y1 = 0, niceMax(ymax*1.04)
	if c.YMax > 0 {
		f.y1 = c.YMax
	}
	xfmt := c.XFormat
	if xfmt == nil {
		xfmt = seconds
	}

	var b strings.Builder
	cls := "chart"
	if c.Small {
		cls += " small"
	}
	fmt.Fprintf(&b, `<figure class="%s"><svg viewBox="0 0 %s %s" width="%s" height="%s" role="img" xmlns="http://www.w3.org/2000/svg"><title>%s</title>`,
		cls, num(f.w), num(f.h), num(f.w), num(f.h), html.EscapeString(c.Title))
	// Grid and axes.
	nt := 4
	if c.Small {
		nt = 2
	}
	for _, t := range ticks(f.y0, f.y1, nt) {
		y := f.py(t)
		fmt.Fprintf(&b, `<line class="grid" x1="%s" x2="%s" y1="%s" y2="%s"/>`, num(f.left), num(f.w-f.right), num(y), num(y))
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`, num(f.left-4), num(y+3.5), html.EscapeString(SI(t)+c.Unit))
	}
	xt := 6
	if c.Small {
		xt = 3
	}
	xticks := ticks(f.x0, f.x1, xt)
	if f.xlog {
		xticks = logTicks(f.x0, f.x1)
	}
	for _, t := range xticks {
		x := f.px(t)
		fmt.Fprintf(&b, `<line class="tickmark" x1="%s" x2="%s" y1="%s" y2="%s"/>`, num(x), num(x), num(f.h-f.bottom), num(f.h-f.bottom+4))
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`, num(x), num(f.h-f.bottom+15), html.EscapeString(xfmt(t)))
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%s" x2="%s" y1="%s" y2="%s"/>`, num(f.left), num(f.w-f.right), num(f.h-f.bottom), num(f.h-f.bottom))
	for _, bd := range c.Bands {
		x0, x1 := f.px(math.Max(bd.From, f.x0)), f.px(math.Min(bd.To, f.x1))
		if x1 <= x0 {
			continue
		}
		fmt.Fprintf(&b, `<rect class="band" x="%s" y="%s" width="%s" height="%s"><title>%s</title></rect>`,
			num(x0), num(f.top), num(x1-x0), num(f.h-f.top-f.bottom), html.EscapeString(bd.Label))
	}
	// Data.
	for _, l := range lines {
		if c.Stacked {
			b.WriteString(area(f, l.x, l.y, l.base, l.s.Color, l.s.Name))
			continue
		}
		b.WriteString(polyline(f, l.x, l.y, l.s.Color, l.s.Name))
	}
	for _, r := range c.Refs {
		y := f.py(r.Y)
		fmt.Fprintf(&b, `<line class="ref" x1="%s" x2="%s" y1="%s" y2="%s"/>`, num(f.left), num(f.w-f.right), num(y), num(y))
		fmt.Fprintf(&b, `<text class="reflabel" x="%s" y="%s" text-anchor="end">%s</text>`, num(f.w-f.right-2), num(y-3), html.EscapeString(r.Label))
	}
	b.WriteString(`</svg>`)
	fmt.Fprintf(&b, `<figcaption><span class="ctitle">%s</span>`, html.EscapeString(c.Title))
	if len(c.Series) > 1 && !c.Small {
		b.WriteString(legend(c.Series))
	}
	b.WriteString(`</figcaption></figure>`)
	return template.HTML(b.String())
}

// legend is the series' names beside their colours.
func legend(ss []series) string {
	var b strings.Builder
	b.WriteString(`<span class="legend">`)
	for _, s := range ss {
		fmt.Fprintf(&b, `<span class="key"><svg width="12" height="12" xmlns="http://www.w3.org/2000/svg"><rect width="12" height="12" fill="%s"/></svg>%s</span>`,
			html.EscapeString(s.Color), html.EscapeString(s.Name))
	}
	b.WriteString(`</span>`)
	return b.String()
}

// polyline draws a series as lines, broken where a value is missing.
func polyline(f frame, x, y []float64, color, name string) string {
	var b strings.Builder
	var pts []string
	flush := func() {
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline class="line" stroke="%s" points="%s"><title>%s</title></polyline>`,
				html.EscapeString(color), strings.Join(pts, " "), html.EscapeString(name))
		}
		pts = pts[:0]
	}
	for i := range x {
		if math.IsNaN(y[i]) {
			flush()
			continue
		}
		pts = append(pts, num(f.px(x[i]))+","+num(f.py(y[i])))
	}
	flush()
	return b.String()
}

// area draws a stack layer between base and y.
func area(f frame, x, y, base []float64, color, name string) string {
	if len(x) == 0 {
		return ""
	}
	var pts []string
	for i := range x {
		pts = append(pts, num(f.px(x[i]))+","+num(f.py(y[i])))
	}
	for i := len(x) - 1; i >= 0; i-- {
		b := 0.0
		if i < len(base) {
			b = base[i]
		}
		pts = append(pts, num(f.px(x[i]))+","+num(f.py(b)))
	}
	return fmt.Sprintf(`<polygon class="area" fill="%s" points="%s"><title>%s</title></polygon>`,
		html.EscapeString(color), strings.Join(pts, " "), html.EscapeString(name))
}

// bars is a stacked bar chart: one bar per category, one layer per series
// (Series[i].Y[j] is series i's value in category j).
type bars struct {
	Title      string
	Categories []string
	Series     []series
	Unit       string
	// YMax fixes the top of the Y axis (100 for a percentage); 0 fits it.
	YMax float64
}

// Render draws the bars as an inline SVG in a figure.
func (c bars) Render() template.HTML {
	f := frame{w: 550, h: 220, left: 56, right: 14, top: 10, bottom: 28}
	n := len(c.Categories)
	totals := make([]float64, n)
	for _, s := range c.Series {
		for j := 0; j < n && j < len(s.Y); j++ {
			totals[j] += s.Y[j]
		}
	}
	top := 0.0
	for _, t := range totals {
		top = math.Max(top, t)
	}
	f.x0, f.x1 = 0, float64(max(n, 1))
	f.y0, f.y1 = 0, niceMax(top*1.04)
	if c.YMax > 0 {
		f.y1 = math.Max(c.YMax, top)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<figure class="chart"><svg viewBox="0 0 %s %s" width="%s" height="%s" role="img" xmlns="http://www.w3.org/2000/svg"><title>%s</title>`,
		num(f.w), num(f.h), num(f.w), num(f.h), html.EscapeString(c.Title))
	for _, t := range ticks(f.y0, f.y1, 4) {
		y := f.py(t)
		fmt.Fprintf(&b, `<line class="grid" x1="%s" x2="%s" y1="%s" y2="%s"/>`, num(f.left), num(f.w-f.right), num(y), num(y))
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`, num(f.left-4), num(y+3.5), html.EscapeString(SI(t)+c.Unit))
	}
	slot := (f.w - f.left - f.right) / float64(max(n, 1))
	bw := math.Max(1, slot*0.7)
	every := max(1, n/24) // label at most about 24 categories
	for j, cat := range c.Categories {
		x := f.px(float64(j)) + (slot-bw)/2
		base := 0.0
		for _, s := range c.Series {
			if j >= len(s.Y) || s.Y[j] <= 0 {
				continue
			}
			y0, y1 := f.py(base), f.py(base+s.Y[j])
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s %s: %s%s</title></rect>`,
				num(x), num(y1), num(bw), num(y0-y1), html.EscapeString(s.Color), html.EscapeString(cat), html.EscapeString(s.Name),
				html.EscapeString(SI(s.Y[j])), html.EscapeString(c.Unit))
			base += s.Y[j]
		}
		if j%every == 0 {
			fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`, num(x+bw/2), num(f.h-f.bottom+15), html.EscapeString(cat))
		}
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%s" x2="%s" y1="%s" y2="%s"/>`, num(f.left), num(f.w-f.right), num(f.h-f.bottom), num(f.h-f.bottom))
	b.WriteString(`</svg>`)
	fmt.Fprintf(&b, `<figcaption><span class="ctitle">%s</span>`, html.EscapeString(c.Title))
	if len(c.Series) > 1 {
		b.WriteString(legend(c.Series))
	}
	b.WriteString(`</figcaption></figure>`)
	return template.HTML(b.String())
}
