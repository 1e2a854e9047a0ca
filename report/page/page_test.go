package page

import (
	"bytes"
	"encoding/json"
	"html"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"linerate/history"
	"linerate/plan"
	"linerate/results"
)

// svgNS is the one URL a page may hold: the SVG namespace, a name and not
// a place anything is fetched from.
const svgNS = "http://www.w3.org/2000/svg"

// checkOffline fails when the page refers to anything outside itself.
func checkOffline(t *testing.T, page string) {
	t.Helper()
	rest := strings.ReplaceAll(page, `xmlns="`+svgNS+`"`, "")
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)https?://`),
		regexp.MustCompile(`(?i)\b(src|href)\s*=\s*"(?:[^"#]|$)`),
		regexp.MustCompile(`(?i)@import|url\(`),
		regexp.MustCompile(`(?i)//[a-z0-9.-]+\.[a-z]{2,}/`),
	} {
		if m := re.FindString(rest); m != "" {
			i := strings.Index(rest, m)
			t.Errorf("the page refers outside itself: %q in …%s…", m, rest[max(0, i-80):min(len(rest), i+80)])
		}
	}
}

// readRun reads a result file as the report command does.
func readRun(t *testing.T, path string) *history.Run {
	t.Helper()
	r, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func render(t *testing.T, runs ...*history.Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, runs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// fixture reads a real result of testdata (README.md there says how each
// was made).
func fixture(t *testing.T, name string) *history.Run {
	t.Helper()
	return readRun(t, filepath.Join("testdata", name+".json.gz"))
}

// contains fails for each string the page lacks.
func contains(t *testing.T, page string, want ...string) {
	t.Helper()
	text := html.UnescapeString(page)
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the page lacks %q", w)
		}
	}
}

// charts counts the page's charts.
func charts(page string) int { return strings.Count(page, `<figure class="chart`) }

func TestBenchUDP(t *testing.T) {
	r := fixture(t, "bench-udp")
	if r.Kind != history.KindBench {
		t.Fatalf("kind %q", r.Kind)
	}
	page := render(t, r)
	checkOffline(t, page)
	contains(t, page,
		// Headline: 600,704 packets in 5 s, against tbf's 416,667 pps.
		"120.14k pps", "61.5 Mb/s", "28.8 % of the ceiling", "tbf 1: 200M", "0.000 %",
		// Per second, per target and direction.
		"packets per second", "bits per second", `<td class="l">wan:7557</td><td class="l">forward</td>`,
		// Latency, idle and loaded, and its CDF.
		"0.234 ms", "9.174 ms", "28.359 ms", "round trip of the probes",
		// Both ends: interfaces, per-CPU stacks, interrupts, NET_RX.
		"client: packets per second by interface", "server wan:7557: packets per second by interface",
		"client cpu0", "client cpu1", "server wan:7557 cpu0", "server wan:7557 cpu1", "usr", "softirq",
		"client: interrupts per second per CPU", "server wan:7557: NET_RX softirqs per second per CPU",
		// The ledger of a run without loss.
		"no packets lost (600,704 sent, 600,704 received)",
		// Recorded before the process was measured: the machine's, said so.
		"client machine CPU", "CPU-s busy", "every CPU of the machine, whatever ran on it")
	if strings.Contains(page, "linerate process CPU") || strings.Contains(page, "s/Mpkt") {
		t.Error("a result without the process's CPU shows a cost per Mpkt")
	}
	// Rates (3), CDF, and per end: 2 traffic, mean CPU, 2 CPUs, IRQs, NET_RX.
	if n := charts(page); n < 4+2*7 {
		t.Errorf("%d charts", n)
	}
}

