package page

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"linerate/history"
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

// The demo's results are real bench runs through a router lab.
func TestDemoBench(t *testing.T) {
	r := readRun(t, filepath.Join("..", "..", "demo", "testdata", "udp-64.json"))
	if r.Kind != history.KindBench {
		t.Fatalf("kind %q", r.Kind)
	}
	page := render(t, r)
	checkOffline(t, page)
	for _, want := range []string{"<svg", "packets per second", "87.94k pps", "latency", "cpu0", "NET_RX"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

func TestNoRuns(t *testing.T) {
	if err := Write(&bytes.Buffer{}, nil); err == nil {
		t.Fatal("no error for no runs")
	}
}

func TestUndecodable(t *testing.T) {
	r := &history.Run{ID: "x1", Kind: history.KindBench, Result: json.RawMessage(`{"spec": 3}`)}
	err := Write(&bytes.Buffer{}, []*history.Run{r})
	if err == nil || !strings.Contains(err.Error(), "x1") {
		t.Fatalf("err %v, want one naming the run", err)
	}
}

