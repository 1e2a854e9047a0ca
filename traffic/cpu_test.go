package traffic

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"linerate/wire"
)

// TestCPUWhose runs a slow UDP test while another process burns a CPU of
// the same machine: linerate's own process figure (the test binary, which
// is both ends here) stays far below the machine's busy time, which holds
// the burner, and the JSON names each.
func TestCPUWhose(t *testing.T) {
	l := newLab(t, &Server{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A shell's builtin loop: one process, no children, killed with the
	// test (and by the context's deadline at the latest).
	burn := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
	if err := burn.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = burn.Process.Kill()
		_ = burn.Wait()
	})
	res, err := Run(context.Background(), l.config(udpSpec(3*time.Second, wire.Rate{PPS: 5000})))
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	for _, end := range []struct {
		name             string
		proc, mach, busy *float64
		perMpkt          *float64
	}{{"client", s.ProcessCPUSeconds.Client, s.CPUSeconds.Client, s.MachineCPUBusy.Client, s.ProcessCPUSecondsPerMpkt.Client},
		{"server", s.ProcessCPUSeconds.Server, s.CPUSeconds.Server, s.MachineCPUBusy.Server, s.ProcessCPUSecondsPerMpkt.Server}} {
		if end.proc == nil || end.mach == nil || end.busy == nil || end.perMpkt == nil {
			t.Fatalf("%s: process %v, machine %v, busy %v, process per Mpkt %v: want all four", end.name, end.proc, end.mach, end.busy, end.perMpkt)
		}
		t.Logf("%s: process %.3f CPU-s (%.3f s/Mpkt), machine %.3f CPU-s (%.3f busy)", end.name, *end.proc, *end.perMpkt, *end.mach, *end.busy)
		// The burner alone keeps one CPU busy over the whole window.
		if *end.proc <= 0 || 2**end.proc >= *end.mach {
			t.Errorf("%s: process %.3f CPU-s against the machine's %.3f: want the process far below a machine that burns a CPU besides", end.name, *end.proc, *end.mach)
		}
		if want := *end.proc / float64(s.SentPackets+s.ReceivedPackets) * 1e6; !near(*end.perMpkt, want) {
			t.Errorf("%s: %.3f s/Mpkt, want the process's %.3f", end.name, *end.perMpkt, want)
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary map[string]map[string]*float64 `json:"summary"`
	}
	_ = json.Unmarshal(b, &doc) // the summary's other fields are not maps of numbers
	for _, k := range []string{"process_cpu_seconds", "process_cpu_seconds_per_mpkt", "cpu_seconds", "machine_cpu_busy"} {
		if v := doc.Summary[k]; v["client"] == nil || v["server"] == nil {
			t.Errorf("summary.%s = %v, want client and server", k, v)
		}
	}
}

func near(a, b float64) bool { return a == b || (a-b)/b < 1e-9 && (b-a)/b < 1e-9 }
