package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the module's directory, two floors above this package.
const root = "../.."

// handPercent matches a percentage built by hand in a format string: a
// number verb followed by a percent sign, with or without a space.
var handPercent = regexp.MustCompile(`%[-+ #0-9.]*[fgde] ?%%`)

// percentExempt are the files that may still build a percentage by hand,
// each with its reason. Shrink it; never grow it for new code.
var percentExempt = map[string]string{
	"report/page/matrix.go": "a CSS colour (hsl), not a figure",
}

// percentExemptDirs are whole directories still exempt, for the same
// reason.
var percentExemptDirs = []string{}

// goSources calls fn with every non-test Go file of the module, by its
// slash path from the module's root.
func goSources(t *testing.T, fn func(path string, src []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+"/"))
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || (strings.HasPrefix(name, ".") && p != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fn(rel, src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPercentThroughUnits: a percentage people read is written by
// units.Percent, the one spelling ("4.1 %"), never by a format string.
func TestPercentThroughUnits(t *testing.T) {
	goSources(t, func(path string, src []byte) {
		if strings.HasPrefix(path, "internal/units/") || percentExempt[path] != "" {
			return
		}
		for _, d := range percentExemptDirs {
			if strings.HasPrefix(path, d) {
				return
			}
		}
		for i, line := range strings.Split(string(src), "\n") {
			if handPercent.MatchString(line) {
				t.Errorf("%s:%d: a percentage built by hand; write it with units.Percent: %s", path, i+1, strings.TrimSpace(line))
			}
		}
	})
}
