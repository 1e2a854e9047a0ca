package tune

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A held plan is applied, journalled, and released back to what was
// there, even when the context that applied it has ended.
func TestHeld(t *testing.T) {
	root, sys := fakeBox(t)
	p, err := PlanItems(sys, []Item{{Kind: "sysctl", Target: "net.core.netdev_max_backlog", Value: "8192"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(t.TempDir())
	h := Hold(store, sys, p, time.Second)
	backlog := filepath.Join(root, "proc/sys/net/core/netdev_max_backlog")
	read := func() string {
		b, err := os.ReadFile(backlog)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if err := h.Release(context.Background()); err != nil || h.Applied() {
		t.Fatalf("release before apply: %v, applied %v", err, h.Applied())
	}
	ctx, cancel := context.WithCancel(context.Background())
	changes, err := h.Apply(ctx)
	if err != nil || len(changes) != 1 || changes[0].From != "1000" || changes[0].To != "8192" || !h.Applied() {
		t.Fatalf("apply: %+v %v", changes, err)
	}
	if got := read(); got != "8192" {
		t.Errorf("applied: %s, want 8192", got)
	}
	if recs, err := os.ReadDir(store.Dir); err != nil || len(recs) == 0 {
		t.Errorf("no journal in %s: %v", store.Dir, err)
	}
	cancel()
	if err := h.Release(ctx); err != nil || h.Applied() {
		t.Fatalf("release: %v", err)
	}
	if got := read(); got != "1000" {
		t.Errorf("released: %s, want 1000", got)
	}
}
