package page

import (
	"encoding/json"
	"strings"
	"testing"

	"linerate/history"
	"linerate/plan"
	"linerate/results"
)

// matrixRun is a plan run as a matrix: two sets at two sizes, one cell
// with three rounds, one that failed.
func matrixRun(t *testing.T) *history.Run {
	t.Helper()
	round := func(bps float64) results.FlowSet { return results.FlowSet{Total: results.Totals{ReceivedBPS: bps}} }
	cells := []plan.CellResult{
		{Key: "set a size 64", Flows: []string{"a"}, Size: 64, Rounds: []results.FlowSet{round(400e6), round(420e6), round(410e6)}},
		{Key: "set a size 1518", Flows: []string{"a"}, Size: 1518, Rounds: []results.FlowSet{round(940e6)}},
		{Key: "set a+b size 64", Flows: []string{"a", "b"}, Size: 64, Rounds: []results.FlowSet{round(800e6)}},
		{Key: "set a+b size 1518", Flows: []string{"a", "b"}, Size: 1518, Errors: []string{"b: unreachable"}},
	}
	for i := range cells {
		cells[i].Summarize()
	}
	data, err := json.Marshal(&plan.Result{Plan: "m.yaml", Matrix: cells})
	if err != nil {
		t.Fatal(err)
	}
	return &history.Run{Entry: history.Entry{ID: "20261127-0700-m", Kind: history.KindPlan}, Result: data}
}

func TestMatrixHeatMap(t *testing.T) {
	page := render(t, matrixRun(t))
	checkOffline(t, page)
	contains(t, page, "run as a matrix", "set a size 64", "set a+b size 1518", "b: unreachable", "± ", "size 1518", "a+b")
	if n := strings.Count(page, `<rect class="cell"`); n != 3 {
		t.Errorf("%d coloured cells, want 3", n)
	}
	if n := strings.Count(page, `<rect class="cell none"`); n != 1 {
		t.Errorf("%d empty cells, want 1 (the failed one)", n)
	}
	// The best cell (940 Mb/s) is the darkest.
	if !strings.Contains(page, `fill="hsl(212, 70%, 30%)"`) {
		t.Errorf("no cell at the darkest shade")
	}
}

// matrixTuneRun is a matrix with a tune plan: one set at one size, run
// without the plan and with it, three rounds each.
func matrixTuneRun(t *testing.T) *history.Run {
	t.Helper()
	round := func(bps float64) results.FlowSet { return results.FlowSet{Total: results.Totals{ReceivedBPS: bps}} }
	cells := []plan.CellResult{
		{Key: "set a size 64 tune off", Flows: []string{"a"}, Size: 64, Tune: plan.TuneOff, Rounds: []results.FlowSet{round(400e6), round(410e6), round(405e6)}},
		{Key: "set a size 64 tune on", Flows: []string{"a"}, Size: 64, Tune: plan.TuneOn, Rounds: []results.FlowSet{round(600e6), round(610e6), round(605e6)}},
	}
	for i := range cells {
		cells[i].Summarize()
	}
	data, err := json.Marshal(&plan.Result{Plan: "ab.yaml", Matrix: cells,
		Tune: &plan.TuneRun{File: "/etc/lr/rps.json", Applied: true, RolledBack: true}})
	if err != nil {
		t.Fatal(err)
	}
	return &history.Run{Entry: history.Entry{ID: "20261127-0710-ab", Kind: history.KindPlan}, Result: data}
}

func TestMatrixTunePage(t *testing.T) {
	page := render(t, matrixTuneRun(t))
	checkOffline(t, page)
	contains(t, page, "/etc/lr/rps.json", "tune on against off", "size 64 tune off", "size 64 tune on", "+49.4 %, higher, beyond the intervals")
	if n := strings.Count(page, `<rect class="cell"`); n != 2 {
		t.Errorf("%d coloured cells, want 2", n)
	}
}
