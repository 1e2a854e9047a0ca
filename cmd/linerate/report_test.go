package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"linerate/history"
	"linerate/internal/usage"
)

// benchResult runs a short real bench on loopback and returns its JSON.
func benchResult(t *testing.T) []byte {
	t.Helper()
	addr := serveLoopback(t)
	out, err := runArgs(t, "bench", "udp", "--to", addr, "--duration", "1s",
		"--warmup", "200ms", "--rate", "20kpps", "--idle", "200ms", "--json")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	return []byte(out)
}

// A real bench's result, as a file and from the history, becomes a page.
func TestReportOfABench(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	dir := t.TempDir()
	t.Chdir(dir)
	res := benchResult(t)
	if err := os.WriteFile("run.json", res, 0o644); err != nil {
		t.Fatal(err)
	}

	// A file, with the default name.
	out, err := runArgs(t, "report", "run.json")
	if err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if strings.TrimSpace(out) != "report-run.html" {
		t.Errorf("printed %q, want the path written", out)
	}
	page := readPage(t, "report-run.html")
	for _, want := range []string{"<svg", "packets per second", "pps", "client cpu0", "Latency", "Drop ledger"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}

	// The same result saved twice in a history: by id prefix, side by side.
	hist := filepath.Join(dir, "history")
	store := history.Open(hist)
	var ids []string
	for range 2 {
		r, err := history.ReadFile("run.json")
		if err != nil {
			t.Fatal(err)
		}
		r.Command = []string{"linerate", "bench", "udp"}
		id, err := store.Save(r)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	out, err = runArgs(t, "report", "--history-dir", hist, ids[0], ids[1][:len(ids[1])-1])
	if err != nil {
		t.Fatalf("report by id: %v\n%s", err, out)
	}
	want := "report-" + ids[0] + ".html"
	if strings.TrimSpace(out) != want {
		t.Errorf("printed %q, want %s", out, want)
	}
	page = readPage(t, want)
	for _, s := range []string{"Side by side", ids[0], ids[1], "linerate bench udp"} {
		if !strings.Contains(page, s) {
			t.Errorf("the page of two ids lacks %q", s)
		}
	}

	// -o names the file; - is stdout.
	out, err = runArgs(t, "report", "run.json", "-o", filepath.Join(dir, "x.html"))
	if err != nil || strings.TrimSpace(out) != filepath.Join(dir, "x.html") {
		t.Errorf("-o: %v %q", err, out)
	}
	out, err = runArgs(t, "report", "run.json", "-o", "-")
	if err != nil || !strings.HasPrefix(out, "<!DOCTYPE html>") {
		t.Errorf("-o -: %v %.40q", err, out)
	}
}

func readPage(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReportBadInput(t *testing.T) {
	diag, err := os.ReadFile(filepath.Join("..", "..", "report", "page", "testdata", "diagnose.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	hist := filepath.Join(dir, "history")
	if err := os.WriteFile("notes.txt", []byte("not a run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("other.json", []byte(`{"hello": "world"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir("adir", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "requires at least 1 arg"},
		{[]string{"report", "--history-dir", hist, "20261125-nope"}, `run "20261125-nope": not in the history`},
		{[]string{"report", "notes.txt"}, "notes.txt: not a linerate run"},
		{[]string{"report", "other.json"}, "other.json: not a linerate run"},
		{[]string{"report", "adir"}, "adir: not a regular file"},
		{[]string{"report", "missing.json"}, "missing.json"},
		{[]string{"report", "./missing"}, "./missing"},
	} {
		_, err := runArgs(t, c.args...)
		if err == nil || !(usage.Is(err) || isCobraUsage(err)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want bad input saying %q", c.args, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error is not one line: %q", c.args, err)
		}
	}
	// A run that reads, to a place that cannot be written.
	if err := os.WriteFile("d.json.gz", diag, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = runArgs(t, "report", "d.json.gz", "-o", "/nonexistent/dir/x.html")
	if !usage.Is(err) || !strings.Contains(err.Error(), "-o /nonexistent/dir/x.html") {
		t.Errorf("-o in a missing directory: %v", err)
	}
	if m, _ := filepath.Glob("report-*.html"); len(m) > 0 {
		t.Errorf("bad input left %v", m)
	}
}

// A result whose intervals are two million empty objects (6 MB of text,
// 700 MB and more once decoded and drawn) is bad input, refused as it is
// read, naming where, with little allocated, and no page is written;
// diagnose refuses it the same way.
func TestReportEmptyIntervals(t *testing.T) {
	dir := t.TempDir()
	text := `{"schema":1,"linerate_version":"dev","spec":{"proto":"udp","direction":"forward","duration":5},"intervals":[` +
		strings.Repeat("{},", 2_000_000) + `{}]}`
	file := filepath.Join(dir, "run.json")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := runArgs(t, "report", file, "-o", filepath.Join(dir, "page.html"))
	runtime.ReadMemStats(&after)
	if code := exitCode(err); code != exitBadInput || !strings.Contains(err.Error(), file+": a bench result: decoding would take more than") ||
		!strings.Contains(err.Error(), " at intervals[") || strings.Contains(err.Error(), "\n") {
		t.Errorf("exit %d: %v", code, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 128<<20 {
		t.Errorf("%d MiB allocated to refuse %d MB of text", got>>20, len(text)>>20)
	}
	if _, err := os.Stat(filepath.Join(dir, "page.html")); err == nil {
		t.Error("a page was written")
	}
	_, err = runArgs(t, "diagnose", file)
	if code := exitCode(err); code != exitBadInput || !strings.Contains(err.Error(), " at intervals[") {
		t.Errorf("diagnose: exit %d: %v", code, err)
	}
}
