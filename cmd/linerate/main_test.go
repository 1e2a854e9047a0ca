package main

import (
	"os"
	"testing"
)

// TestMain gives the tests, and the linerate binaries they start, a run
// history of their own: results they save never land in the machine's.
func TestMain(m *testing.M) {
	hist, err := os.MkdirTemp("", "linerate-history-")
	if err != nil {
		panic(err)
	}
	os.Setenv("LINERATE_HISTORY_DIR", hist)
	code := m.Run()
	os.RemoveAll(hist)
	os.Exit(code)
}