func TestBenchQueues(t *testing.T) {
	page := fixturePage(t, "bench-udp-flows", history.KindBench)
	contains(t, page, "1 ports × 8 streams", "Receive queues", "b:7557: a (counted by xdp)",
		"<td>0</td><td>34,359</td><td>25.0 %</td>", `<td>1</td><td class="bad">0</td><td>0.0 %</td>`, "<td>2</td><td>51,600</td><td>37.5 %</td>")
	// A run of one flow without --xdp on a veth says nothing of queues.
	if strings.Contains(render(t, fixture(t, "bench-udp-1thread")), "Receive queues") {
		t.Errorf("a page without queue counts has a Receive queues section")
	}
}

// fixturePage renders one fixture, checking its kind and that the page
// refers to nothing outside itself.
func fixturePage(t *testing.T, name, kind string) string {
	t.Helper()
	r := fixture(t, name)
	if r.Kind != kind {
		t.Fatalf("%s: kind %q, want %q", name, r.Kind, kind)
	}
	page := render(t, r)
	checkOffline(t, page)
	return page
}

func TestBenchLoss(t *testing.T) {
	page := fixturePage(t, "bench-udp-1518", history.KindBench)
	contains(t, page, "92.687 %", "1,046,284 of 1,128,832 packets", "Limited by link",
		"where the 1,046,284 lost packets died", "sender-qdisc", "99.9 %", "tbf 1: on router: 1045427 dropped",
		"router qdisc tbf", "1,045,427", "card bad")
}

func TestBenchTCP(t *testing.T) {
	page := fixturePage(t, "bench-tcp-bidir", history.KindBench)
	contains(t, page, "tcp bidir", "goodput", "381.9 Mb/s", "server machine CPU", "retransmits", ">reverse<", ">forward<")
}

// TestBenchCPUWhose: the cost per Mpkt (per Gbit for TCP, per million
// transactions for a transaction test) on the page is linerate's
// process's, and the machine's busy time is a card of its own.
func TestBenchCPUWhose(t *testing.T) {
	for _, c := range []struct{ fixture, cost string }{{"bench-udp", "15.000 s/Mpkt"}, {"bench-tcp-bidir", "2.500 s/Gbit"}, {"bench-rr-connect", "15.000 s/M transactions"}} {
		r := fixture(t, c.fixture)
		var res results.Result
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatal(err)
		}
		f := func(v float64) *float64 { return &v }
		s := &res.Summary
		s.ProcessCPUSeconds = results.CPUCost{Client: f(0.45), Server: f(0.5)}
		s.ProcessCPUSecondsPerMpkt = results.CPUCost{Client: f(15), Server: f(16)}
		s.ProcessCPUSecondsPerGbit = results.CPUCost{Client: f(2.5), Server: f(2.6)}
		s.MachineCPUBusy = results.CPUCost{Client: f(0.347)}
		s.CPUSeconds.Client = f(6.94)
		if res.RR != nil {
			s.ProcessCPUSecondsPerGbit = results.CPUCost{}
		}
		b, err := json.Marshal(&res)
		if err != nil {
			t.Fatal(err)
		}
		r.Result = b
		contains(t, render(t, r), "client linerate process CPU", c.cost, "0.45 CPU-seconds", "client machine CPU", "34.7 % of its CPUs")
	}
}

