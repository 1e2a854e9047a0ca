package plan

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"linerate/ceiling"
	"linerate/internal/confidence"
	"linerate/internal/units"
	"linerate/results"
	"linerate/wire"
)

// Matrix sweeps a plan: its flows in sets (each alone, every combination
// of k of them, or sets the plan lists by flow name), each set across the
// sizes, MSS and rates given, each such cell run for Rounds rounds.
type Matrix struct {
	// Sets are the flow sets, each a list of flow names in plan order;
	// with neither combinations: nor sets:, one set of every flow.
	Sets [][]string
	// Sizes apply to the UDP flows of a set, MSS to the TCP ones, Rates
	// to every flow; empty: the flows' own.
	Sizes []int
	MSS   []int
	Rates []Rate
	// Rounds is how many times each cell runs (default: the plan's).
	Rounds int
	// Tune is a tune plan file (`linerate tune plan -o`, an absolute
	// path; the caller reads it): with it every cell runs twice, first
	// all of them as the system is ("tune off"), then all of them again
	// with the plan applied ("tune on"), rolled back after. TuneLine is
	// where the file names it.
	Tune     string
	TuneLine int
	Line     int
}

// The halves of a matrix with a tune plan: a cell's Tune.
const (
	TuneOff = "off"
	TuneOn  = "on"
)

// Rate is a rate as a matrix names it: the text it was given as (a
// cell's key) and its value.
type Rate struct {
	Text string
	wire.Rate
}

// Cell is one combination of a matrix: a set of flows at one size, MSS
// and rate (zero where the matrix does not sweep them).
type Cell struct {
	// Key names the cell, the same in every matrix that has it: "set
	// a-b+c-d size 64 mss 88 rate 100Mbps", the swept parts only.
	Key   string
	Flows []string
	Size  int
	MSS   int
	Rate  *Rate
	// Tune is TuneOff or TuneOn in a matrix with a tune plan, else "".
	Tune string
}

var matrixKeys = []string{"combinations", "sets", "sizes", "mss", "rates", "rounds", "tune"}

// maxCells bounds a matrix: combinations: all over many flows grows as 2^n.
const maxCells = 4096

// named says whether a flow already has name.
func (pl *Plan) named(name string) bool {
	return slices.ContainsFunc(pl.Flows, func(f Flow) bool { return f.Name == name })
}

// flowNames are the distinct flow names in plan order (a flow with
// several addresses is one name).
func (pl *Plan) flowNames() []string {
	var out []string
	for _, f := range pl.Flows {
		if !slices.Contains(out, f.Name) {
			out = append(out, f.Name)
		}
	}
	return out
}

func (p *parser) matrix(f *field, pl *Plan) (*Matrix, error) {
	fs, err := p.mapping(f.v, "matrix", matrixKeys)
	if err != nil {
		return nil, err
	}
	m := &Matrix{Rounds: pl.Rounds, Line: f.k.Line}
	names := pl.flowNames()
	var sweep bool
	for _, mf := range fs {
		switch mf.key {
		case "combinations", "sets":
			read := p.combinations
			if mf.key == "sets" {
				read = p.sets
			}
			sets, err := read(mf.v, names)
			if err != nil {
				return nil, err
			}
			m.addSets(sets)
			sweep = true
		case "sizes", "mss":
			low, what := ceiling.MinFrameBytes, "matrix: sizes"
			if mf.key == "mss" {
				low, what = 88, "matrix: mss"
			}
			vs, err := p.integers(mf.v, what, low)
			if err != nil {
				return nil, err
			}
			proto := wire.UDP
			if mf.key == "mss" {
				proto, m.MSS = wire.TCP, vs
			} else {
				m.Sizes = vs
			}
			if !slices.ContainsFunc(pl.Flows, func(fl Flow) bool { return fl.Proto == proto }) {
				return nil, p.errorf(mf.k, "%s: no %s flow to apply it to", what, proto)
			}
		case "rates":
			items, err := p.list(mf.v, "matrix: rates")
			if err != nil {
				return nil, err
			}
			for _, it := range items {
				s, err := p.scalar(it, "matrix: rates")
				if err != nil {
					return nil, err
				}
				r, err := wire.ParseRate(s)
				if err != nil {
					return nil, p.errorf(it, "matrix: rates: %v", err)
				}
				if slices.ContainsFunc(m.Rates, func(o Rate) bool { return o.Text == s }) {
					return nil, p.errorf(it, "matrix: rates: %s given twice", s)
				}
				m.Rates = append(m.Rates, Rate{Text: s, Rate: r})
			}
		case "tune":
			s, err := p.scalar(mf.v, "matrix: tune")
			if err != nil {
				return nil, err
			}
			m.Tune, m.TuneLine = absPath(filepath.Dir(p.file), s), mf.v.Line
		case "rounds":
			if m.Rounds, err = p.integer(mf.v, "matrix: rounds"); err != nil {
				return nil, err
			}
			if m.Rounds < 1 || m.Rounds > maxRounds {
				return nil, p.errorf(mf.v, "matrix: rounds %d: want 1 to %d", m.Rounds, maxRounds)
			}
		}
	}
	if !sweep {
		m.Sets = [][]string{names}
	}
	// Counted from the axes before any cell is made: 300 sizes, rates and
	// MSS each are 27 million cells, a few lines of YAML.
	if n, ok := m.count(); !ok {
		return nil, p.errorf(f.k, "matrix: %s cells: at most %d (fewer combinations, sizes, mss or rates)", n, maxCells)
	}
	cells := m.Cells()
	// Every flow of every cell, as the agents will check it.
	for _, c := range cells {
		cp := pl.CellPlan(c)
		for i := range cp.Flows {
			fl := &cp.Flows[i]
			sp := fl.Spec(pl.Duration, pl.Warmup, fl.IPv4())
			if err := sp.Check(); err != nil {
				return nil, p.errorf(f.k, "matrix: cell %s: flow %d: %v", c.Key, fl.Index, err)
			}
		}
	}
	return m, nil
}

