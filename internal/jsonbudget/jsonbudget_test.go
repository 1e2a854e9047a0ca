package jsonbudget_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"linerate/autotune"
	"linerate/history"
	"linerate/internal/jsonbudget"
	"linerate/plan"
	"linerate/report"
	"linerate/results"
)

// typeOf is the Go type a run of kind decodes into.
func typeOf(kind string) reflect.Type {
	switch kind {
	case history.KindBench, history.KindSearch:
		return reflect.TypeFor[results.Result]()
	case history.KindPlan:
		return reflect.TypeFor[plan.Result]()
	case history.KindTuneAuto:
		return reflect.TypeFor[autotune.Report]()
	case history.KindFlows:
		return reflect.TypeFor[results.FlowSet]()
	case history.KindDiagnose:
		return reflect.TypeFor[report.DiagnoseReport]()
	}
	return reflect.TypeFor[any]()
}

// allocated is what fn allocates, garbage included.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// What linerate writes fits its budget with room: every saved result of
// the page's and the demo's tests, indented as written and compact, costs
// under three quarters of Factor times its text (4.7 at most, compact).
func TestBudgetOfWhatLinerateWrites(t *testing.T) {
	files, _ := filepath.Glob("../../report/page/testdata/*.json.gz")
	demo, _ := filepath.Glob("../../demo/testdata/*.json")
	n := 0
	for _, p := range append(files, demo...) {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var rd io.Reader = f
		if strings.HasSuffix(p, ".gz") {
			if rd, err = gzip.NewReader(f); err != nil {
				t.Fatal(err)
			}
		}
		b, err := io.ReadAll(rd)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		r, err := history.Decode(b, p)
		if err != nil {
			continue // not a result (demo's tune plan)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, r.Result); err != nil {
			t.Fatal(err)
		}
		for _, text := range [][]byte{r.Result, compact.Bytes()} {
			c := jsonbudget.CostOf(text, typeOf(r.Kind))
			if ratio := float64(c) / float64(len(text)); ratio > 0.75*jsonbudget.Factor {
				t.Errorf("%s (%s, %d bytes): costs %.2f times its text", filepath.Base(p), r.Kind, len(text), ratio)
			}
			v := reflect.New(typeOf(r.Kind))
			if err := jsonbudget.Unmarshal(text, v.Interface()); err != nil {
				t.Errorf("%s: %v", filepath.Base(p), err)
			}
		}
		n++
	}
	if n < 10 {
		t.Fatalf("%d results read", n)
	}
}

