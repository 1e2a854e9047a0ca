// Package archtest checks the shape of the module: which packages may link
// what (docs/architecture.md).
package archtest

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// readers are the packages that read what linerate measured or knows:
// none of them may link the traffic engine or a kernel library.
var readers = []string{
	"linerate/box",
	"linerate/ceiling",
	"linerate/ledger",
	"linerate/search",
	"linerate/results",
	"linerate/wire",
	"linerate/diagnose",
	"linerate/report",
	"linerate/report/page",
	"linerate/live",
	"linerate/plan",
}

// engine matches the import paths of the traffic engine (the whole
// traffic tree), the packages that run traffic or build labs, and the libraries that speak to the kernel:
// netlink (mdlayher's and vishvananda's) and cilium/ebpf.
var engine = regexp.MustCompile(`^linerate/traffic(/.*)?$|^linerate/(lab|fleet|autotune/drive)$|netlink|github\.com/cilium/ebpf`)

// deps lists a package's dependencies with go list.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go binary to list dependencies with: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

// TestReadersDoNotLinkEngine fails on any reader that links the engine or
// a kernel library, naming the reader and what it links.
func TestReadersDoNotLinkEngine(t *testing.T) {
	for _, p := range readers {
		for _, dep := range deps(t, p) {
			if engine.MatchString(dep) {
				t.Errorf("%s links %s", p, dep)
			}
		}
	}
}

// TestWireIsStandardLibrary: what travels between the ends needs nothing
// but the standard library (and the module's own number formatter and
// bad-input errors, which do too), so any implementation of the protocol
// can follow it.
func TestWireIsStandardLibrary(t *testing.T) {
	for _, dep := range deps(t, "linerate/wire") {
		first := strings.SplitN(dep, "/", 2)[0]
		if strings.Contains(first, ".") || (strings.HasPrefix(dep, "linerate/") && dep != "linerate/wire" && dep != "linerate/internal/units" && dep != "linerate/internal/usage") {
			t.Errorf("wire links %s", dep)
		}
	}
}
