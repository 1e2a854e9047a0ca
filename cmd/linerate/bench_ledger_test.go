package main

import (
	"regexp"
	"testing"
)

// TestBenchTextLedgerOnLoopback: the text result ends with the drop ledger
// (loopback: both ends are one namespace).
func TestBenchTextLedgerOnLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	addr := serveLoopback(t)
	out, err := runArgs(t, "bench", "udp", "--to", addr, "--duration", "500ms",
		"--warmup", "0", "--rate", "4kpps", "--idle", "0", "--interval", "0")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Log("\n" + out)
	if !regexp.MustCompile(`(?m)^(no packets lost \([0-9,]+ sent, [0-9,]+ received\)|where the [0-9,]+ lost packets died)`).MatchString(out) {
		t.Error("no drop ledger in the text result")
	}
}
