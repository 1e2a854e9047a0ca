package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var linerate struct {
	once sync.Once
	path string
	err  error
}

// Linerate builds cmd/linerate once per test binary, static and trimmed
// as make release builds it (a guest or an ssh session runs it without
// the host's C library), into bin/linerate of a directory of its own, and
// returns its path. TestMain removes it after the run with
// RemoveLinerate.
func Linerate(t testing.TB) string {
	t.Helper()
	linerate.once.Do(func() {
		dir, err := os.MkdirTemp("", "linerate-test-bin-")
		if err != nil {
			linerate.err = err
			return
		}
		p := filepath.Join(dir, "bin", "linerate")
		cmd := exec.Command("go", "build", "-trimpath", "-o", p, "linerate/cmd/linerate")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			linerate.err = fmt.Errorf("go build linerate/cmd/linerate: %v\n%s", err, out)
			return
		}
		linerate.path = p
	})
	if linerate.err != nil {
		t.Fatal(linerate.err)
	}
	return linerate.path
}

// RemoveLinerate removes what Linerate built, if it built anything; a
// package's TestMain calls it after m.Run.
func RemoveLinerate() {
	if linerate.path != "" {
		os.RemoveAll(filepath.Dir(filepath.Dir(linerate.path)))
	}
}
