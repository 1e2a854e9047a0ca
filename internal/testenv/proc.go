package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// PidsWithEnv lists the running processes whose environment holds kv
// ("LINERATE_LAB=demo"): what a test started in a lab, recorded or not.
func PidsWithEnv(t testing.TB, kv string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// A zombie's environment reads empty: it has ended.
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(append([]byte{0}, append(env, 0)...), []byte("\x00"+kv+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}
