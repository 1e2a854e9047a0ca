package history

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func run(kind, headline string) *Run {
	return &Run{Entry: Entry{Kind: kind, Command: []string{"linerate", kind}, Host: "h", Headline: headline},
		Result: json.RawMessage(`{"spec":{"proto":"udp"},"summary":{"received_pps":1000}}`)}
}

func TestSaveLoadList(t *testing.T) {
	s := Open(t.TempDir())
	ids := map[string]string{}
	for i := range 3 {
		r := run(KindBench, fmt.Sprintf("run %d", i))
		r.Time = time.Date(2026, 11, 25, 12, 0, i, 0, time.UTC)
		id, err := s.Save(r)
		if err != nil {
			t.Fatal(err)
		}
		ids[id] = r.Headline
	}
	all, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Headline != "run 2" || all[2].Headline != "run 0" {
		t.Fatalf("list not newest first: %+v", all)
	}
	for id, h := range ids {
		r, err := s.Load(id[:len(id)-2]) // a prefix
		if err != nil {
			t.Fatal(err)
		}
		if r.ID != id || r.Headline != h || r.Schema != Schema || !strings.Contains(string(r.Result), `"received_pps":1000`) {
			t.Errorf("load %s: %+v", id, r)
		}
	}
}

// Writers at the same instant, from many goroutines of one process and
// each with its own Store as separate processes would: every run is kept,
// under its own id, and the index lists them all.
func TestConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := run(KindBench, fmt.Sprint(i))
			r.Time = at // one second for all: only the random part differs
			if _, err := Open(dir).Save(r); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all, err := Open(dir).List()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range all {
		seen[e.Headline] = true
	}
	if len(all) != n || len(seen) != n {
		t.Fatalf("%d runs listed, %d distinct, want %d", len(all), len(seen), n)
	}
	idx, clean := Open(dir).readIndex()
	if len(idx) != n || !clean {
		t.Errorf("index holds %d lines (clean %v), want %d", len(idx), clean, n)
	}
}

// A corrupt run file is skipped with a warning naming it; a corrupt index
// line is dropped and the index rebuilt from the files.
func TestCorrupt(t *testing.T) {
	dir := t.TempDir()
	s := Open(dir)
	var warns []string
	s.Warn = func(w string) { warns = append(warns, w) }
	good, err := s.Save(run(KindBench, "good"))
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "20260101-000000-dead.json.gz")
	if err := os.WriteFile(bad, []byte("\x1f\x8bnot gzip at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(filepath.Join(dir, indexName), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{half a line\n")
	f.Close()
	all, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].ID != good {
		t.Fatalf("list %+v", all)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], bad) {
		t.Fatalf("warnings %q, want one naming %s", warns, bad)
	}
	if idx, clean := s.readIndex(); !clean || len(idx) != 1 {
		t.Errorf("index not rebuilt: %d lines, clean %v", len(idx), clean)
	}
	// A lost index is rebuilt from the files.
	os.Remove(filepath.Join(dir, indexName))
	if all, _ := s.List(); len(all) != 1 {
		t.Errorf("after losing the index: %+v", all)
	}
}

func TestNewerSchema(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "20300101-000000-beef.json.gz")
	f, _ := os.Create(p)
	zw := gzip.NewWriter(f)
	zw.Write([]byte(`{"schema":7,"id":"20300101-000000-beef","kind":"bench","result":{"future":true}}`))
	zw.Close()
	f.Close()
	_, err := Open(dir).Load("20300101")
	var ne *NewerError
	if !errors.As(err, &ne) || ne.Schema != 7 || !strings.Contains(err.Error(), "newer linerate") || !strings.Contains(err.Error(), p) {
		t.Fatalf("err %v", err)
	}
}

func TestMissingID(t *testing.T) {
	s := Open(t.TempDir())
	s.Save(run(KindBench, "x"))
	for _, id := range []string{"nope", "../etc/passwd", ""} {
		_, err := s.Load(id)
		var nf *NotFoundError
		if !errors.As(err, &nf) || nf.ID != id {
			t.Errorf("Load(%q): %v", id, err)
		}
	}
	if _, err := s.Remove("nope"); err == nil {
		t.Error("remove of a missing id succeeded")
	}
}