// count is how many cells the matrix has, as text, and whether that is
// at most maxCells: the product of its axes, multiplied in floating point
// so that no product of list lengths can overflow.
func (m *Matrix) count() (string, bool) {
	n := float64(len(m.Sets))
	for _, axis := range []int{len(m.Sizes), len(m.MSS), len(m.Rates)} {
		n *= float64(max(axis, 1))
	}
	if m.Tune != "" {
		n *= 2
	}
	return strconv.FormatFloat(n, 'f', -1, 64), n <= maxCells
}

// addSets adds the sets not already there.
func (m *Matrix) addSets(sets [][]string) {
	for _, s := range sets {
		if !slices.ContainsFunc(m.Sets, func(o []string) bool { return slices.Equal(o, s) }) {
			m.Sets = append(m.Sets, s)
		}
	}
}

// combinations reads combinations: K, [K, ...] or all (every K from 1 to
// the number of flows), and makes every set of K flows for each K.
func (p *parser) combinations(n *yaml.Node, names []string) ([][]string, error) {
	var ks []int
	if n.Kind == yaml.ScalarNode && n.Value == "all" {
		for k := 1; k <= len(names); k++ {
			ks = append(ks, k)
		}
	} else {
		var err error
		if ks, err = p.integers(n, "matrix: combinations", 1); err != nil {
			return nil, err
		}
	}
	var out [][]string
	total := 0.0
	for i, k := range ks {
		if k > len(names) {
			return nil, p.errorf(n, "matrix: combinations %d: the plan has %d flows", k, len(names))
		}
		// Counted before the sets are made, over every K given.
		c := binomial(len(names), k)
		if total += c; total > maxCells {
			return nil, p.errorf(n, "matrix: combinations %s of %d flows: %.0f sets, at most %d", strings.Trim(fmt.Sprint(ks[:i+1]), "[]"), len(names), total, maxCells)
		}
		out = append(out, Combinations(names, k)...)
	}
	return out, nil
}

func binomial(n, k int) float64 {
	c := 1.0
	for i := range k {
		c = c * float64(n-i) / float64(i+1)
	}
	return c
}

// Combinations are the sets of k of names, each in the order of names,
// the sets in lexicographic order of their positions.
func Combinations(names []string, k int) [][]string {
	var out [][]string
	idx := make([]int, k)
	var walk func(pos, from int)
	walk = func(pos, from int) {
		if pos == k {
			set := make([]string, k)
			for i, j := range idx {
				set[i] = names[j]
			}
			out = append(out, set)
			return
		}
		for j := from; j <= len(names)-(k-pos); j++ {
			idx[pos] = j
			walk(pos+1, j+1)
		}
	}
	walk(0, 0)
	return out
}

