package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

// trafficFloors are the floors of the traffic tree, the lowest first
// (docs/architecture.md, "The traffic tree"): a package of the tree
// imports only packages of the tree on a floor below its own.
var trafficFloors = [][]string{
	{"linerate/traffic/sock"},
	{"linerate/traffic/session"},
	{"linerate/traffic/udp", "linerate/traffic/tcp", "linerate/traffic/meter", "linerate/traffic/session/sessiontest"},
	{"linerate/traffic/frame", "linerate/traffic/rr"},
	{"linerate/traffic"},
}

// trafficImports lists each package of the traffic tree with the
// packages of the tree it imports (tests left out), with go list.
func trafficImports(t *testing.T) map[string][]string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go binary to list imports with: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "linerate/traffic/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list linerate/traffic/...: %v\n%s", err, out)
	}
	tree := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var in []string
		for _, imp := range f[1:] {
			if imp == "linerate/traffic" || strings.HasPrefix(imp, "linerate/traffic/") {
				in = append(in, imp)
			}
		}
		tree[f[0]] = in
	}
	return tree
}

// TestTrafficImportsPointDown fails on an import inside the traffic tree
// that runs sideways or back up its floors, on a package of the tree the
// floors do not place, and on a floor's package the tree does not have:
// the table and the tree stay one.
func TestTrafficImportsPointDown(t *testing.T) {
	floor := map[string]int{}
	for i, ps := range trafficFloors {
		for _, p := range ps {
			floor[p] = i
		}
	}
	tree := trafficImports(t)
	for p := range floor {
		if _, ok := tree[p]; !ok {
			t.Errorf("%s is on floor %d but the tree has no such package", p, floor[p]+1)
		}
	}
	for p, imports := range tree {
		f, ok := floor[p]
		if !ok {
			t.Errorf("%s has no floor: place it in trafficFloors and docs/architecture.md", p)
			continue
		}
		for _, imp := range imports {
			if g, ok := floor[imp]; ok && g >= f {
				t.Errorf("%s (floor %d) imports %s (floor %d): imports point down the floors", p, f+1, imp, g+1)
			}
		}
	}
}
