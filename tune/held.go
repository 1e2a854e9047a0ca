package tune

import (
	"context"
	"time"
)

// Held is a plan held applied for a while: applied as one journalled
// transaction when asked (the journal on disk first, so that 'linerate
// tune rollback' undoes it if the process is killed), and rolled back
// when released, however the caller's context ended. A matrix with a tune
// plan holds it over its "tune on" cells.
type Held struct {
	store Store
	sys   System
	plan  *Plan
	wait  time.Duration
	tx    *Transaction
}

// Hold prepares p, planned against sys, to be applied with the journal in
// store; wait bounds the wait for another linerate changing the system.
// Nothing changes until Apply.
func Hold(store Store, sys System, p *Plan, wait time.Duration) *Held {
	return &Held{store: store, sys: sys, plan: p, wait: wait}
}

// Plan is the plan held.
func (h *Held) Plan() *Plan { return h.plan }

// Applied reports whether the plan is applied now.
func (h *Held) Applied() bool { return h.tx != nil }

// Apply makes the plan's changes as one transaction and returns them; on
// failure nothing is left changed. The changes are those the journal
// recorded, applied or not.
func (h *Held) Apply(ctx context.Context) ([]Change, error) {
	unlock, err := h.store.Lock(h.wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := h.store.DropStale(h.sys); err != nil {
		return nil, err
	}
	tx, err := h.store.Begin(h.sys, h.plan)
	if err != nil {
		return nil, err
	}
	var changes []Change
	for _, e := range tx.Record().Entries {
		changes = append(changes, e.Change)
	}
	if err := tx.Apply(ctx); err != nil {
		return changes, err
	}
	h.tx = tx
	return changes, nil
}

// Release rolls back what Apply changed, even when ctx has ended
// (Ctrl-C); nothing when nothing was applied. On an error the journal
// keeps what is left for 'linerate tune rollback'.
func (h *Held) Release(ctx context.Context) error {
	if h.tx == nil {
		return nil
	}
	unlock, err := h.store.Lock(h.wait)
	if err != nil {
		return err
	}
	defer unlock()
	if err := h.tx.Rollback(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	h.tx = nil
	return nil
}