// sets reads sets: [[a-b], [a-b, c-d]]: lists of flow names.
func (p *parser) sets(n *yaml.Node, names []string) ([][]string, error) {
	items, err := p.list(n, "matrix: sets")
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, it := range items {
		set, err := p.words(it, "matrix: sets")
		if err != nil {
			return nil, err
		}
		var ordered []string
		for _, name := range names {
			if slices.Contains(set, name) {
				ordered = append(ordered, name)
			}
		}
		for i, name := range set {
			if !slices.Contains(names, name) {
				return nil, p.errorf(it, "matrix: sets: no flow named %s (flows: %s)", name, strings.Join(names, ", "))
			}
			if slices.Contains(set[:i], name) {
				return nil, p.errorf(it, "matrix: sets: %s given twice in a set", name)
			}
		}
		out = append(out, ordered)
	}
	return out, nil
}

// list is a non-empty YAML list.
func (p *parser) list(n *yaml.Node, what string) ([]*yaml.Node, error) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return nil, p.errorf(n, "%s: want a list, not %s", what, kindOf(n))
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = resolve(c)
	}
	return out, nil
}

// integers is one whole number or a list of them, each at least low and
// none twice.
func (p *parser) integers(n *yaml.Node, what string, low int) ([]int, error) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		var err error
		if items, err = p.list(n, what); err != nil {
			return nil, err
		}
	}
	var out []int
	for _, it := range items {
		v, err := p.integer(it, what)
		if err != nil {
			return nil, err
		}
		if v < low {
			return nil, p.errorf(it, "%s %d: want at least %d", what, v, low)
		}
		if slices.Contains(out, v) {
			return nil, p.errorf(it, "%s: %d given twice", what, v)
		}
		out = append(out, v)
	}
	return out, nil
}

// Cells are the matrix's combinations: every set at every size, MSS and
// rate, in that order of nesting; with a tune plan, all of them without
// it, then all of them again with it.
func (m *Matrix) Cells() []Cell {
	cells := m.cells()
	if m.Tune == "" {
		return cells
	}
	out := make([]Cell, 0, 2*len(cells))
	for _, half := range []string{TuneOff, TuneOn} {
		for _, c := range cells {
			c.Tune = half
			c.Key = c.key()
			out = append(out, c)
		}
	}
	return out
}

// cells are the combinations of one half.
func (m *Matrix) cells() []Cell {
	sizes, msss := orZero(m.Sizes), orZero(m.MSS)
	rates := []*Rate{nil}
	if len(m.Rates) > 0 {
		rates = rates[:0]
		for i := range m.Rates {
			rates = append(rates, &m.Rates[i])
		}
	}
	var out []Cell
	for _, set := range m.Sets {
		for _, size := range sizes {
			for _, mss := range msss {
				for _, r := range rates {
					c := Cell{Flows: set, Size: size, MSS: mss, Rate: r}
					c.Key = c.key()
					out = append(out, c)
				}
			}
		}
	}
	return out
}

func orZero(v []int) []int {
	if len(v) == 0 {
		return []int{0}
	}
	return v
}

func (c *Cell) key() string {
	rate := ""
	if c.Rate != nil {
		rate = c.Rate.Text
	}
	return cellKey(c.Flows, c.Size, c.MSS, rate, c.Tune)
}

// cellKey is a cell's key: its set and, when it has one, its variant.
func cellKey(flows []string, size, mss int, rate, tune string) string {
	return strings.TrimSpace(setKey(flows) + " " + variantKey(size, mss, rate, tune))
}

func setKey(flows []string) string { return "set " + strings.Join(flows, "+") }

// variantKey is what a cell sweeps besides its set: "size 64 mss 88 rate
// 1G tune on", the parts swept only.
func variantKey(size, mss int, rate, tune string) string {
	var parts []string
	if size > 0 {
		parts = append(parts, "size "+strconv.Itoa(size))
	}
	if mss > 0 {
		parts = append(parts, "mss "+strconv.Itoa(mss))
	}
	if rate != "" {
		parts = append(parts, "rate "+rate)
	}
	if tune != "" {
		parts = append(parts, "tune "+tune)
	}
	return strings.Join(parts, " ")
}

// CellPlan is the plan one cell runs: the cell's flows only, with its
// size on the UDP flows, its MSS on the TCP ones and its rate on all, for
// the matrix's rounds and without the matrix.
func (pl *Plan) CellPlan(c Cell) *Plan {
	cp := *pl
	cp.Matrix, cp.Flows = nil, nil
	if pl.Matrix != nil {
		cp.Rounds = pl.Matrix.Rounds
	}
	for _, f := range pl.Flows {
		if !slices.Contains(c.Flows, f.Name) {
			continue
		}
		switch {
		case f.Proto == wire.UDP && c.Size > 0:
			f.Size, f.Payload = c.Size, 0
		case f.Proto == wire.TCP && c.MSS > 0:
			f.MSS = c.MSS
		}
		if c.Rate != nil {
			f.Rate = c.Rate.Rate
		}
		cp.Flows = append(cp.Flows, f)
	}
	return &cp
}

