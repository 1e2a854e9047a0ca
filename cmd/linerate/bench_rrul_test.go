package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"linerate/internal/usage"
	"linerate/report"
	"linerate/results"
	"linerate/wire"
)

func TestBenchRRULBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "rrul", "--to", "127.0.0.1", "--streams", "2"}, "--streams: not for bench rrul"},
		{[]string{"bench", "rrul", "--to", "127.0.0.1", "--bidir"}, "--bidir: not for bench rrul"},
		{[]string{"bench", "rrul", "--to", "127.0.0.1", "--dscp", "EF"}, "--dscp: not for bench rrul"},
		{[]string{"bench", "rrul", "--to", "127.0.0.1", "--marks", "BE,XX"}, `--marks "BE,XX"`},
		{[]string{"bench", "rrul", "--to", "127.0.0.1", "--to", "127.0.0.2"}, "tests one host"},
		{[]string{"bench", "rrul", "--to", "iperf3://127.0.0.1"}, "needs 'linerate serve'"},
		{[]string{"bench", "rrul", "--to", "127.0.0.1", "--probe-interval", "0"}, "--probe-interval 0"},
		{[]string{"bench", "rrul"}, "no target"},
	} {
		_, err := runArgs(t, c.args...)
		if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err %v, want one line of bad input saying %q", c.args, err, c.want)
		}
	}
}

// TestBenchRRUL runs bench rrul in a pair lab whose link is shaped to
// 100 Mbit/s, against b's agent: four streams each way with their marks,
// goodput in every stream each second, probes idle and under load, and
// the text output's figures.
func TestBenchRRUL(t *testing.T) {
	l := upAgentLab(t, "rl-", "pair", "--rate", "100M")
	saved := filepath.Join(t.TempDir(), "rrul.json")
	out := l.exec("a", "linerate", "bench", "rrul", "--to", "b", "-t", "3", "--warmup", "500ms", "--idle", "1s", "--no-save", "--json", "-o", saved)
	if out.code != 0 {
		t.Fatalf("bench rrul: %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	var res results.Result
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
		t.Fatalf("bench rrul --json: %v\n%s", err, out.stdout)
	}
	r := res.RRUL
	if r == nil {
		t.Fatalf("no rrul in the result:\n%s", out.stdout)
	}
	if got := res.Spec.StreamDSCP; len(got) != 4 || got[0] != 0 || got[1] != 8 || got[2] != 40 || got[3] != 46 {
		t.Errorf("marks %v, want BE, CS1, CS5, EF", got)
	}
	var marks []string
	for _, f := range r.Flows {
		marks = append(marks, flowName(f))
		if f.GoodputBPS <= 0 || len(f.OverTime) < 2 {
			t.Errorf("flow %s: goodput %.0f b/s, %d seconds of it", flowName(f), f.GoodputBPS, len(f.OverTime))
		}
	}
	if got := strings.Join(marks, " "); got != "up BE up CS1 up CS5 up EF down BE down CS1 down CS5 down EF" {
		t.Errorf("flows %s", got)
	}
	// The link carries 100 Mbit/s each way: both directions move, and
	// neither more than the link.
	t.Logf("up %.1f Mbit/s, down %.1f Mbit/s; idle %+v; under load %+v", r.UpBPS/1e6, r.DownBPS/1e6, *r.LatencyIdle, *r.LatencyLoad)
	if r.UpBPS < 10e6 || r.DownBPS < 10e6 || r.UpBPS > 110e6 || r.DownBPS > 110e6 {
		t.Errorf("goodput up %.0f, down %.0f b/s over a 100 Mbit/s link", r.UpBPS, r.DownBPS)
	}
	// A way at the cap is named: the verdict is the link, with the
	// shaper of the end that sends that way (not "cannot tell").
	sum := res.Summary
	t.Logf("limited by %q: %s", sum.LimitedBy, sum.LimitedWhy)
	if lim := sum.PathCeiling; lim != nil && lim.L2Bps > 0 {
		at := max(r.UpBPS, r.DownBPS) >= results.AtLink*lim.L2Bps*1448/1518
		if at && (sum.LimitedBy != results.LimitLink || !strings.Contains(sum.LimitedWhy, "tbf")) {
			t.Errorf("up %.1f, down %.1f Mbit/s under a 100 Mbit/s cap: limited by %q (%s), want the link naming the tbf",
				r.UpBPS/1e6, r.DownBPS/1e6, sum.LimitedBy, sum.LimitedWhy)
		}
	}
	idle, load := 0, 0
	for _, p := range r.Probes {
		if p.Idle {
			idle++
		} else {
			load++
		}
	}
	// 200 ms apart: about 5 idle and 17 under load.
	if idle < 2 || load < 8 || r.LatencyIdle == nil || r.LatencyLoad == nil || r.InducedP50 == nil {
		t.Errorf("%d idle probes, %d under load; idle %v, load %v", idle, load, r.LatencyIdle, r.LatencyLoad)
	}
	for _, st := range res.Streams {
		if st.TCP == nil || st.TCP.TOS != wire.TOS(res.Spec.StreamDSCP[st.Stream]) {
			t.Errorf("stream %d %s: TOS read back %+v", st.Stream, st.Direction, st.TCP)
		}
	}
	// The page of the saved result draws the RRUL figure and TCP over
	// time (report/page's tests open such a page in chromium).
	html := filepath.Join(t.TempDir(), "rrul.html")
	if rep := run(t, l.bin, "report", saved, "-o", html); rep.code != 0 {
		t.Fatalf("report: %d %s", rep.code, rep.stderr)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RRUL: latency under load", "goodput per stream up", "round trip of each probe", "congestion window, segments"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// flowName names a flow as the test lists them: direction and mark.
func flowName(f results.RRULFlow) string { return report.RRULDirection(f.Direction) + " " + f.Mark }