// Text of empty values is refused before it is decoded, naming where, with
// next to nothing allocated: the intervals of {} (a 58 KB gzip of
// 20 million took report to an out-of-memory crash), results of {} in a
// plan's rounds, empty strings of a command line, and nesting too deep.
func TestEmptyValuesRefused(t *testing.T) {
	many := func(n int, v string) string { return strings.TrimSuffix(strings.Repeat(v+",", n), ",") }
	for _, tc := range []struct {
		name, text string
		v          any
		path       string
		deep       bool
	}{
		{"intervals", `{"spec":{"duration":5},"intervals":[` + many(2_000_000, "{}") + `]}`, new(results.Result), "intervals[", false},
		{"cpus", `{"intervals":[{"cpu":[` + many(2_000_000, "{}") + `]}]}`, new(results.Result), "intervals[0].cpu[", false},
		{"rounds", `{"rounds":[{"flows":[` + many(500_000, "{}") + `]}]}`, new(plan.Result), "rounds[0].flows[", false},
		{"command", `{"kind":"bench","result":{},"command":[` + many(2_000_000, `""`) + `]}`, new(history.Run), "command[", false},
		{"any", `[` + many(2_000_000, "[]") + `]`, new(any), "[", false},
		// Keys encoding/json matches by folding or after unescaping.
		{"folded key", `{"INTERVALS":[` + many(2_000_000, "{}") + `]}`, new(results.Result), "INTERVALS[", false},
		{"long s", `{"ſamples":[` + many(2_000_000, "{}") + `]}`, new(results.Result), "ſamples[", false},
		{"escaped key", `{"\u0069ntervals":[` + many(2_000_000, "{}") + `]}`, new(results.Result), `\u0069ntervals[`, false},
		{"deep", strings.Repeat("[", 100) + strings.Repeat("]", 100), new(any), "[0][0]", true},
		{"deep, skipped", `{"unknown":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, new(results.Result), "unknown", true},
	} {
		var err error
		text := []byte(tc.text)
		got := allocated(func() { err = jsonbudget.Unmarshal(text, tc.v) })
		if tc.path == "" { // fits: decoded
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var be *jsonbudget.Error
		if !errors.As(err, &be) || be.Deep != tc.deep || !strings.HasPrefix(be.Path, tc.path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want refused at %s...", tc.name, err, tc.path)
		}
		if got > 1<<20 {
			t.Errorf("%s (%d bytes): %d KiB allocated to refuse it", tc.name, len(tc.text), got>>10)
		}
	}
}

// fill is text that fills a value of type t, with count elements in every
// slice and map, nesting depth levels of them, within about size bytes:
// the shapes a hostile file can give the types linerate reads.
func fill(b *bytes.Buffer, t reflect.Type, depth, count, size int, pick uint64) {
	switch {
	case t == reflect.TypeFor[time.Time]():
		b.WriteString(`"2026-01-02T03:04:05Z"`)
		return
	case reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()):
		b.WriteString("1")
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		fill(b, t.Elem(), depth, count, size, pick)
	case reflect.Struct:
		b.WriteByte('{')
		first := true
		for i := range t.NumField() {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if !sf.IsExported() || name == "-" || sf.Anonymous || depth <= 0 || (pick>>(uint(i)%64))&1 == 0 {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			fmt.Fprintf(b, "%q:", name)
			fill(b, sf.Type, depth-1, count, size, pick*31+uint64(i))
		}
		b.WriteByte('}')
	case reflect.Slice, reflect.Array:
		b.WriteByte('[')
		for i := 0; i < count && depth > 0 && b.Len() < size; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fill(b, t.Elem(), depth-1, count, size, pick+uint64(i))
		}
		b.WriteByte(']')
	case reflect.Map:
		b.WriteByte('{')
		for i := 0; i < count && depth > 0 && b.Len() < size; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, `"%d":`, i)
			fill(b, t.Elem(), depth-1, count, size, pick+uint64(i))
		}
		b.WriteByte('}')
	case reflect.Interface:
		if depth <= 0 {
			b.WriteString(`""`)
			return
		}
		fill(b, reflect.TypeFor[[]map[string]any](), depth, count, size, pick)
	case reflect.String:
		b.WriteString(`""`)
	case reflect.Bool:
		b.WriteString("false")
	default:
		b.WriteString("0")
	}
}

var fuzzTypes = []reflect.Type{
	reflect.TypeFor[results.Result](), reflect.TypeFor[plan.Result](), reflect.TypeFor[autotune.Report](),
	reflect.TypeFor[results.FlowSet](), reflect.TypeFor[report.DiagnoseReport](), reflect.TypeFor[history.Run](),
	reflect.TypeFor[any](), reflect.TypeFor[[]string](), reflect.TypeFor[map[string][]float64](),
}

// FuzzBudget fuzzes counts and nesting, not bytes: text that fills one of
// the types linerate reads from files with count elements in every slice
// and map, depth levels deep, choosing its fields by pick. Whatever the
// shape, what json.Unmarshal allocates is within a small multiple of what
// the walk counted, so that a budget on the count is a budget on memory.
func FuzzBudget(f *testing.F) {
	f.Add(uint8(0), uint16(20000), uint8(2), uint64(1<<62))
	f.Add(uint8(0), uint16(100), uint8(4), ^uint64(0))
	f.Add(uint8(1), uint16(3000), uint8(5), ^uint64(0))
	f.Add(uint8(6), uint16(60000), uint8(3), uint64(0))
	f.Add(uint8(7), uint16(60000), uint8(1), uint64(0))
	f.Add(uint8(8), uint16(300), uint8(2), uint64(0))
	f.Fuzz(func(t *testing.T, which uint8, count uint16, depth uint8, pick uint64) {
		typ := fuzzTypes[int(which)%len(fuzzTypes)]
		var b bytes.Buffer
		fill(&b, typ, int(depth)%12, int(count), 32<<10, pick)
		text := b.Bytes()
		cost := jsonbudget.CostOf(text, typ)
		if cost < 0 {
			t.Fatalf("the walk refused %d bytes of valid JSON", len(text))
		}
		v := reflect.New(typ)
		json.Unmarshal(text, v.Interface()) // types' caches filled
		v = reflect.New(typ)
		got := allocated(func() { json.Unmarshal(text, v.Interface()) })
		if got > uint64(2*cost)+64<<10 {
			t.Fatalf("%s, %d bytes: decoding allocated %d, the walk counted %d", typ, len(text), got, cost)
		}
		err := jsonbudget.Check(text, typ, cost-1)
		if cost > 0 && !errors.As(err, new(*jsonbudget.Error)) {
			t.Fatalf("a budget of one byte less than the cost: %v", err)
		}
	})
}

// FuzzCheck fuzzes the walk with bytes: whatever the text, Check returns
// without panicking, for every type linerate reads, and what it lets
// through within the budget json.Unmarshal decodes or refuses with its
// own error.
func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"intervals":[{},{"cpu":[{}]}],"spec":{"duration":1}}`))
	f.Add([]byte(`{"\u212Aind":"x","COMMAND":["",""],"result":{}}`))
	f.Add([]byte(`[[[[{"a":[1,"2",null,true]}]]]]`))
	f.Add([]byte(`{"rounds":[{"flows":[{"samples":[{}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, typ := range fuzzTypes {
			if err := jsonbudget.Check(data, typ, jsonbudget.Limit(len(data))); err != nil {
				if !errors.As(err, new(*jsonbudget.Error)) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("%s: %v", typ, err)
				}
				continue
			}
			_ = json.Unmarshal(data, reflect.New(typ).Interface())
		}
	})
}