// CellResult is what one cell of a matrix measured.
type CellResult struct {
	Key   string   `json:"key"`
	Flows []string `json:"flows"`
	Size  int      `json:"size,omitempty"`
	MSS   int      `json:"mss,omitempty"`
	Rate  string   `json:"rate,omitempty"`
	// Tune is "off" or "on" in a matrix with a tune plan.
	Tune   string            `json:"tune,omitempty"`
	Rounds []results.FlowSet `json:"rounds"`
	// Received is the total received bit rate over the rounds: the mean
	// and its 95 % confidence interval.
	Received Estimate `json:"received_bps"`
	// Ports are the goodput through each port the cell's flows go to,
	// over its rounds; Expected is what the cell's links and the plan's
	// ceiling let it carry. Both are absent from a result of before them.
	Ports    []CellPort    `json:"ports,omitempty"`
	Expected *CellExpected `json:"expected,omitempty"`
	Errors   []string      `json:"errors,omitempty"`
}

// CellPort is one port's goodput over a cell's rounds (UDP payload, TCP
// data): into its host and out of it, each a mean with its 95 % interval.
type CellPort struct {
	Host string `json:"host"`
	// Port names it: its name and addresses, or its addresses.
	Port string   `json:"port"`
	In   Estimate `json:"in_bps"`
	Out  Estimate `json:"out_bps"`
	// ExpectedIn is the goodput into it at line rate; 0 when unknown.
	ExpectedIn float64 `json:"expected_in_bps,omitempty"`
}

// CellExpected is the ceiling of a cell: its links' goodput at line rate
// (LineBps, 0 when a flow goes as fast as the path allows) and what is
// left after the plan's bus (LimitedBps, below LineBps only when the bus
// binds). BusApplies is false when a round showed that a port behind the
// bus is a virtual interface (a lab's), so the bus does not hold it; Why
// says which.
type CellExpected struct {
	LineBps    float64 `json:"line_bps,omitempty"`
	LimitedBps float64 `json:"limited_bps,omitempty"`
	Bus        bool    `json:"bus,omitempty"`
	BusApplies bool    `json:"bus_applies,omitempty"`
	Why        string  `json:"why,omitempty"`
}

// ExpectCell is a cell's expectation (cp is its CellPlan) with the plan's
// bus: a cell none of whose flows cross the bus (the CM4's eth0 alone) is
// held by its links only.
func (cp *Plan) ExpectCell(bus *ceiling.Bus) (*Expectation, error) {
	e, err := cp.Expect(bus)
	if err != nil && bus != nil {
		return cp.Expect(nil)
	}
	return e, err
}

// Measure fills Ports and Expected from the cell's rounds, cp being the
// plan the cell ran (CellPlan) and e its expectation.
func (c *CellResult) Measure(cp *Plan, e *Expectation) {
	if e == nil {
		return
	}
	per := make([][]PortGoodput, len(c.Rounds))
	for r := range c.Rounds {
		per[r] = cp.PortsOf(e, &c.Rounds[r])
	}
	c.Ports = nil
	for j, p := range e.Ports {
		var in, out []float64
		for r := range per {
			in, out = append(in, per[r][j].In), append(out, per[r][j].Out)
		}
		cport := CellPort{Host: p.Host, Port: p.PortName(), In: Mean95(in), Out: Mean95(out)}
		if p.In.Known {
			cport.ExpectedIn = p.In.GoodputBps
		}
		c.Ports = append(c.Ports, cport)
	}
	x := &CellExpected{Bus: e.Bus != nil, BusApplies: e.Bus != nil}
	if e.Total.Known {
		x.LineBps, x.LimitedBps = e.Total.GoodputBps, e.LimitedBps
	}
	for r := range c.Rounds {
		if ev := cp.BusOf(e, &c.Rounds[r]); !ev.Applies() {
			x.BusApplies, x.Why = false, ev.String()
			break
		}
	}
	c.Expected = x
}

// Summarize fills Received from the rounds' totals.
func (c *CellResult) Summarize() {
	var xs []float64
	for _, r := range c.Rounds {
		xs = append(xs, r.Total.ReceivedBPS)
	}
	c.Received = Mean95(xs)
}