// TestBenchRRUL: an RRUL result's page has flent's figure (the latency
// idle, under load and induced, the goodput each way and per stream with
// its mark, both over time) and each stream's TCP_INFO over time; a TCP
// result from before the samples has neither.
func TestBenchRRUL(t *testing.T) {
	page := fixturePage(t, "bench-rrul", history.KindBench)
	contains(t, page, "RRUL: latency under load", "latency the load induced, p50", "+19.279 ms", "p95 +30.032 ms",
		"0.174 ms", "19.453 ms", "94.4 Mb/s", "95 Mb/s", "4 streams, client → server", ">CS5 (40)<", ">EF (46)<", ">BE (0)<",
		"goodput per stream up (client → server)", "goodput per stream down (server → client)", "goodput up and down",
		"round trip of each probe", "idle p50 0.174 ms", "TCP over time", "congestion window, segments", "smoothed RTT, ms",
		"retransmitted segments in each second", "pacing rate, bits per second", "up 2 CS5", "down 3 EF")
	// 4 RRUL charts and 4 of TCP over time, a line per stream in each.
	if n := strings.Count(page, `<title>up 0 BE</title>`); n != 4 {
		t.Errorf("%d lines of stream up 0 BE in the TCP charts, want 4", n)
	}
	// Side by side with itself: the RRUL figures are compared too.
	twice := render(t, fixture(t, "bench-rrul"), fixture(t, "bench-rrul"))
	contains(t, twice, "latency induced by the load, p50", "latency induced by the load, p95", "goodput up", "goodput down")
	old := fixturePage(t, "bench-tcp-bidir", history.KindBench)
	for _, s := range []string{"RRUL", "TCP over time"} {
		if strings.Contains(old, s) {
			t.Errorf("a TCP result without rrul or samples over time has %q", s)
		}
	}
}

func TestSearch(t *testing.T) {
	page := fixturePage(t, "search", history.KindSearch)
	contains(t, page, "Zero-loss search", "NDR 1518 B", "16.71k pps", "16.51k pps (NDR 101.2 %)", "at 1.67k pps: p50 129µs, p99 397µs",
		"the rate of each trial", "the 11 trials of 1518 B", "max-rate", "7.345 %", "zero-loss search: udp forward, 2 ports")

	// A size's notes (a trial run again after a link cut, an NDR over the
	// ceiling) are among the page's notes, named by size.
	r := fixture(t, "search")
	var res results.Result
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Search) == 0 {
		t.Fatalf("search fixture: %v", err)
	}
	res.Search[0].Notes = append(res.Search[0].Notes, "the trial at 16.6k pps for 1s (try 1 of 3): client's lra was down (set down) from 0.2 s to 0.4 s (0.2 s): its loss was the cut's, so it ran again")
	var err error
	if r.Result, err = json.Marshal(&res); err != nil {
		t.Fatal(err)
	}
	contains(t, render(t, r), "1518 B: the trial at 16.6k pps for 1s (try 1 of 3): client's lra was down")
}

func TestDiagnose(t *testing.T) {
	page := fixturePage(t, "diagnose", history.KindDiagnose)
	contains(t, page, "1 findings (0 critical, 1 warning, 0 info) from 18 rules", "qdisc-drop", "sev-warning",
		"the shaper tbf 1: on router (200 Mb/s) drops")
}

func TestTuneAuto(t *testing.T) {
	page := fixturePage(t, "tune-auto", history.KindTuneAuto)
	contains(t, page, "rps lan/rx-0", "feature lan/generic-receive-offload", "rolled back", "+37.6 %", "± 39.3 %",
		"+37.6 % is within the noise (39.3 %)", "kept nothing", "Before and after", "with the change")
	if charts(page) != 1 {
		t.Errorf("%d charts, want the rounds' chart", charts(page))
	}
	if strings.Contains(page, "Dry run") {
		t.Error("a run that tried changes shown as a dry run")
	}
}

// Two runs: side by side with the deltas, then each run's section.
func TestSideBySide(t *testing.T) {
	before, after := fixture(t, "bench-udp"), fixture(t, "bench-udp-1thread")
	page := render(t, before, after, fixture(t, "tune-auto"))
	checkOffline(t, page)
	// 120,140.8 → 107,673.6 received pps.
	contains(t, page, "Side by side", "120.14k pps", "107.67k pps", `<td class="worse">107.67k pps<br>-10.4 %</td>`,
		`id="run1"`, `id="run2"`, `id="run3"`, `href="#run3"`)
	// A loss changes in points, not relative to a zero.
	// bench-udp-1518 sent 1.13M pps to bench-udp's 120k: its loss is not
	// judged against it, and both loads stand beside the losses.
	page = render(t, before, fixture(t, "bench-udp-1518"))
	contains(t, page, `<td class="apart">92.687 %<br>+92.687 points (not judged: offered loads differ)<br><span class="meta">at `,
		"was offered", "more than 5 % apart): its loss is not judged against it", "sent (offered load)")
	if strings.Contains(page, `<td class="worse">92.687 %`) {
		t.Error("a loss at ten times the load is called worse")
	}
	if i, j := strings.Index(page, "Side by side"), strings.Index(page, `id="run1"`); i > j {
		t.Error("the comparison is not first")
	}
}

