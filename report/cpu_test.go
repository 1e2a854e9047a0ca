package report

import (
	"bytes"
	"testing"

	"linerate/results"
)

// TestCPULines: each end's CPU says whose it is, linerate's process with
// its cost per Mpkt and the machine's busy time with its share; a result
// written before the process was measured says so, and shows no machine
// figure per Mpkt as if it were the cost.
func TestCPULines(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	sum := results.Summary{
		CPUSeconds:               results.CPUCost{Client: f(6.94), Server: f(2)},
		CPUSecondsPerMpkt:        results.CPUCost{Client: f(231), Server: f(66)},
		MachineCPUBusy:           results.CPUCost{Client: f(0.347)},
		ProcessCPUSeconds:        results.CPUCost{Client: f(0.45)},
		ProcessCPUSecondsPerMpkt: results.CPUCost{Client: f(15)},
	}
	var b bytes.Buffer
	CPULines(&b, sum, "Mpkt")
	want := "cpu       client: linerate process 0.45 CPU-s, 15.000 s/Mpkt; machine 6.94 CPU-s busy (34.7 % of its CPUs)\n" +
		"          server: linerate process not measured; machine 2.00 CPU-s busy\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