// Estimate is a mean over rounds with a Student-t 95 % confidence
// interval: Mean ± Half. N is the number of rounds; with fewer than two,
// Half is 0 and there is no interval (HasInterval).
type Estimate struct {
	Mean float64 `json:"mean"`
	Half float64 `json:"ci95_half"`
	N    int     `json:"n"`
}

// HasInterval says whether the estimate has an interval (two rounds or more).
func (e Estimate) HasInterval() bool { return e.N >= 2 }

// Mean95 is the mean of xs and the half-width of its 95 % confidence
// interval, t(0.975, n−1) · s/√n, s the sample standard deviation.
func Mean95(xs []float64) Estimate {
	i := confidence.Mean(xs, 0.95)
	return Estimate{Mean: i.Mean, Half: i.Half, N: i.N}
}

// String is "Mean ± Half" in bit/s, for messages.
func (e Estimate) String() string {
	return fmt.Sprintf("%.0f ± %.0f (n=%d)", e.Mean, e.Half, e.N)
}

// Grid lays a matrix's cells out for a table or a heat map: a row per set
// ("a-b+c-d"), a column per variant ("size 64 rate 1G", "" when the
// matrix sweeps sets only), in the order the cells came.
type Grid struct {
	Rows, Cols []string
	// At holds the cell at [row][col], nil where the matrix has none.
	At [][]*CellResult
	// Max is the highest mean received rate of any cell.
	Max float64
}

// NewGrid lays out cells.
func NewGrid(cells []CellResult) *Grid {
	g := &Grid{}
	type pos struct{ r, c int }
	where := map[*CellResult]pos{}
	for i := range cells {
		c := &cells[i]
		row, col := strings.Join(c.Flows, "+"), variantKey(c.Size, c.MSS, c.Rate, c.Tune)
		r := slices.Index(g.Rows, row)
		if r < 0 {
			r, g.Rows = len(g.Rows), append(g.Rows, row)
		}
		k := slices.Index(g.Cols, col)
		if k < 0 {
			k, g.Cols = len(g.Cols), append(g.Cols, col)
		}
		where[c] = pos{r, k}
		g.Max = max(g.Max, c.Received.Mean)
	}
	g.At = make([][]*CellResult, len(g.Rows))
	for r := range g.At {
		g.At[r] = make([]*CellResult, len(g.Cols))
	}
	for c, p := range where {
		g.At[p.r][p.c] = c
	}
	return g
}

// Share is a cell's mean received rate over the grid's highest, 0 to 1:
// the heat map's colour.
func (g *Grid) Share(c *CellResult) float64 {
	if c == nil || g.Max <= 0 {
		return 0
	}
	return c.Received.Mean / g.Max
}

// TunePair is a cell of a matrix with a tune plan, without and with it.
type TunePair struct {
	// Key is the cell's key without its half: "set a size 64".
	Key     string
	Off, On *CellResult
}

// TunePairs pairs each "tune off" cell with its "tune on" cell, in the
// order of the off half; a cell whose other half did not run (the run was
// interrupted, the tune plan failed to apply) has nil there. None when
// the matrix had no tune plan.
func TunePairs(cells []CellResult) []TunePair {
	var out []TunePair
	at := map[string]int{}
	for i := range cells {
		c := &cells[i]
		if c.Tune == "" {
			continue
		}
		key := cellKey(c.Flows, c.Size, c.MSS, c.Rate, "")
		j, ok := at[key]
		if !ok {
			j, at[key] = len(out), len(out)
			out = append(out, TunePair{Key: key})
		}
		if c.Tune == TuneOn {
			out[j].On = c
		} else {
			out[j].Off = c
		}
	}
	return out
}

// Beyond judges the change from a to b: beyond the noise when the means
// are further apart than their two 95 % half-widths added; not judged
// without an interval on both sides.
func Beyond(a, b Estimate) string {
	if !a.HasInterval() || !b.HasInterval() {
		return "not judged: one round (no interval)"
	}
	d := b.Mean - a.Mean
	switch {
	case math.Abs(d) <= a.Half+b.Half:
		return "within the intervals"
	case d > 0:
		return "higher, beyond the intervals"
	}
	return "lower, beyond the intervals"
}

// Change is b's mean against a's in percent, "+4.2 %"; "-" when a's
// mean is 0.
func Change(a, b Estimate) string {
	if a.Mean <= 0 {
		return "-"
	}
	return units.SignedPercent((b.Mean-a.Mean)/a.Mean, 1)
}
