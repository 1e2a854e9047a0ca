package page

import (
	"encoding/json"
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"linerate/history"
	"linerate/results"
)

// baseline is a large chart's y of 0 (its height less its bottom margin).
const baseline = 220 - 28

// chartSVG is the figure of the chart titled title, or "".
func chartSVG(page, title string) string {
	i := strings.Index(page, "<title>"+html.EscapeString(title)+"</title>")
	if i < 0 {
		return ""
	}
	j := strings.Index(page[i:], "</figure>")
	return page[i : i+j]
}

var polylineRE = regexp.MustCompile(`<polyline class="line" stroke="[^"]*" points="([^"]*)"><title>([^<]*)</title>`)

// polylines are the runs of points (x, y) a chart draws for the series
// named name: more than one where the series has gaps.
func polylines(t *testing.T, fig, name string) [][][2]float64 {
	t.Helper()
	var out [][][2]float64
	for _, m := range polylineRE.FindAllStringSubmatch(fig, -1) {
		if html.UnescapeString(m[2]) != name {
			continue
		}
		var pts [][2]float64
		for _, p := range strings.Fields(m[1]) {
			x, y, _ := strings.Cut(p, ",")
			fx, err1 := strconv.ParseFloat(x, 64)
			fy, err2 := strconv.ParseFloat(y, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("point %q", p)
			}
			pts = append(pts, [2]float64{fx, fy})
		}
		out = append(out, pts)
	}
	return out
}

// The bench-udp fixture holds, at each end, a last sample taken as the run
// stopped (half a second of almost nothing after the 5 s window).
func TestChartsEndInTheWindow(t *testing.T) {
	page := fixturePage(t, "bench-udp", history.KindBench)
	contains(t, page, "1 sample(s) taken mostly outside the measured window")
	for _, end := range []string{"client", "server wan:7557"} {
		fig := chartSVG(page, end+": packets per second by interface")
		if fig == "" {
			t.Fatalf("no interface chart for %s", end)
		}
		for _, name := range []string{"router rx", "router tx"} {
			lines := polylines(t, fig, name)
			if len(lines) == 0 {
				t.Fatalf("%s: no %q line in the chart", end, name)
			}
			for _, pts := range lines {
				if len(pts) < 2 {
					t.Fatalf("%s %s: %d points, want a line", end, name, len(pts))
				}
				last, prev := pts[len(pts)-1], pts[len(pts)-2]
				// A fall to zero ends at the baseline; the window's last
				// second carries about as much as the one before it.
				if last[1] > baseline-0.3*(baseline-10) && prev[1] < baseline-0.3*(baseline-10) {
					t.Errorf("%s %s ends in a cliff: %v after %v", end, name, last, prev)
				}
			}
		}
	}
}

func TestLossLine(t *testing.T) {
	const title = "in flight (sent − received in each second) and lost (the end totals' loss, mean per second), packets per second"
	for _, c := range []struct {
		fixture string
		lossy   bool
	}{{"bench-udp", false}, {"bench-udp-1518", true}} {
		fig := chartSVG(fixturePage(t, c.fixture, history.KindBench), title)
		lines := polylines(t, fig, "lost (end totals)")
		if len(lines) != 1 {
			t.Fatalf("%s: %d lost lines", c.fixture, len(lines))
		}
		for _, p := range lines[0] {
			if zero := p[1] == baseline; zero == c.lossy || p[1] != lines[0][0][1] {
				t.Errorf("%s: lost line at %v, want flat and at zero %v: %v", c.fixture, p, !c.lossy, lines[0])
				break
			}
		}
		if len(polylines(t, fig, "in flight: sent − received")) == 0 {
			t.Errorf("%s: no in-flight line", c.fixture)
		}
	}
}

func TestUnknownIntervalIsAGap(t *testing.T) {
	r := fixture(t, "bench-udp")
	var res results.Result
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	res.Intervals[3].ReceivedUnknown = true // t = 4 s
	b, err := json.Marshal(&res)
	if err != nil {
		t.Fatal(err)
	}
	r.Result = b
	fig := chartSVG(render(t, r), "packets per second")
	if n := len(polylines(t, fig, "received")); n != 2 {
		t.Errorf("received drawn as %d lines, want 2 (a gap at 4 s)", n)
	}
	if n := len(polylines(t, fig, "sent")); n != 1 {
		t.Errorf("sent drawn as %d lines, want 1", n)
	}
}
