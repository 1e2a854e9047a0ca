package results

import (
	"math"
	"testing"

	"linerate/box"
)

// TestCostWhose: each end's machine and linerate's process are apart.
// Two serve processes on one machine share the machine, counted once, but
// not a process: each one's time adds up. The cost per Mpkt is the
// process's. A server whose samples lack the process has none.
func TestCostWhose(t *testing.T) {
	rates := func(proc *box.ProcessUse) box.Rates {
		return box.Rates{Seconds: 2, CPU: []box.CPUUse{{ID: 0, Busy: 90}, {ID: 1, Busy: 60}}, Process: proc}
	}
	srv := func(target int, proc *box.ProcessUse) Sample {
		return Sample{Side: SideServer, Target: target, Rates: rates(proc)}
	}
	res := &Result{Samples: []Sample{srv(0, &box.ProcessUse{Busy: 10}), srv(1, &box.ProcessUse{Busy: 5})}, Targets: []TargetResult{
		{ServerID: "s1", Machine: "boot-a", Totals: Totals{ReceivedPackets: 1e6}}, {ServerID: "s2", Machine: "boot-a", Totals: Totals{ReceivedPackets: 1e6}},
	}}
	res.Summary.SentPackets = 2e6
	Cost(res, []box.Rates{rates(&box.ProcessUse{User: 15, System: 5, Busy: 20})}, "")
	s := res.Summary
	for _, c := range []struct {
		name string
		got  *float64
		want float64
	}{
		{"client process", s.ProcessCPUSeconds.Client, 0.4},
		{"client process per Mpkt", s.ProcessCPUSecondsPerMpkt.Client, 0.2},
		{"client machine", s.CPUSeconds.Client, 3},
		{"client machine busy", s.MachineCPUBusy.Client, 0.75},
		{"server process (two)", s.ProcessCPUSeconds.Server, 0.3},
		{"server process per Mpkt", s.ProcessCPUSecondsPerMpkt.Server, 0.15},
		{"server machine (once)", s.CPUSeconds.Server, 3},
		{"server machine busy", s.MachineCPUBusy.Server, 0.75},
	} {
		if c.got == nil || math.Abs(*c.got-c.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	res.Samples[1].Process = nil
	res.Summary = Summary{}
	Cost(res, nil, "")
	if p := res.Summary.ProcessCPUSeconds.Server; p != nil || res.Summary.CPUSeconds.Server == nil {
		t.Errorf("a server's samples without the process: process %v, machine %v; want none and the machine's", p, res.Summary.CPUSeconds.Server)
	}
}