// A prefix two runs start with is ErrAmbiguous, naming both.
func TestAmbiguousID(t *testing.T) {
	s := Open(t.TempDir())
	ids := saveSeconds(t, s, 2)
	_, err := s.Load("20261125-1200")
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), ids[0]) || !strings.Contains(err.Error(), ids[1]) {
		t.Errorf("Load of a shared prefix: %v", err)
	}
	if _, err := s.Load(ids[1]); err != nil {
		t.Errorf("Load(%s): %v", ids[1], err)
	}
}

// saveSeconds saves n bench runs a second apart, from 2026-11-25 12:00:00
// UTC, and returns their ids.
func saveSeconds(t *testing.T, s *Store, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		r := run(KindBench, fmt.Sprint(i))
		r.Time = time.Date(2026, 11, 25, 12, 0, i, 0, time.UTC)
		id, err := s.Save(r)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func TestRemovePrune(t *testing.T) {
	s := Open(t.TempDir())
	ids := saveSeconds(t, s, 5)
	// One unknown id removes nothing.
	if _, err := s.Remove(ids[0], "missing"); err == nil {
		t.Fatal("no error")
	}
	if all, _ := s.List(); len(all) != 5 {
		t.Fatalf("%d runs after a refused remove", len(all))
	}
	if gone, err := s.Remove(ids[0]); err != nil || len(gone) != 1 {
		t.Fatal(gone, err)
	}
	gone, err := s.Prune(2)
	if err != nil || len(gone) != 2 {
		t.Fatal(gone, err)
	}
	all, _ := s.List()
	if len(all) != 2 || all[0].ID != ids[4] || all[1].ID != ids[3] {
		t.Fatalf("after prune: %+v", all)
	}
}

func TestDecodeBareResults(t *testing.T) {
	for kind, body := range map[string]string{
		KindBench:    `{"schema":1,"spec":{"proto":"udp"},"summary":{}}`,
		KindSearch:   `{"schema":1,"spec":{},"search":[{"size":64}]}`,
		KindTuneAuto: `{"schema":1,"rig":"host","trials":[]}`,
		KindDiagnose: `{"source":"live","rules":12,"findings":[]}`,
		KindFlows:    `{"schema":1,"spec":{},"flows":[{"from":"a"}],"total":{}}`,
	} {
		r, err := Decode([]byte(body), "x.json")
		if err != nil || r.Kind != kind {
			t.Errorf("%s: %+v %v", kind, r, err)
		}
	}
	if _, err := Decode([]byte(`{"hello":1}`), "x.json"); err == nil || !strings.Contains(err.Error(), "x.json") {
		t.Errorf("foreign JSON: %v", err)
	}
	if _, err := Decode([]byte(`[1,2`), "y.json"); err == nil || !strings.Contains(err.Error(), "y.json") {
		t.Errorf("bad JSON: %v", err)
	}
}

// gzipped writes text to a new file, gzip-compressed at the best ratio.
func gzipped(t *testing.T, text []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "r.json.gz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	if _, err := zw.Write(text); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(zw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	return p
}

// plain writes text to a new file as it is.
func plain(t *testing.T, text []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(p, text, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A small file cannot stand for a large run: the 58 KB gzip of 20
// million empty intervals (60 MB inflated, which took report to 3 GB and
// more) is refused having inflated at most 64 times its size; and an
// envelope whose command line is millions of empty strings (9 MB, 384 MB
// as strings) is refused by its budget before it is decoded. Both with
// little allocated.
func TestSmallFileLargeRun(t *testing.T) {
	intervals := []byte(`{"schema":1,"spec":{"proto":"udp","duration":5},"intervals":[` + strings.Repeat("{},", 20_000_000) + `{}]}`)
	command := []byte(`{"schema":1,"kind":"bench","id":"x","result":{},"command":[` + strings.Repeat(`"",`, 3_000_000) + `""]}`)
	for _, tc := range []struct {
		name, path, want string
	}{
		{"intervals", gzipped(t, intervals), "inflates to more than 64 times its size"},
		{"command", plain(t, command), "command["},
	} {
		st, _ := os.Stat(tc.path)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadFile(tc.path)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), tc.path) {
			t.Errorf("%s (%d bytes): %v, want %q", tc.name, st.Size(), err, tc.want)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
			t.Errorf("%s (%d bytes): %d MiB allocated to refuse it", tc.name, st.Size(), got>>20)
		}
	}
}
