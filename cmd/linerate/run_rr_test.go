package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"linerate/plan"
)

// TestRunPlanRR runs a plan of transaction flows through the router lab's
// NAT: two agents' worth of flows from lan to wan at once, one a new
// connection per transaction (TCP_CRR), one a kept connection (TCP_RR),
// the router sampled. Each flow's result has its transactions per second,
// the router's conntrack grew with the connections, and the text shows
// tps per flow, their total and the router's conntrack.
func TestRunPlanRR(t *testing.T) {
	l := upAgentLab(t, "rrs-", "router")
	p := filepath.Join(t.TempDir(), "nat.yaml")
	os.WriteFile(p, []byte(`hosts:
  lan: 10.231.1.2
  wan: 10.231.2.2
  router: 10.231.1.1
flows:
  - {from: lan, to: wan, rr: {connect: true}, streams: 2}
  - {from: lan, to: wan, name: kept, rr: {size: "64,512"}}
sample: [router]
duration: 2s
`), 0o644)
	inLan := func(args ...string) result { return l.exec("lan", append([]string{"linerate"}, args...)...) }
	r := inLan("run", p, "--json", "--no-save")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var res plan.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(res.Rounds) != 1 || len(res.Rounds[0].Flows) != 2 {
		t.Fatalf("rounds %+v", res.Rounds)
	}
	for i, f := range res.Rounds[0].Flows {
		if f.Result == nil || f.Error != "" || f.Result.RR == nil {
			t.Fatalf("flow %d: %+v", i+1, f)
		}
		rr := f.Result.RR
		t.Logf("flow %d: %d transactions, %.0f tps, p50 %.0f µs, %d connections, lost %d; middle %+v", i+1, rr.Transactions, rr.TPS, rr.Latency.P50, rr.Connections, rr.Lost(), rr.Middle)
		// Even a loaded 2-core machine does hundreds a second.
		if rr.Transactions < 100 || rr.TPS <= 0 || rr.Answered < rr.Transactions {
			t.Errorf("flow %d: %d transactions, %.0f tps, %d answered", i+1, rr.Transactions, rr.TPS, rr.Answered)
		}
		if want := uint64(len(rr.Streams)); i == 1 && (rr.Connections != want || want != 1) {
			t.Errorf("TCP_RR flow: %d connections for %d streams", rr.Connections, want)
		}
		if i == 0 && (len(rr.Streams) != 2 || rr.Connections < rr.Transactions) {
			t.Errorf("TCP_CRR flow: %d streams, %d connections for %d transactions", len(rr.Streams), rr.Connections, rr.Transactions)
		}
		// Every connection through the NAT is a conntrack entry, kept
		// for a while after it closed.
		if len(rr.Middle) != 1 || rr.Middle[0].Host != "router" || rr.Middle[0].Peak < rr.Middle[0].Start+100 || rr.Middle[0].Max == 0 {
			t.Errorf("flow %d: the router's conntrack %+v", i+1, rr.Middle)
		}
	}
	if sp := res.Rounds[0].Flows[1].Result.Spec; sp.RR.Request != 64 || sp.RR.Response != 512 || sp.RR.Connect || sp.Warmup != 0 {
		t.Errorf("kept flow's spec %+v rr %+v", sp, sp.RR)
	}

	// The page: each flow a transaction test, the router's conntrack
	// drawn with the first (which carries the round's samples).
	saved := filepath.Join(t.TempDir(), "nat.json")
	os.WriteFile(saved, []byte(r.stdout), 0o644)
	page := filepath.Join(t.TempDir(), "nat.html")
	if rep := run(t, l.bin, "report", saved, "-o", page); rep.code != 0 {
		t.Fatalf("report: %d %s", rep.code, rep.stderr)
	}
	html, _ := os.ReadFile(page)
	for _, want := range []string{"TCP_CRR (a connection per transaction), 1-byte requests, 1-byte responses, 2 streams, 2s",
		"TCP_RR, 64-byte requests, 512-byte responses, 1 streams, 2s", "conntrack entries on router against its table", "transactions per second: completed"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the page lacks %q", want)
		}
	}

	// The text: tps per flow, their total, the router's conntrack.
	r = inLan("run", p, "--no-save")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Log(r.stdout)
	for _, want := range []string{"TPS", "TCP_CRR", "TCP_RR", "transactions: ", "tps in all", "conntrack on router: "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run's text lacks %q", want)
		}
	}
	if strings.Contains(r.stdout, "total: received") || strings.Contains(r.stdout, "RECV PPS") {
		t.Errorf("run's text has bulk figures for transaction flows")
	}
	// --check lists them as transaction tests.
	r = inLan("run", p, "--check")
	if !strings.Contains(r.stdout+r.stderr, "TCP_CRR 1,1 B") || !strings.Contains(r.stdout+r.stderr, "TCP_RR 64,512 B") {
		t.Errorf("run --check:\n%s%s", r.stdout, r.stderr)
	}
}
