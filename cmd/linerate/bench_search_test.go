package main

import (
	"encoding/json"
	"strings"
	"testing"

	"linerate/internal/usage"
)

func TestBenchSearchBadInput(t *testing.T) {
	to := []string{"bench", "udp", "--to", "127.0.0.1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--search", "fast"}, "--search \"fast\": want ndr, pdr or ndr,pdr"},
		{[]string{"--search", "ndr,ndr"}, "ndr given twice"},
		{[]string{"--search", "ndr", "--sizes", "63"}, "--sizes \"63\""},
		{[]string{"--search", "ndr", "--sizes", "64,huge"}, "--sizes \"64,huge\""},
		{[]string{"--search", "ndr", "--sizes", "64,imix,64:7,570:4,1518:1"}, "frame size imix given twice"},
		{[]string{"--search", "pdr", "--loss", "0.5"}, "--loss \"0.5\": want a percentage"},
		{[]string{"--search", "pdr", "--loss", "60%"}, "--loss 60 %: want at least 0"},
		{[]string{"--search", "ndr", "--precision", "0%"}, "--precision 0 %: want more than 0"},
		{[]string{"--search", "ndr", "--trial", "10ms"}, "--trial 10ms"},
		{[]string{"--search", "ndr", "--trial", "2s", "--max-trial", "1s"}, "--max-trial 1s: want at least the final trial's 2s"},
		{[]string{"--search", "ndr", "--rate", "10kpps"}, "drop --rate"},
		{[]string{"--search", "ndr", "-t", "5"}, "drop --duration"},
		{[]string{"--search", "ndr", "--size", "128"}, "--sizes, not --size"},
		{[]string{"--search", "ndr", "--json-stream"}, "give one"},
	} {
		args := append(append([]string(nil), to...), c.args...)
		_, err := runArgs(t, args...)
		if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want bad input saying %q", c.args, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error is not one line: %q", c.args, err)
		}
	}
}

// TestBenchSearchOnLoopback: a coarse search on loopback gives the JSON
// search table.
func TestBenchSearchOnLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	addr := serveLoopback(t)
	out, err := runArgs(t, "bench", "udp", "--to", addr, "--search", "ndr,pdr", "--sizes", "1518",
		"--precision", "20%", "--trial", "200ms", "--probe-interval", "0", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var r struct {
		Search []struct {
			Size   string           `json:"size"`
			NDR    float64          `json:"ndr_pps"`
			PDR    float64          `json:"pdr_pps"`
			NDRBps float64          `json:"ndr_bps"`
			Trials []map[string]any `json:"trials"`
		} `json:"search"`
	}
	// The progress lines on stderr come first.
	if i := strings.Index(out, "{"); i < 0 || json.Unmarshal([]byte(out[i:]), &r) != nil {
		t.Fatalf("no JSON result:\n%s", out)
	}
	if len(r.Search) != 1 || r.Search[0].Size != "1518" {
		t.Fatalf("search %+v", r.Search)
	}
	s := r.Search[0]
	t.Logf("loopback 1518 B: NDR %.0f, PDR %.0f pps in %d trials", s.NDR, s.PDR, len(s.Trials))
	if s.NDR <= 0 || s.PDR < s.NDR || s.NDRBps != s.NDR*1518*8 || len(s.Trials) < 2 {
		t.Errorf("search %+v", s)
	}
}
