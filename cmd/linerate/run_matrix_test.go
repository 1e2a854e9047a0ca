package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRunMatrixStar runs a small matrix in a star lab of three peers with
// an agent in every node: each peer alone and all three at once, at two
// frame sizes (8 cells, one short round each). Every cell has a result
// for every flow in its set (read back from --csv), and the text shows
// the table and the heat map.
func TestRunMatrixStar(t *testing.T) {
	l := upAgentLab(t, "rm-", "star", "--ports", "3")
	p := filepath.Join(t.TempDir(), "matrix.yaml")
	os.WriteFile(p, []byte(`hosts:
  box: 10.231.1.1
  peer1: 10.231.1.2
  peer2: 10.231.2.2
  peer3: 10.231.3.2
defaults: {proto: udp, rate: 5kpps}
flows:
  - {from: peer1, to: box, address: 10.231.1.1}
  - {from: peer2, to: box, address: 10.231.2.1}
  - {from: peer3, to: box, address: 10.231.3.1}
matrix: {combinations: [1, 3], sizes: [128, 1024], rounds: 1}
duration: 500ms
warmup: 200ms
`), 0o644)
	r := l.exec("box", "linerate", "run", p, "--csv", "--no-save")
	if r.code != 0 {
		t.Fatalf("run --csv: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("csv: %v\n%s", err, r.stdout)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	perCell := map[string]int{}
	for _, row := range rows[1:] {
		got, _ := strconv.ParseUint(row[col["received_packets"]], 10, 64)
		bps, _ := strconv.ParseFloat(row[col["received_bps"]], 64)
		if row[col["error"]] != "" || got < 2000 {
			t.Errorf("cell %s flow %s: received %d (5 kpps for 0.5 s), error %q", row[col["cell"]], row[col["flow"]], got, row[col["error"]])
		}
		t.Logf("%-40s %-10s %6d packets %8.2f Mb/s", row[col["cell"]], row[col["flow"]], got, bps/1e6)
		perCell[row[col["cell"]]]++
	}
	want := map[string]int{
		"set peer1-box size 128": 1, "set peer1-box size 1024": 1, "set peer2-box size 128": 1, "set peer2-box size 1024": 1,
		"set peer3-box size 128": 1, "set peer3-box size 1024": 1,
		"set peer1-box+peer2-box+peer3-box size 128": 3, "set peer1-box+peer2-box+peer3-box size 1024": 3,
	}
	for k, n := range want {
		if perCell[k] != n {
			t.Errorf("cell %s: %d rows, want %d", k, perCell[k], n)
		}
	}
	if len(perCell) != len(want) {
		t.Errorf("cells %v", perCell)
	}

	r = l.exec("box", "linerate", "run", p, "--no-save")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"matrix: total received per cell", "set peer1-box size 1024", "heat map:", "SIZE 128", "peer1-box+peer2-box+peer3-box"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run's text lacks %q:\n%s", want, r.stdout)
		}
	}
	t.Logf("\n%s", r.stdout)
}
