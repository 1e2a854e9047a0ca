package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteFiles makes a tree of small files under root (paths with '/').
func WriteFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ReadFiles reads the named files under root, trimmed.
func ReadFiles(t testing.TB, root string, names []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(n)))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = strings.TrimSpace(string(b))
	}
	return out
}
