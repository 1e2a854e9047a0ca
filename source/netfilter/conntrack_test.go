package netfilter

import (
	"os"
	"strings"
	"testing"
)

func TestParseConntrackStat(t *testing.T) {
	for _, c := range []struct {
		file                        string
		entries, drop, insertFailed uint64
		earlyDrop, invalid, dropped uint64
		column                      string
	}{
		{"nf_conntrack-6.18.txt", 0x1c, 0xff + 0x101, 3, 0x10, 4, 0x200 + 3, "clashres"},
		{"nf_conntrack-4.9.txt", 5, 3, 0, 0, 0, 3, "searched"},
	} {
		f, err := os.Open("testdata/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseConntrackStat(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if s.Entries != c.entries || s.Counters[ColumnDrop] != c.drop || s.Counters[ColumnInsertFailed] != c.insertFailed ||
			s.Counters[ColumnEarlyDrop] != c.earlyDrop || s.Counters[ColumnInvalid] != c.invalid || s.Dropped() != c.dropped {
			t.Errorf("%s: %+v", c.file, s)
		}
		if _, ok := s.Counters[c.column]; !ok {
			t.Errorf("%s: column %s missing", c.file, c.column)
		}
		if _, ok := s.Counters["entries"]; ok {
			t.Errorf("%s: entries summed as a counter", c.file)
		}
	}
}

func TestParseConntrackStatErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"entries drop\n00000001\n",
		"entries drop\n00000001 zz\n",
		"entries Drop\n",
		"entries drop drop\n",
	} {
		if _, err := ParseConntrackStat(strings.NewReader(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestConntrackSub(t *testing.T) {
	a := ConntrackStat{Entries: 3, Counters: map[string]uint64{"drop": 5, "insert_failed": 1}}
	b := ConntrackStat{Entries: 7, Max: 100, Counters: map[string]uint64{"drop": 9, "insert_failed": 0, "new": 4}}
	d := b.Sub(a)
	if d.Entries != 7 || d.Max != 100 || d.Counters["drop"] != 4 || d.Counters["insert_failed"] != 0 || d.Counters["new"] != 4 {
		t.Errorf("Sub = %+v", d)
	}
}

func FuzzParseConntrackStat(f *testing.F) {
	for _, n := range []string{"nf_conntrack-6.18.txt", "nf_conntrack-4.9.txt"} {
		b, err := os.ReadFile("testdata/" + n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseConntrackStat(strings.NewReader(in))
		if err == nil && s.Counters == nil {
			t.Fatal("nil counters without an error")
		}
	})
}
