package plan

import "testing"

// A cell that sends nothing through the plan's bus (the CM4's eth0 alone)
// is held by its links; its ports and ceiling are still worked out.
func TestExpectCellOffTheBus(t *testing.T) {
	pl, err := Load("../examples/cm4-matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var eth0 Cell
	for _, c := range pl.Matrix.Cells() {
		if c.Key == "set eth0" {
			eth0 = c
		}
	}
	cp := pl.CellPlan(eth0)
	if _, err := cp.Expect(pl.Ceiling.Bus); err == nil {
		t.Fatal("eth0 alone through the bus: no error; the test needs another cell")
	}
	e, err := cp.ExpectCell(pl.Ceiling.Bus)
	if err != nil || e.Bus != nil || len(e.Ports) != 1 || e.LimitedBps != e.Total.GoodputBps {
		t.Fatalf("ExpectCell: %v %+v", err, e)
	}
	var c CellResult
	c.Measure(cp, e)
	if len(c.Ports) != 1 || c.Expected == nil || c.Expected.Bus || c.Expected.LineBps < 941e6 {
		t.Errorf("measured %+v, expected %+v", c.Ports, c.Expected)
	}
}
