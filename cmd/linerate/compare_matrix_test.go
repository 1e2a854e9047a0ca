package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"linerate/plan"
	"linerate/results"
)

// TestCompareMatrices: linerate compare between two plan results with a
// matrix (as run --json writes them) pairs their cells by key: each
// one's mean, the change, and whether it is beyond the two intervals.
func TestCompareMatrices(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, cells map[string][]float64) string {
		var res plan.Result
		res.Schema, res.Plan = results.ResultSchema, "m.yaml"
		for _, key := range []string{"set a-box", "set b-box", "set a-box+b-box"} {
			bps, ok := cells[key]
			if !ok {
				continue
			}
			c := plan.CellResult{Key: key, Flows: strings.Split(strings.TrimPrefix(key, "set "), "+")}
			for _, v := range bps {
				c.Rounds = append(c.Rounds, results.FlowSet{Total: results.Totals{ReceivedBPS: v}})
			}
			c.Summarize()
			res.Matrix = append(res.Matrix, c)
		}
		b, err := json.Marshal(&res)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.json", map[string][]float64{"set a-box": {940e6, 930e6, 950e6}, "set b-box": {900e6, 905e6, 910e6}, "set a-box+b-box": {1.8e9, 1.81e9, 1.79e9}})
	b := write("b.json", map[string][]float64{"set a-box": {941e6, 935e6, 945e6}, "set a-box+b-box": {2.2e9, 2.21e9, 2.19e9}})
	cmd := newCompareCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{a, b, "--history-dir", dir})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("compare: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"set a-box        940.00 Mb/s  940.33 Mb/s  +0.0 %   within the intervals",
		"set b-box        905.00 Mb/s  -",
		"only in A",
		"set a-box+b-box  1.80 Gb/s    2.20 Gb/s    +22.2 %  higher, beyond the intervals",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("compare lacks %q:\n%s", want, out.String())
		}
	}
}
