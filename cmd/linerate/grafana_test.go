package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"linerate/box"
	"linerate/live"
	"linerate/results"
	"linerate/sample"
	"linerate/source/procfs"
)

// realMetrics is /metrics of this machine: two reads of its counters a
// moment apart, and one bench second, through the hub watch and serve use.
func realMetrics(t *testing.T) string {
	t.Helper()
	read := sample.Live(procfs.NewFS("/proc"), nil, nil)
	a, err := read()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	b, err := read()
	if err != nil {
		t.Fatal(err)
	}
	hub := live.NewHub(liveView(nil))
	hub.Rates(box.Delta(a, b))
	hub.Bench(results.IntervalStats{T: 1, SentPPS: 10, ReceivedPPS: 10, SentBPS: 6720, ReceivedBPS: 6720})
	s, _ := hub.Metrics()
	var buf bytes.Buffer
	if err := live.WriteMetrics(&buf, s); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// promqlMetric finds the linerate metric names a PromQL expression uses.
var promqlMetric = regexp.MustCompile(`\blinerate_[a-zA-Z0-9_:]*`)

// recordName matches what a recording rule's name may not hold.
var recordName = regexp.MustCompile(`[^a-zA-Z0-9_]+`)

// dashboard is what the tests read of docs/grafana/linerate.json.
type dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Inputs []struct {
		Name string `json:"name"`
	} `json:"__inputs"`
	Panels []struct {
		Title   string           `json:"title"`
		Targets []dashboardQuery `json:"targets"`
	} `json:"panels"`
}

type dashboardQuery struct {
	Expr string `json:"expr"`
}

// promQL is the query as Grafana sends it to Prometheus: every instance,
// rates over window.
func (q dashboardQuery) promQL(window string) string {
	return strings.NewReplacer("$instance", ".*", "$__rate_interval", window).Replace(q.Expr)
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "grafana", "linerate.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("docs/grafana/linerate.json: %v", err)
	}
	return d
}

// docs/grafana/linerate.json is a dashboard Grafana imports, and every
// metric its queries use is one linerate exports (names read from this
// machine's /metrics); promtool parses every query.
func TestGrafanaDashboard(t *testing.T) {
	d := readDashboard(t)
	if d.Title == "" || d.UID == "" || len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" {
		t.Errorf("title %q uid %q inputs %+v: want a titled dashboard asking for one Prometheus data source", d.Title, d.UID, d.Inputs)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(realMetrics(t)))
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for i, q := range p.Targets {
			names := promqlMetric.FindAllString(q.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: %s uses no linerate metric", p.Title, q.Expr)
			}
			for _, n := range names {
				used[n] = true
				if fams[n] == nil {
					t.Errorf("panel %q: %s is not among the metrics linerate exports", p.Title, n)
				}
			}
			expr := q.promQL("1m")
			fmt.Fprintf(&rules, "      - record: linerate:panel_%s_%d\n        expr: %q\n", recordName.ReplaceAllString(p.Title, "_"), i, expr)
		}
	}
	t.Logf("the dashboard uses %d metrics", len(used))
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("no promtool to parse the queries (Debian's prometheus package)")
	}
	f := filepath.Join(t.TempDir(), "rules.yml")
	os.WriteFile(f, []byte(rules.String()), 0o644)
	if out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules (the dashboard's queries): %v\n%s\n%s", err, out, rules.String())
	}
}
