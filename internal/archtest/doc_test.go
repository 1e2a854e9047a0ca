package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strings"
	"testing"
)

// docExemptDirs are the directories whose exported functions are not yet
// held to a doc comment: the traffic engine, being split by concern.
// Shrink it; never grow it for new code.
var docExemptDirs = []string{}

// stdInterfaces are methods of the standard library's interfaces (and
// pflag.Value's): their meaning is documented there, so an exported
// method of one of these names needs no comment of its own.
var stdInterfaces = []string{
	"String", "GoString", "Format", "Error", "Unwrap", "Is", "As",
	"MarshalJSON", "UnmarshalJSON", "MarshalText", "UnmarshalText",
	"Len", "Less", "Swap", "Read", "Write", "Close", "ServeHTTP",
	"Network", "LocalAddr", "RemoteAddr", "SetDeadline", "SetReadDeadline", "SetWriteDeadline",
	"Accept", "Addr", "Type", "Set",
}

// exempt reports whether path's package is outside the check.
func docExempt(dir string) bool {
	for _, d := range docExemptDirs {
		if dir == d || strings.HasPrefix(dir, d+"/") {
			return true
		}
	}
	return false
}

// TestExportedFunctionsHaveDocs: every exported function, and every
// exported method that implements no interface, says in a doc comment
// what its name cannot. A method of an interface declared in the module
// (diagnose.Rule's Check, tune.Action's Apply, ...) or in the standard
// library is documented there. The failure lists each package's
// undocumented functions.
func TestExportedFunctionsHaveDocs(t *testing.T) {
	type fn struct {
		dir, where, name string
		method           bool
	}
	var fns []fn
	implemented := map[string]bool{}
	for _, m := range stdInterfaces {
		implemented[m] = true
	}
	goSources(t, func(file string, src []byte) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if it, ok := n.(*ast.InterfaceType); ok {
				for _, m := range it.Methods.List {
					for _, name := range m.Names {
						implemented[name.Name] = true
					}
				}
			}
			return true
		})
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() || fd.Doc != nil {
				continue
			}
			if fd.Recv != nil && !exportedRecv(fd.Recv) {
				continue
			}
			fns = append(fns, fn{path.Dir(file), fset.Position(fd.Pos()).String(), fd.Name.Name, fd.Recv != nil})
		}
	})
	per := map[string][]string{}
	for _, f := range fns {
		if docExempt(f.dir) || (f.method && implemented[f.name]) {
			continue
		}
		per[f.dir] = append(per[f.dir], f.where+" "+f.name)
	}
	dirs := make([]string, 0, len(per))
	for d := range per {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		t.Errorf("package %s: %d exported functions without a doc comment:\n\t%s", d, len(per[d]), strings.Join(per[d], "\n\t"))
	}
}

// exportedRecv reports whether a method's receiver type is exported: a
// method of an unexported type is no one's API.
func exportedRecv(recv *ast.FieldList) bool {
	if len(recv.List) == 0 {
		return false
	}
	t := recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}
