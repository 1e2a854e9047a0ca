package lab

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
)

// TestPartialState: what a lab up killed before or while writing its
// first state may leave — a state file that is empty, cut short, not JSON
// or naming another lab, a temporary state without a state file, a lone
// lock — is a partial lab: List and Load work, Down removes it and leaves
// the state directory empty, and since it records nothing made, Up may
// also take the name over directly.
func TestPartialState(t *testing.T) {
	testenv.RequireRoot(t)
	d := Dir(t.TempDir())
	name := uniqueName()
	cleanupLab(t, d, name)
	first, err := Plan(Spec{Name: name, Topology: Pair})
	if err != nil {
		t.Fatal(err)
	}
	firstJSON, err := json.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	leave := map[string]map[string]string{
		"empty":          {".json": ""},
		"cut short":      {".json": `{"spec": {"name": "` + name},
		"not json":       {".json": "not json\n"},
		"someone else's": {".json": `{"spec": {"name": "someone-else"}}`},
		"temporary only": {".json.tmp": string(firstJSON), ".lock": ""},
		"lock only":      {".lock": ""},
	}
	write := func(files map[string]string) {
		t.Helper()
		for suffix, content := range files {
			if err := os.WriteFile(filepath.Join(string(d), name+suffix), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for what, files := range leave {
		write(files)
		labs, err := d.List()
		if err != nil || len(labs) != 1 || labs[0].Status() != "partial" || labs[0].Spec.Name != name {
			t.Fatalf("%s: List = %v, %v; want one partial lab", what, labs, err)
		}
		if !strings.Contains(labs[0].Summary(), "partial") {
			t.Errorf("%s: summary %q", what, labs[0].Summary())
		}
		if err := d.Down(name); err != nil {
			t.Fatalf("%s: Down: %v", what, err)
		}
		if ents, _ := os.ReadDir(string(d)); len(ents) > 0 {
			t.Errorf("%s: state directory after Down holds %v", what, ents)
		}
		write(files)
		if _, err := d.Up(ctx, Spec{Name: name, Topology: Pair}); err != nil {
			t.Fatalf("%s: Up over a partial lab that records nothing: %v", what, err)
		}
		if err := d.Down(name); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPartialStateUsesTemp: when the state file is unreadable but the
// temporary file of a save that was killed before its rename holds a
// journal, Down removes what that journal records.
func TestPartialStateUsesTemp(t *testing.T) {
	l, d := newLab(t, Spec{Topology: Router})
	name := l.Spec.Name
	b, err := os.ReadFile(d.statePath(name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.statePath(name)+".tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.statePath(name), b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := d.Load(name)
	if err != nil || p.Status() != "partial" || len(p.Objects) != len(l.Objects) {
		t.Fatalf("Load: %v, status %s, %d objects; want partial with the %d of the temporary file", err, p.Status(), len(p.Objects), len(l.Objects))
	}
	if err := p.Do("lan", func() error { return nil }); err == nil {
		t.Errorf("entering a node of a partial lab worked")
	}
	if _, err := d.Up(context.Background(), Spec{Name: name, Topology: Router}); err == nil || !strings.Contains(err.Error(), "partial") ||
		!strings.Contains(err.Error(), "lab down "+name) {
		t.Errorf("Up over a partial lab that records objects: %v", err)
	}
	if err := d.Down(name); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, name); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}
