package report

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strings"
	"testing"

	"linerate/plan"
	"linerate/results"
)

func matrixCells(scale float64) []plan.CellResult {
	round := func(bps float64) results.FlowSet {
		return results.FlowSet{Total: results.Totals{ReceivedBPS: bps * scale},
			Flows: []results.FlowRun{{From: "a", To: []string{"10.0.0.1:7557"}, Result: &results.Result{Summary: results.Summary{Totals: results.Totals{ReceivedPackets: 10, ReceivedBPS: bps * scale}}}}}}
	}
	cells := []plan.CellResult{
		{Key: "set a-box", Flows: []string{"a-box"}, Rounds: []results.FlowSet{round(940e6), round(930e6), round(950e6)}},
		{Key: "set a-box+b-box", Flows: []string{"a-box", "b-box"}, Rounds: []results.FlowSet{round(1800e6), round(1810e6), round(1790e6)}},
	}
	for i := range cells {
		cells[i].Summarize()
	}
	return cells
}

func TestMatrixText(t *testing.T) {
	var b bytes.Buffer
	if err := Matrix(&b, matrixCells(1)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"set a-box+b-box  3", "1.80 Gb/s", "heat map", "██ 1.80 Gb/s", "▒▒ 940.00 Mb/s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
}

func TestMatrixCompare(t *testing.T) {
	var b bytes.Buffer
	a, c := matrixCells(1), matrixCells(1.2)
	c = append(c, plan.CellResult{Key: "set b-box"})
	if err := MatrixCompare(&b, a, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"set a-box  ", "+20.0 %  higher, beyond the intervals", "set b-box", "only in B"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	if err := MatrixCompare(&b, a, []plan.CellResult{{Key: "other"}}); err == nil {
		t.Error("no cell in common: no error")
	}
}

// A matrix with a tune plan: its table and heat map show both halves,
// then a row per cell with the change from off to on.
func TestMatrixTuneText(t *testing.T) {
	off, on := matrixCells(1), matrixCells(0.5)
	var cells []plan.CellResult
	for _, half := range []struct {
		name  string
		cells []plan.CellResult
	}{{plan.TuneOff, off}, {plan.TuneOn, on}} {
		for _, c := range half.cells {
			c.Tune, c.Key = half.name, c.Key+" tune "+half.name
			cells = append(cells, c)
		}
	}
	var b bytes.Buffer
	if err := Matrix(&b, cells); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"set a-box tune on", "TUNE OFF        TUNE ON", "tune: each cell without the tune plan and with it",
		"set a-box+b-box  1.80 Gb/s    900.00 Mb/s  -50.0 %  lower, beyond the intervals"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := Matrix(&b, off); err != nil || strings.Contains(b.String(), "TUNE") {
		t.Errorf("a matrix without a tune plan: %v\n%s", err, b.String())
	}
}

// TestPlanCSV: one row per cell, round and flow, read back by encoding/csv.
func TestPlanCSV(t *testing.T) {
	pl, err := plan.Parse("m.yaml", []byte("hosts: {box: 10.0.0.1, a: 10.0.0.2, b: 10.0.0.3}\nflows:\n  - {from: a, to: box, proto: udp}\n  - {from: b, to: box, proto: udp}\nmatrix: {sets: [[a-box], [a-box, b-box]]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := PlanCSV(&b, pl, &plan.Result{Matrix: matrixCells(1)}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+6 || rows[0][0] != "cell" || rows[0][len(rows[0])-1] != "received_bps" {
		t.Fatalf("%q", rows)
	}
	if r := rows[4]; r[0] != "set a-box+b-box" || r[1] != "1" || r[2] != "a-box" || r[len(r)-1] != "1.8e+09" {
		t.Errorf("row 4: %q", r)
	}
}

func TestBenchCSV(t *testing.T) {
	res := &results.Result{Targets: []results.TargetResult{{Target: "10.0.0.2:7557", Address: "10.0.0.2",
		Totals: results.Totals{}, Forward: &results.Totals{SentPackets: 5}, Reverse: &results.Totals{SentPackets: 7},
		RxQueues: &results.QueueStat{Packets: []uint64{3, 0, 2}}}}}
	var b bytes.Buffer
	if err := BenchCSV(&b, res); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 3 || rows[1][2] != "forward" || rows[2][2] != "reverse" || rows[2][4] != "7" {
		t.Errorf("%v %q", err, rows)
	}
	if last := len(rows[0]) - 1; err == nil && (rows[0][last] != "rx_queue_packets" || rows[1][last] != "3 0 2" || rows[2][last] != "") {
		t.Errorf("receive queues: %q", rows)
	}

	// A direction whose far end died: its loss is not counted, and the
	// CSV leaves it empty rather than write 0.
	res.Targets[0].Forward.LossNotCounted()
	b.Reset()
	if err := BenchCSV(&b, res); err != nil {
		t.Fatal(err)
	}
	rows, err = csv.NewReader(&b).ReadAll()
	lost := slices.Index(rows[0], "lost_packets")
	if err != nil || lost < 0 || rows[1][lost] != "" || rows[1][lost+1] != "" || rows[2][lost] != "0" {
		t.Errorf("loss not counted: %v %q", err, rows)
	}
}

// TestMatrixPortsAndCeiling: seed 000's question in a lab (a star shaped
// to 1G, five senders): each cell's ceiling beside its total, the
// goodput through each port, the plan's bus said not to apply when the
// ports behind it are veths, and the history's headline names the cells
// rather than "no round ran".
func TestMatrixPortsAndCeiling(t *testing.T) {
	est := func(v float64) plan.Estimate { return plan.Mean95([]float64{v, v}) }
	cells := matrixCells(1)
	cells[0].Ports = []plan.CellPort{{Host: "cm4", Port: "peer1 10.231.1.1", In: est(941e6), ExpectedIn: 941.5e6}}
	cells[0].Expected = &plan.CellExpected{LineBps: 941.5e6, LimitedBps: 941.5e6, Bus: true, BusApplies: true}
	cells[1].Ports = []plan.CellPort{{Host: "cm4", Port: "peer1 10.231.1.1", In: est(930e6), ExpectedIn: 941.5e6},
		{Host: "cm4", Port: "peer5 10.231.5.1", In: est(880e6), ExpectedIn: 941.5e6}}
	cells[1].Expected = &plan.CellExpected{LineBps: 4.71e9, LimitedBps: 4.03e9, Bus: true, Why: "cm4 peer1 (veth): virtual, on no PCIe bus"}
	var b bytes.Buffer
	if err := Matrix(&b, cells); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log(out)
	for _, want := range []string{"CEILING", "941.50 Mb/s", "4.71 Gb/s (4.03 Gb/s after the bus*)",
		"* the plan's bus does not apply here: cm4 peer1 (veth): virtual, on no PCIe bus",
		"per port: goodput received into each port", "CM4 PEER1", "CM4 PEER5", "930.00 Mb/s (941.50 Mb/s)", "880.00 Mb/s (941.50 Mb/s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q", want)
		}
	}
	h := Headline("plan", &plan.Result{Plan: "cm4-matrix-lab.yaml", Matrix: cells})
	if h != "cm4-matrix-lab.yaml: matrix, 2 of 2 cells ran: highest set a-box+b-box 1.80Gb/s, lowest set a-box 940.00Mb/s" {
		t.Errorf("headline %q", h)
	}
}
