package tune

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"linerate/box"
	"linerate/diagnose"
	"linerate/internal/usage"
	"linerate/source"
	"linerate/source/ethtool"
)

// Every fix kind of diagnose is one tune builds, and tune builds no kind
// diagnose does not name.
func TestFixKindsHaveBuilders(t *testing.T) {
	for _, k := range diagnose.FixKinds() {
		if _, ok := builders[k]; !ok {
			t.Errorf("diagnose kind %s: tune has no builder", k)
		}
	}
	for k := range builders {
		if !slices.Contains(diagnose.FixKinds(), k) {
			t.Errorf("tune builds %s, which diagnose.FixKinds lacks", k)
		}
	}
}

// An unknown kind is bad input that callers can tell apart with errors.Is,
// wherever it comes in: --set, an item to build, a plan file.
func TestUnknownKind(t *testing.T) {
	_, setErr := ParseItem("warp:x=1")
	_, buildErr := Build(NewDir(t.TempDir()), Item{Kind: "warp", Target: "x", Value: "1"})
	_, fileErr := ReadPlanFile(strings.NewReader(`{"schema":1,"items":[{"kind":"warp","target":"x","value":"1"}]}`))
	for _, err := range []error{setErr, buildErr, fileErr} {
		if !errors.Is(err, ErrUnknownKind) || !usage.Is(err) || !strings.Contains(err.Error(), `unknown kind "warp"`) {
			t.Errorf("%v: want a usage error wrapping ErrUnknownKind", err)
		}
	}
}

// captureEthtool reads a capture's ethtool text; it has no setters, and
// nothing here applies a change.
type captureEthtool struct {
	*ethtool.Capture
	ethtool.Setter
}

// activeIRQBalance is a service manager on which irqbalance runs.
type activeIRQBalance struct{ Services }

func (activeIRQBalance) State(string) (ServiceState, error) {
	return ServiceState{Loaded: true, Active: "active"}, nil
}

// captureFindings runs every diagnose rule over a capture, with its
// samples.
func captureFindings(t *testing.T, dir string) []diagnose.Finding {
	t.Helper()
	src, err := source.OpenCapture(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	b, rates, err := box.CollectSampled(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := diagnose.Run(&diagnose.Evidence{Box: b, Rates: rates})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// Every fix the rules propose for the test captures builds, on the
// capture's own files and ethtool text, into actions; the advice kinds
// (boot, bench) build into Manual ones that are printed, never applied,
// and no other kind does. Nothing is applied.
func TestCaptureFixesBuild(t *testing.T) {
	const captures = "../testdata/captures"
	entries, err := os.ReadDir(captures)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[diagnose.FixKind]bool{}
	for _, e := range entries {
		dir := filepath.Join(captures, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "meta.json")); err != nil {
			continue // gen/ is the program that writes captures
		}
		t.Run(e.Name(), func(t *testing.T) {
			sys := NewDir(dir)
			sys.SetEthtool(captureEthtool{Capture: ethtool.NewCapture(filepath.Join(dir, "ethtool"))})
			sys.SetServices(activeIRQBalance{})
			for _, f := range captureFindings(t, dir) {
				for _, fx := range f.Fixes {
					seen[fx.Kind] = true
					it := Item{Kind: fx.Kind, Target: fx.Target, Value: fx.Value, Note: fx.Note}
					acts, err := Build(sys, it)
					if err != nil {
						t.Errorf("%s proposes %s, which tune does not build: %v", f.Rule, it, err)
						continue
					}
					for _, a := range acts {
						if c := a.Describe(); c.Manual != fx.Kind.Advice() {
							t.Errorf("%s proposes %s: a change with Manual %v, want %v for kind %s", f.Rule, it, c.Manual, fx.Kind.Advice(), fx.Kind)
						}
					}
				}
			}
		})
	}
	var missed []string
	for _, k := range diagnose.FixKinds() {
		if !seen[k] {
			missed = append(missed, k.String())
		}
	}
	t.Logf("kinds no capture's findings propose (checked only by TestFixKindsHaveBuilders): %s", strings.Join(missed, ", "))
}
