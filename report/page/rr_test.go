package page

import (
	"encoding/json"
	"strings"
	"testing"

	"linerate/history"
	"linerate/results"
)

// TestBenchRR: a transaction test's page has its own cards (transactions
// per second, the round trip's p50, p99 and p99.9, what was lost), its
// transactions per second over time, the percentiles, each stream, and
// the sampled hosts' conntrack over time against the table's size; none
// of the bulk figures it has no use for.
func TestBenchRR(t *testing.T) {
	page := fixturePage(t, "bench-rr-nat", history.KindBench)
	contains(t, page, "TCP_CRR (a connection per transaction), 1-byte requests, 1-byte responses, 2 streams, 5s, timeout 2s",
		"Transactions", "transactions per second", "2.83k tps", "14,151 transactions in 5.00 s over 2 streams",
		"round trip, p50", "594 µs", "round trip, p99", "2212 µs", "round trip, p99.9", "6193 µs", "max 112.7 ms",
		"0 timed out, 0 connects failed, 0 other errors; the server answered 14,151 over 14,151 connections",
		"<td>1.4k tps</td>", "<td>2245 µs</td>", // stream 0
		"transactions per second: completed by the client, answered by the server", "mean 2.83k tps",
		"round trip of the transactions: share done within a time",
		"Connection tracking in the middle", `<td class="l">router:7557</td><td>3</td><td>8,973</td><td>8,973</td><td>262,144</td>`,
		"conntrack entries on router:7557 against its table (nf_conntrack_max 262,144): at most 8,973, 3.4 % of it",
		"nf_conntrack_max 262,144<")
	for _, s := range []string{"goodput", "retransmits", "Per target and direction", "packets per second</title>", "what the tracker dropped"} {
		if strings.Contains(page, s) {
			t.Errorf("a transaction test's page has %q", s)
		}
	}
	// The run's line over time is 5 points, the conntrack one 7 (the
	// first sample's start, then each sample's end).
	if n := charts(page); n < 3 {
		t.Errorf("%d charts", n)
	}

	// A host whose tracker saw nothing still has its row; the pair's
	// server, sampled, tracks no connection.
	pair := fixturePage(t, "bench-rr-connect", history.KindBench)
	contains(t, pair, "3.43k tps", `<td class="l">b:7557</td><td>0</td><td>0</td><td>0</td><td>262,144</td>`, "at most 0, 0.0 % of it")
}

// Two transaction tests side by side: the change in transactions per
// second and in each percentile, judged (fewer tps and longer round
// trips are worse).
func TestSideBySideRR(t *testing.T) {
	page := render(t, fixture(t, "bench-rr-connect"), fixture(t, "bench-rr-nat"))
	checkOffline(t, page)
	contains(t, page, "Side by side", "transactions per second", "round trip p50", "round trip p99.9", "transactions lost",
		`<td class="worse">2.83k tps<br>-17.6 %</td>`, `<td class="worse">594 µs<br>+9.0 %</td>`,
		`<td class="worse">2212 µs<br>+54.3 %</td>`, `<td class="worse">6193 µs<br>+46.5 %</td>`, `<td class="same">0<br>±0</td>`)
	if strings.Contains(page, "received bits") {
		t.Error("bulk figures compared between transaction tests")
	}
}

// A tracker that evicted entries gets a chart of what it dropped each
// second, and its row is marked.
func TestBenchRRConntrackDrops(t *testing.T) {
	r := fixture(t, "bench-rr-nat")
	var res results.Result
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range res.Samples {
		if ct := res.Samples[i].Conntrack; ct != nil && res.Samples[i].Host == "router:7557" {
			ct.EarlyDrop = 40
			n++
		}
	}
	res.RR.Middle[0].EarlyDrop = uint64(40 * n)
	var err error
	if r.Result, err = json.Marshal(&res); err != nil {
		t.Fatal(err)
	}
	page := render(t, r)
	contains(t, page, "conntrack on router:7557: what the tracker dropped, per second", "<title>early_drop</title>",
		`<td class="bad">8,973</td>`)
}
