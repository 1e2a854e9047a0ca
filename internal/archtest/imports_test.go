package archtest

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// floors are the packages that must not link the engine's kernel
// libraries. diagnose, report, report/page, live and plan join them once
// the traffic package no longer pulls those libraries in.
var floors = []string{
	"linerate/box",
	"linerate/ceiling",
	"linerate/ledger",
	"linerate/search",
}

// engine matches the import paths of the libraries that speak to the
// kernel: netlink (mdlayher's and vishvananda's) and cilium/ebpf.
var engine = regexp.MustCompile(`netlink|github\.com/cilium/ebpf`)

// TestFloorsDoNotLinkEngine lists each floor's dependencies with go list
// and fails on any that is a kernel library, naming the floor.
func TestFloorsDoNotLinkEngine(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go binary to list dependencies with: %v", err)
	}
	for _, p := range floors {
		out, err := exec.Command(gobin, "list", "-deps", p).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", p, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if engine.MatchString(dep) {
				t.Errorf("%s links %s", p, dep)
			}
		}
	}
}
