package page

import (
	"encoding/json"
	"html"
	"math"
	"regexp"
	"strconv"
	"testing"

	"linerate/results"
)

var bandRE = regexp.MustCompile(`<rect class="band" x="([^"]*)" y="[^"]*" width="([^"]*)" height="[^"]*"><title>([^<]*)</title>`)

// TestLinkEventsOnThePage: the bench-udp fixture with its server's link
// down from 2.5 s to 4.0 s and the run stopped early at 4.5 s lists both
// under Events and shades the down time on the per-second charts.
func TestLinkEventsOnThePage(t *testing.T) {
	r := fixture(t, "bench-udp")
	var res results.Result
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	up := 4.0
	res.LinkEvents = []results.LinkEvent{{Side: results.SideServer, Target: 0, Iface: "lrb", Why: "set down", Down: 2.5, Up: &up, Seconds: 1.5}}
	res.StoppedEarly = &results.StoppedEarly{Reason: "server wan:7557: connection reset by peer", At: 4.5, Detected: 4.7}
	b, err := json.Marshal(&res)
	if err != nil {
		t.Fatal(err)
	}
	r.Result = b
	page := render(t, r)
	const line = "link lrb (server) down 2.5 s → 4.0 s: set down"
	contains(t, page, "<h3>Events</h3>")
	contains(t, page, html.EscapeString(line))
	contains(t, page, "stopped early: the figures cover the run up to 4.5 s (noticed at 4.7 s): server wan:7557: connection reset by peer")
	for _, title := range []string{"packets per second", "bits per second"} {
		fig := chartSVG(page, title)
		m := bandRE.FindAllStringSubmatch(fig, -1)
		if len(m) != 1 {
			t.Errorf("%s: %d bands, want 1", title, len(m))
			continue
		}
		x, _ := strconv.ParseFloat(m[0][1], 64)
		w, _ := strconv.ParseFloat(m[0][2], 64)
		// The chart's X runs from 2 s to 6 s over 480 units from x 56:
		// 2.5 s → 4.0 s is 180 units from x 116.
		if html.UnescapeString(m[0][3]) != line || math.Abs(x-116) > 1 || math.Abs(w-180) > 1 {
			t.Errorf("%s: band at x %.1f, width %.1f, titled %q", title, x, w, m[0][3])
		}
	}
}
