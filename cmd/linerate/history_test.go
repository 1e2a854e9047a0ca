package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"linerate/history"
	"linerate/internal/usage"
)

// runSaved runs a command and returns its output with the history's
// notice kept.
func runSaved(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return execute(args...)
}

// Two real runs on loopback at two rates are saved, listed, compared
// (the doubled rate is beyond the noise), removed and pruned; --no-save
// saves nothing.
func TestRunsHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	dir := t.TempDir()
	addr := serveLoopback(t)
	var ids []string
	for _, rate := range []string{"3kpps", "6kpps"} {
		out, err := runSaved(t, "bench", "udp", "--to", addr, "--duration", "3", "--warmup", "0", "--rate", rate,
			"--idle", "0", "--history-dir", dir)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		i := strings.Index(out, "saved as run ")
		if i < 0 {
			t.Fatalf("no notice of the saved run:\n%s", out)
		}
		ids = append(ids, strings.Fields(out[i+len("saved as run "):])[0])
	}
	if out, err := runSaved(t, "bench", "udp", "--to", addr, "--duration", "500ms", "--rate", "1kpps", "--idle", "0",
		"--history-dir", dir, "--no-save"); err != nil || strings.Contains(out, "saved as run") {
		t.Fatalf("--no-save: %v\n%s", err, out)
	}

	out, err := runArgs(t, "runs", "--history-dir", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var list []history.Entry
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(list) != 2 || list[0].ID != ids[1] || list[1].ID != ids[0] {
		t.Fatalf("runs: %+v, want %v newest first", list, ids)
	}
	for _, e := range list {
		if e.Kind != history.KindBench || !strings.Contains(e.Headline, "pps") || e.Host == "" || e.Version == "" || len(e.Command) == 0 {
			t.Errorf("entry %+v", e)
		}
	}
	if out, err := runArgs(t, "runs", "--history-dir", dir, "--last", "1", "--kind", "bench"); err != nil ||
		!strings.Contains(out, ids[1]) || strings.Contains(out, ids[0]) {
		t.Errorf("runs --last 1: %v\n%s", err, out)
	}

	out, err = runArgs(t, "compare", ids[0], ids[1][:17], "--history-dir", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("compare:\n%s", out)
	var pps string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "received pps") {
			pps = l
		}
	}
	if !strings.Contains(pps, "better, beyond the noise") || !strings.Contains(pps, "+") {
		t.Errorf("twice the rate is not better beyond the noise: %q", pps)
	}

	_, err = runArgs(t, "compare", ids[0], "20991231-nope", "--history-dir", dir)
	if !usage.Is(err) || !strings.Contains(err.Error(), "20991231-nope") {
		t.Errorf("compare with a missing id: %v", err)
	}
	_, err = runArgs(t, "runs", "rm", ids[0], "missing-id", "--history-dir", dir)
	if !usage.Is(err) || !strings.Contains(err.Error(), "missing-id") || !strings.Contains(err.Error(), "nothing was removed") {
		t.Errorf("rm of a missing id: %v", err)
	}
	if out, err := runArgs(t, "runs", "prune", "--keep", "1", "--history-dir", dir); err != nil || !strings.Contains(out, "removed 1 runs") {
		t.Errorf("prune: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, ids[0]+".json.gz")); !os.IsNotExist(err) {
		t.Errorf("pruned run still there: %v", err)
	}
}

// A run from a newer linerate is refused with a message that says so; a
// file that is not a result names itself.
func TestRunFilesRefused(t *testing.T) {
	dir := t.TempDir()
	newer := filepath.Join(dir, "newer.json.gz")
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(`{"schema":99,"id":"x","kind":"bench","result":{}}`))
	zw.Close()
	os.WriteFile(newer, b.Bytes(), 0o644)
	foreign := filepath.Join(dir, "foreign.json")
	os.WriteFile(foreign, []byte(`{"hello":"world"}`), 0o644)
	_, err := runArgs(t, "compare", newer, foreign, "--history-dir", dir)
	if !usage.Is(err) || !strings.Contains(err.Error(), "newer linerate") {
		t.Errorf("newer run: %v", err)
	}
	_, err = runArgs(t, "compare", foreign, newer, "--history-dir", dir)
	if !usage.Is(err) || !strings.Contains(err.Error(), foreign) {
		t.Errorf("foreign file: %v", err)
	}
	_, err = runArgs(t, "runs", "prune", "--history-dir", dir)
	if !usage.Is(err) || !strings.Contains(err.Error(), "--keep") {
		t.Errorf("prune without --keep: %v", err)
	}
}
