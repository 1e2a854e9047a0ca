package plan

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const matrixHosts = `hosts:
  box: 10.0.0.1
  a: 10.0.0.2
  b: 10.0.0.3
  c: 10.0.0.4
flows:
  - {from: a, to: box, proto: udp}
  - {from: b, to: box, proto: udp, name: bee}
  - {from: c, to: box, proto: tcp}
rounds: 2
`

func TestMatrixForms(t *testing.T) {
	for _, tc := range []struct {
		matrix string
		keys   []string
		rounds int
	}{
		{"{combinations: 1}", []string{"set a-box", "set bee", "set c-box"}, 2},
		{"{combinations: [3]}", []string{"set a-box+bee+c-box"}, 2},
		{"{combinations: all, rounds: 5}", []string{"set a-box", "set bee", "set c-box", "set a-box+bee", "set a-box+c-box", "set bee+c-box", "set a-box+bee+c-box"}, 5},
		{"{sets: [[bee], [c-box, a-box]], sizes: [64, 1518]}", []string{"set bee size 64", "set bee size 1518", "set a-box+c-box size 64", "set a-box+c-box size 1518"}, 2},
		{"{sets: [a-box], mss: 536, rates: [10Mbps, 0]}", []string{"set a-box mss 536 rate 10Mbps", "set a-box mss 536 rate 0"}, 2},
		{"{combinations: 1, sets: [[a-box], [a-box, bee]]}", []string{"set a-box", "set bee", "set c-box", "set a-box+bee"}, 2},
		{"{sizes: 128}", []string{"set a-box+bee+c-box size 128"}, 2},
		// With a tune plan: every cell without it, then every cell with it.
		{"{combinations: 1, sizes: [64, 1518], tune: tuned.json}", []string{
			"set a-box size 64 tune off", "set a-box size 1518 tune off", "set bee size 64 tune off", "set bee size 1518 tune off", "set c-box size 64 tune off", "set c-box size 1518 tune off",
			"set a-box size 64 tune on", "set a-box size 1518 tune on", "set bee size 64 tune on", "set bee size 1518 tune on", "set c-box size 64 tune on", "set c-box size 1518 tune on"}, 2},
	} {
		pl, err := Parse("m.yaml", []byte(matrixHosts+"matrix: "+tc.matrix+"\n"))
		if err != nil {
			t.Errorf("%s: %v", tc.matrix, err)
			continue
		}
		var keys []string
		for _, c := range pl.Matrix.Cells() {
			keys = append(keys, c.Key)
		}
		if !slices.Equal(keys, tc.keys) || pl.Matrix.Rounds != tc.rounds {
			t.Errorf("%s: cells %q rounds %d, want %q %d", tc.matrix, keys, pl.Matrix.Rounds, tc.keys, tc.rounds)
		}
	}
}

func TestMatrixErrors(t *testing.T) {
	for _, tc := range []struct{ matrix, want string }{
		{"{combinations: 4}", "m.yaml:11: matrix: combinations 4: the plan has 3 flows"},
		{"{combinations: 0}", "m.yaml:11: matrix: combinations 0: want at least 1"},
		{"{combinations: some}", `m.yaml:11: matrix: combinations "some": want a whole number`},
		{"{sets: [[a-box, nope]]}", "m.yaml:11: matrix: sets: no flow named nope (flows: a-box, bee, c-box)"},
		{"{sets: [[a-box, a-box]]}", "m.yaml:11: matrix: sets: a-box given twice in a set"},
		{"{sizes: [64, 32]}", "m.yaml:11: matrix: sizes 32: want at least 64"},
		{"{sizes: [64, 64]}", "m.yaml:11: matrix: sizes: 64 given twice"},
		{"{mss: 40}", "m.yaml:11: matrix: mss 40: want at least 88"},
		{"{rates: [fast]}", "m.yaml:11: matrix: rates:"},
		{"{rounds: 0}", "m.yaml:11: matrix: rounds 0: want 1 to 1000"},
		{"{colour: red}", `m.yaml:11: matrix: unknown key "colour"`},
		{"\n  sets: 3", `m.yaml:12: matrix: sets: want a list, not "3"`},
		{"{tune: [a, b]}", `m.yaml:11: matrix: tune: want a value, not a list`},
	} {
		_, err := Parse("m.yaml", []byte(matrixHosts+"matrix: "+tc.matrix+"\n"))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %s", tc.matrix, err, tc.want)
		}
	}
	// A size sweep with no udp flow to apply it to.
	_, err := Parse("m.yaml", []byte("hosts: {a: 10.0.0.2, b: 10.0.0.3}\nflows: [{from: a, to: b, proto: tcp}]\nmatrix:\n  sizes: [64]\n"))
	if err == nil || err.Error() != "m.yaml:4: matrix: sizes: no udp flow to apply it to" {
		t.Errorf("sizes without udp: %v", err)
	}
	// Two flows may not share a name.
	_, err = Parse("m.yaml", []byte("hosts: {a: 10.0.0.2, b: 10.0.0.3}\nflows:\n  - {from: a, to: b, proto: tcp, name: x}\n  - {from: b, to: a, proto: tcp, name: x}\n"))
	if err == nil || err.Error() != "m.yaml:4: flow 2: name x given to another flow already" {
		t.Errorf("a name twice: %v", err)
	}
}

