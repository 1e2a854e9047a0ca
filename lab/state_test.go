package lab

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
)

// TestPartialState: a state file that is empty, cut short, not JSON or
// names another lab is read as a partial lab: List and Load work, Up
// refuses the name with a line saying how to free it, Down frees it
// (leaving the state directory empty) and the name builds a lab again.
func TestPartialState(t *testing.T) {
	testenv.RequireRoot(t)
	d := Dir(t.TempDir())
	name := uniqueName()
	cleanupLab(t, d, name)
	for _, content := range []string{"", `{"spec": {"name": "` + name, "not json\n", `{"spec": {"name": "someone-else"}}`} {
		if err := os.WriteFile(d.statePath(name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		labs, err := d.List()
		if err != nil || len(labs) != 1 || labs[0].Status() != "partial" || labs[0].Spec.Name != name {
			t.Fatalf("%q: List = %v, %v; want one partial lab", content, labs, err)
		}
		if !strings.Contains(labs[0].Summary(), "partial") {
			t.Errorf("%q: summary %q", content, labs[0].Summary())
		}
		_, err = d.Up(context.Background(), Spec{Name: name, Topology: Pair})
		if err == nil || !strings.Contains(err.Error(), "partial") || !strings.Contains(err.Error(), "lab down "+name) {
			t.Errorf("%q: Up over a partial state: %v", content, err)
		}
		if err := d.Down(name); err != nil {
			t.Fatalf("%q: Down: %v", content, err)
		}
		if ents, _ := os.ReadDir(string(d)); len(ents) > 0 {
			t.Errorf("%q: state directory after Down holds %v", content, ents)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.Up(ctx, Spec{Name: name, Topology: Pair}); err != nil {
		t.Fatalf("the name after Down: %v", err)
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
	if err := d.Down(name); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, name); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}
