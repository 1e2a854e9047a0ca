package report

import (
	"path/filepath"
	"strings"
	"testing"

	"linerate/history"
	"linerate/results"
)

// rrFixture reads a real bench rr result the page's tests use
// (page/testdata/README.md says how it was made).
func rrFixture(t *testing.T, name string) *history.Run {
	t.Helper()
	r, err := history.ReadFile(filepath.Join("page", "testdata", name+".json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A transaction test's line in the history is its transactions per
// second and round trips, not the 0 pps of bulk figures it has none of.
func TestRRHeadline(t *testing.T) {
	r := rrFixture(t, "bench-rr-connect")
	v, err := DecodeRun(r)
	if err != nil {
		t.Fatal(err)
	}
	h := Headline(history.KindBench, v)
	t.Log(h)
	for _, want := range []string{"TCP_CRR → b:7557: ", "3.4ktps", "p50 545 µs", "p99 1434 µs", "0 lost"} {
		if !strings.Contains(h, want) {
			t.Errorf("headline %q lacks %q", h, want)
		}
	}
	if strings.Contains(h, "pps") {
		t.Errorf("headline %q has bulk figures", h)
	}
	rr := v.(*results.Result)
	rr.Spec.RR.Connect, rr.Spec.Proto = false, "udp"
	if h := Headline(history.KindBench, rr); !strings.HasPrefix(h, "UDP_RR → ") {
		t.Errorf("UDP headline %q", h)
	}
}

// compare between two transaction tests gives the change of the
// transactions per second, judged against each run's seconds, and of the
// round trip's percentiles.
func TestCompareRR(t *testing.T) {
	var b strings.Builder
	if err := Compare(&b, rrFixture(t, "bench-rr-connect"), rrFixture(t, "bench-rr-nat")); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log(out)
	for prefix, want := range map[string][]string{
		"transactions/s":    {"3.4ktps", "2.8ktps", "-17.6 %", "±"},
		"round trip p50":    {"545 µs", "594 µs", "+9.0 %"},
		"round trip p99":    {"1434 µs", "2212 µs", "+54.3 %"},
		"round trip p99.9":  {"4227 µs", "6193 µs", "+46.5 %"},
		"transactions lost": {"0", "same"},
	} {
		l := line(out, prefix)
		for _, w := range want {
			if !strings.Contains(l, w) {
				t.Errorf("%s line %q lacks %q", prefix, l, w)
			}
		}
	}
	if strings.Contains(out, "received pps") || strings.Contains(out, "retransmits") {
		t.Errorf("bulk figures compared for transaction tests:\n%s", out)
	}
}

// A set of transaction flows (a plan's round) is listed and compared by
// their transactions per second added up.
func TestFlowSetRR(t *testing.T) {
	var fs results.FlowSet
	for _, name := range []string{"bench-rr-connect", "bench-rr-nat"} {
		v, err := DecodeRun(rrFixture(t, name))
		if err != nil {
			t.Fatal(err)
		}
		res := v.(*results.Result)
		fs.Spec = res.Spec
		fs.Flows = append(fs.Flows, results.FlowRun{From: "lan", To: []string{name}, Result: res})
	}
	if h := Headline(history.KindFlows, &fs); h != "TCP_CRR, 2 flows: 6.3ktps" {
		t.Errorf("headline %q", h)
	}
	f := Figures(&fs)
	if len(f) != 1 || f[0].Name != "transactions/s" || f[0].Value < 6264 || f[0].Value > 6266 || len(f[0].PerSecond) != 5 {
		t.Errorf("figures %+v", f)
	}
}