// TestCellPlan: a cell's plan holds its flows only, with the cell's size
// on udp flows, its MSS on tcp ones and its rate on all.
func TestCellPlan(t *testing.T) {
	pl, err := Parse("m.yaml", []byte(matrixHosts+"matrix: {sets: [[a-box, c-box]], sizes: [1518], mss: [536], rates: [1Mbps], rounds: 3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells := pl.Matrix.Cells()
	if len(cells) != 1 {
		t.Fatalf("%d cells", len(cells))
	}
	cp := pl.CellPlan(cells[0])
	if cp.Matrix != nil || cp.Rounds != 3 || len(cp.Flows) != 2 {
		t.Fatalf("cell plan: %+v", cp)
	}
	u, tc := cp.Flows[0], cp.Flows[1]
	if u.Size != 1518 || u.Payload != 0 || u.MSS != 0 || tc.MSS != 536 || tc.Size != 0 || u.Rate.BPS != 1e6 || tc.Rate.BPS != 1e6 {
		t.Errorf("udp %+v\ntcp %+v", u, tc)
	}
	if pl.Flows[0].Size != 0 || pl.Flows[2].MSS != 0 {
		t.Errorf("the plan's own flows changed: %+v", pl.Flows)
	}
}

func TestCombinations(t *testing.T) {
	got := Combinations([]string{"a", "b", "c", "d"}, 2)
	want := [][]string{{"a", "b"}, {"a", "c"}, {"a", "d"}, {"b", "c"}, {"b", "d"}, {"c", "d"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("%v", got)
	}
	if n := len(Combinations(make([]string, 5), 3)); n != 10 {
		t.Errorf("5 choose 3: %d", n)
	}
}

func TestMean95(t *testing.T) {
	e := Mean95([]float64{940e6, 930e6, 950e6})
	// s = 10e6, t(0.975, 2) = 4.3027: half = 4.3027 * 10e6 / sqrt(3).
	if e.Mean != 940e6 || math.Abs(e.Half-4.3027*10e6/math.Sqrt(3)) > 1e3 || e.N != 3 || !e.HasInterval() {
		t.Errorf("%+v", e)
	}
	if one := Mean95([]float64{5}); one.Mean != 5 || one.Half != 0 || one.HasInterval() {
		t.Errorf("one round: %+v", one)
	}
}

// A matrix's tune plan is a path relative to the plan; its cells pair up
// without and with it, by the rest of their key.
func TestMatrixTune(t *testing.T) {
	pl, err := Parse("/etc/lr/m.yaml", []byte(matrixHosts+"matrix: {combinations: 1, tune: ../tuned.json}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if pl.Matrix.Tune != "/etc/tuned.json" || pl.Matrix.TuneLine != 11 {
		t.Errorf("tune %q at line %d, want /etc/tuned.json at 11", pl.Matrix.Tune, pl.Matrix.TuneLine)
	}
	var res []CellResult
	for i, c := range pl.Matrix.Cells() {
		cr := CellResult{Key: c.Key, Flows: c.Flows, Tune: c.Tune, Received: Estimate{Mean: float64(i), N: 1}}
		// The last cell did not run (the run was interrupted).
		if i < 5 {
			res = append(res, cr)
		}
	}
	pairs := TunePairs(res)
	if len(pairs) != 3 {
		t.Fatalf("%d pairs, want 3: %+v", len(pairs), pairs)
	}
	for i, p := range pairs {
		if p.Off == nil || p.Off.Tune != TuneOff || p.Off.Received.Mean != float64(i) {
			t.Errorf("pair %s: off %+v", p.Key, p.Off)
		}
		if i < 2 && (p.On == nil || p.On.Tune != TuneOn || p.On.Received.Mean != float64(i+3)) {
			t.Errorf("pair %s: on %+v", p.Key, p.On)
		}
	}
	if pairs[0].Key != "set a-box" || pairs[2].On != nil {
		t.Errorf("pairs %q, last on %+v", pairs[0].Key, pairs[2].On)
	}
	if got := TunePairs(res[:0]); got != nil {
		t.Errorf("no cells: %+v", got)
	}
}

func TestBeyond(t *testing.T) {
	a, b := Estimate{Mean: 100, Half: 5, N: 3}, Estimate{Mean: 120, Half: 5, N: 3}
	for _, tc := range []struct {
		a, b       Estimate
		want, diff string
	}{
		{a, b, "higher, beyond the intervals", "+20.0 %"},
		{b, a, "lower, beyond the intervals", "-16.7 %"},
		{a, Estimate{Mean: 109, Half: 5, N: 3}, "within the intervals", "+9.0 %"},
		{a, Estimate{Mean: 300, N: 1}, "not judged: one round (no interval)", "+200.0 %"},
		{Estimate{}, a, "not judged: one round (no interval)", "-"},
	} {
		if got := Beyond(tc.a, tc.b); got != tc.want {
			t.Errorf("%v → %v: %q, want %q", tc.a, tc.b, got, tc.want)
		}
		if got := Change(tc.a, tc.b); got != tc.diff {
			t.Errorf("%v → %v: change %q, want %q", tc.a, tc.b, got, tc.diff)
		}
	}
}

// A matrix is counted from its axes before any cell is made: the issue's
// 4.8 KB plan of 300 sizes, rates and MSS (27 million cells, 4.7 GB and an
// out-of-memory crash when every cell was built first) is refused having
// allocated little more than its YAML, and so is a smaller one the old
// order could build (a million cells). Combinations are counted over
// every K given before any set is made.
func TestMatrixCountedFirst(t *testing.T) {
	axis := func(from, n int, unit string) string {
		var vs []string
		for i := range n {
			vs = append(vs, strconv.Itoa(from+i)+unit)
		}
		return "[" + strings.Join(vs, ", ") + "]"
	}
	for _, n := range []int{100, 300} {
		m := fmt.Sprintf("\n  sizes: %s\n  mss: %s\n  rates: %s\n", axis(64, n, ""), axis(88, n, ""), axis(1, n, "Mbps"))
		doc := []byte(matrixHosts + "matrix:" + m)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Parse("m.yaml", doc)
		runtime.ReadMemStats(&after)
		want := fmt.Sprintf("m.yaml:11: matrix: %d cells: at most 4096", n*n*n)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%d×%d×%d: %v, want %s", n, n, n, err, want)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
			t.Errorf("%d×%d×%d (%d bytes of YAML): %d MiB allocated before it was refused", n, n, n, len(doc), got>>20)
		}
	}
	var flows strings.Builder
	for i := range 14 {
		fmt.Fprintf(&flows, "  - {from: a, to: box, proto: udp, name: f%d}\n", i)
	}
	doc := "hosts: {box: 10.0.0.1, a: 10.0.0.2}\nflows:\n" + flows.String() + "matrix: {combinations: [1, 2, 3, 4, 5, 6]}\n"
	if _, err := Parse("m.yaml", []byte(doc)); err == nil || !strings.Contains(err.Error(), "matrix: combinations 1 2 3 4 5 6 of 14 flows: 6475 sets, at most 4096") {
		t.Errorf("combinations over 14 flows: %v", err)
	}
}