// What a result says is text on the page, never markup.
func TestEscaped(t *testing.T) {
	r := fixture(t, "bench-udp")
	var res map[string]any
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	res["notes"] = []string{`<script>alert(1)</script>`}
	r.Result, _ = json.Marshal(res)
	page := render(t, r)
	if strings.Contains(page, "<script>") {
		t.Error("a note's markup reached the page")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the note is not on the page as text")
	}
}

// A kind the page does not chart shows its result as text.
func TestOtherKind(t *testing.T) {
	r := &history.Run{Entry: history.Entry{ID: "p1", Kind: "some-later-kind"}, Result: json.RawMessage(`{"plan": {"name": "<b>fan-in</b>"}}`)}
	page := render(t, r)
	checkOffline(t, page)
	if !strings.Contains(page, `&#34;name&#34;: &#34;&lt;b&gt;fan-in&lt;/b&gt;&#34;`) {
		t.Error("the plan's result is not on the page as escaped text")
	}
}

func TestNoRuns(t *testing.T) {
	if err := Write(&bytes.Buffer{}, nil); err == nil {
		t.Fatal("no error for no runs")
	}
}

func TestUndecodable(t *testing.T) {
	r := &history.Run{Entry: history.Entry{ID: "x1", Kind: history.KindBench}, Result: json.RawMessage(`{"spec": 3}`)}
	err := Write(&bytes.Buffer{}, []*history.Run{r})
	if err == nil || !strings.Contains(err.Error(), "x1") {
		t.Fatalf("err %v, want one naming the run", err)
	}
}

// TestPlanRoundNotes: a plan's round of two flows shows, on its first
// flow, how the flows started (the spread of their windows, the start
// barrier), the round's notes and the controller's cost.
func TestPlanRoundNotes(t *testing.T) {
	var one results.Result
	if err := json.Unmarshal(fixture(t, "bench-udp").Result, &one); err != nil {
		t.Fatal(err)
	}
	spread := 4.2
	set := results.FlowSet{Flows: []results.FlowRun{{From: "lan", To: []string{"wan"}, Result: &one}, {From: "dmz", To: []string{"wan"}, Result: &one}},
		StartSpreadMS: &spread, Barrier: &results.Barrier{Used: true, SetupMS: 812},
		Notes: []string{"sampled: router"}}
	data, err := json.Marshal(&plan.Result{Plan: "two.yaml", Rounds: []results.FlowSet{set},
		Controller: &plan.Usage{UserSeconds: 1.25, SysSeconds: 0.5, MaxRSSBytes: 48e6}})
	if err != nil {
		t.Fatal(err)
	}
	page := render(t, &history.Run{Entry: history.Entry{ID: "20261127-1400-p", Kind: history.KindPlan}, Result: data})
	contains(t, page, "flow 1: lan → wan", "flow 2: dmz → wan", "the 2 flows' measured windows opened within 4.2 ms of each other",
		"start barrier: every flow was set up (the slowest in 812 ms), then all were let go at once", "sampled: router",
		"controller: 1.25 s user, 0.50 s system CPU, 48.0 MB max resident")
	if n := strings.Count(html.UnescapeString(page), "start barrier: every flow"); n != 1 {
		t.Errorf("the barrier's line is on the page %d times, want once (on the first flow)", n)
	}
}
