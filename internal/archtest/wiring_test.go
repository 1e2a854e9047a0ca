package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"strings"
	"testing"
)

// maxWiringLines is the most lines a function of cmd/linerate may have,
// from its func line to its closing brace: a command is flags, one call
// into the package that owns the work, and printing; a function longer
// than this holds logic that belongs in that package.
const maxWiringLines = 60

// longWiringExempt are the functions still longer, each with its reason.
// Shrink it; never grow it.
var longWiringExempt = map[string]string{
	// Being rewritten by another change (tune auto's and diagnose's
	// statistics); they go when it lands.
	"tune_auto.go:run":            "being rewritten",
	"tune_auto.go:newTuneAutoCmd": "being rewritten",
	"diagnose.go:resultEvidence":  "being rewritten",
}

// TestWiringFunctionsAreShort fails on a function of cmd/linerate longer
// than maxWiringLines, naming it and its length.
func TestWiringFunctionsAreShort(t *testing.T) {
	goSources(t, func(file string, src []byte) {
		if path.Dir(file) != "cmd/linerate" {
			return
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, file, src, 0)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			return
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			key := path.Base(file) + ":" + fd.Name.Name
			if n > maxWiringLines && longWiringExempt[key] == "" {
				t.Errorf("%s:%d: %s is %d lines, more than %d: move its logic to the package that owns it",
					file, fset.Position(fd.Pos()).Line, fd.Name.Name, n, maxWiringLines)
			}
		}
	})
	for key := range longWiringExempt {
		if !strings.Contains(key, ":") {
			t.Errorf("exemption %q: want FILE:FUNC", key)
		}
	}
}
