package iperf3

import (
	"os"
	"testing"

	"linerate/internal/testenv"
)

// TestMain removes the linerate binary a test built (testenv.Linerate).
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveLinerate()
	os.Exit(code)
}
