package tune

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Transaction applies a plan as one unit: the journal of old values is on
// disk before the first change, each change is read back, and a failure
// restores every change already made, newest first. A Transaction that
// applied can be rolled back later, by this process (Rollback) or by
// another one from the journal (Store.Rollback).
type Transaction struct {
	store Store
	sys   System
	rec   *Record
	acts  []Action // one per entry

	// AfterChange, when set, runs after each change is made and read back
	// but before the journal marks it applied; n counts the changes made so
	// far. Tests use it to kill the process at that, the worst, moment.
	AfterChange func(n int)
}

// Begin writes the journal of a plan: every change that is not already in
// place (advice and unchanged items are left out), all pending. Nothing is
// changed yet. A plan with nothing to change gives a transaction with no
// record on disk.
func (s Store) Begin(sys System, p *Plan) (*Transaction, error) {
	t := &Transaction{store: s, sys: sys}
	r := &Record{Schema: RecordSchema, ID: newID(), Created: time.Now().UTC(), BootID: bootID(sys),
		Netns: sys.Netns(), NetnsID: netnsID(sys), State: RecApplying, Items: p.Items, Entries: []Entry{}}
	for _, a := range p.Actions() {
		c := a.Describe()
		if c.Manual || c.Unchanged {
			continue
		}
		if c.Restore == nil {
			return nil, fmt.Errorf("%s %s: no way to restore it", c.Kind, c.Target)
		}
		r.Entries = append(r.Entries, Entry{Change: c, State: Pending})
		t.acts = append(t.acts, a)
	}
	t.rec = r
	if len(r.Entries) == 0 {
		return t, nil
	}
	if err := s.save(r); err != nil {
		return nil, err
	}
	return t, nil
}

// Record is the transaction's journal record.
func (t *Transaction) Record() *Record { return t.rec }

// ApplyError is a failed Apply: which change failed, and whether every
// change made before it was restored.
type ApplyError struct {
	Change Change
	Err    error
	// Restored counts the changes put back; Unrestored lists the restore
	// failures (the journal keeps them for `linerate tune rollback`).
	Restored   int
	Unrestored []error
}

func (e *ApplyError) Error() string {
	s := fmt.Sprintf("%s %s: %v", e.Change.Kind, e.Change.Target, e.Err)
	if len(e.Unrestored) == 0 {
		return fmt.Sprintf("%s; nothing is left changed (%d changes restored)", s, e.Restored)
	}
	return fmt.Sprintf("%s; %d changes could not be restored (%v); the journal keeps them for 'linerate tune rollback'",
		s, len(e.Unrestored), errors.Join(e.Unrestored...))
}

func (e *ApplyError) Unwrap() error { return e.Err }

// Apply makes the changes in order. On any failure, or when ctx ends, it
// restores what it changed, newest first, and returns an *ApplyError; the
// record leaves the journal when everything was restored.
func (t *Transaction) Apply(ctx context.Context) error {
	r := t.rec
	if len(r.Entries) == 0 {
		return nil
	}
	for i, a := range t.acts {
		e := &r.Entries[i]
		e.State = Changing
		if err := t.store.save(r); err != nil {
			e.State = Pending
			return t.fail(ctx, i, err)
		}
		iface := resetIface(e.Change)
		had := iface != "" && carrier(t.sys, iface)
		start := time.Now()
		undo, err := a.Apply(ctx)
		if err != nil {
			if undo == nil {
				// The action says it changed nothing.
				e.State = Failed
			}
			return t.fail(ctx, i, err)
		}
		if s, ok := a.(sayer); ok && s.Said() != "" {
			c := a.Describe()
			e.Said, e.To, e.IRQ = s.Said(), c.To, c.IRQ
		}
		if had && undo != nil && !e.Unchanged {
			note, err := awaitCarrier(ctx, t.sys, iface, start, carrierBack)
			if err != nil {
				return t.fail(ctx, i, err)
			}
			e.Said = joinNote(e.Said, note)
		}
		if t.AfterChange != nil {
			t.AfterChange(i + 1)
		}
		e.State = Applied
		if err := t.store.save(r); err != nil {
			return t.fail(ctx, i, err)
		}
	}
	r.State = RecApplied
	return t.store.save(r)
}

// fail records the error of entry i and restores entries i..0.
func (t *Transaction) fail(ctx context.Context, i int, err error) error {
	e := &t.rec.Entries[i]
	e.Error = err.Error()
	ae := &ApplyError{Change: e.Change, Err: err}
	ae.Restored, ae.Unrestored = t.store.restore(context.WithoutCancel(ctx), t.sys, t.rec)
	return ae
}

// Rollback restores everything the transaction changed, newest first, and
// removes its record from the journal when all is restored.
func (t *Transaction) Rollback(ctx context.Context) error {
	if len(t.rec.Entries) == 0 {
		return nil
	}
	_, errs := t.store.restore(ctx, t.sys, t.rec)
	return errors.Join(errs...)
}

// Rollback restores a record from the journal on sys (the system of the
// record's namespace), newest change first, and removes the record when
// everything is restored. A record from before the last boot is removed
// without restoring: a reboot undid its changes.
func (s Store) Rollback(ctx context.Context, sys System, r *Record) (restored int, err error) {
	if Stale(sys, r) {
		return 0, s.Remove(r)
	}
	n, errs := s.restore(ctx, sys, r)
	return n, errors.Join(errs...)
}

// restore puts back every entry that may have changed, newest first,
// journalling each step. It returns how many were restored and the
// failures; with none, the record is removed.
func (s Store) restore(ctx context.Context, sys System, r *Record) (int, []error) {
	n := 0
	var errs []error
	earlier := rebootedSince(sys, r)
	for i := len(r.Entries) - 1; i >= 0; i-- {
		e := &r.Entries[i]
		if !e.mayHaveChanged() {
			continue
		}
		err := ctx.Err()
		switch {
		case err != nil:
		case earlier && !e.Boot:
			// Gone with the reboot; only boot files outlive it.
		default:
			iface := resetIface(e.Change)
			had, start := iface != "" && carrier(sys, iface), time.Now()
			err = undoWith(sys, *e.Restore)(ctx)
			if err == nil && had {
				// The restore reset the link too: the next entry (an
				// interrupt's affinity, say) waits for it.
				_, err = awaitCarrier(ctx, sys, iface, start, carrierBack)
			}
		}
		if err != nil {
			e.State, e.Error = RestoreFailed, err.Error()
			errs = append(errs, fmt.Errorf("%s %s: %w", e.Kind, e.Target, err))
		} else {
			e.State = Restored
			n++
		}
		if err := s.save(r); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		r.State = RecFailed
		if err := s.save(r); err != nil {
			errs = append(errs, err)
		}
		return n, errs
	}
	if err := s.Remove(r); err != nil {
		return n, []error{err}
	}
	return n, nil
}

// EntryStatus is a journalled change next to the live value.
type EntryStatus struct {
	Entry
	// Live is the value the system holds now; Holds is true when it is the
	// entry's new value.
	Live  string `json:"live"`
	Holds bool   `json:"holds"`
	// Err is why the live value could not be read.
	Err string `json:"read_error,omitempty"`
	// Renumbered says that an interrupt named by what it serves resolves
	// to another number than when it was applied (a driver reload, a
	// device probed in another order): Live is then the new number's.
	Renumbered string `json:"renumbered,omitempty"`
	// Boot says whether an edit of a boot file is in effect: "active" or
	// "pending until reboot" (BootState).
	BootState string `json:"boot_state,omitempty"`
}

// Check reads, for every entry of a record that may have changed, the
// value the system holds now.
func Check(sys System, r *Record) []EntryStatus {
	var out []EntryStatus
	earlier := rebootedSince(sys, r)
	for _, e := range r.Entries {
		st := EntryStatus{Entry: e}
		if !e.mayHaveChanged() || earlier && !e.Boot {
			continue
		}
		on := sys
		if e.Boot {
			on = WithBoot(sys)
			st.BootState = BootState(sys, r, e)
		}
		acts, err := Build(on, e.Change.Item())
		switch {
		case err != nil:
			st.Err = err.Error()
			if i := strings.Index(st.Err, ": "); i >= 0 && strings.HasPrefix(st.Err, e.Change.Item().String()) {
				st.Err = st.Err[i+2:]
			}
		case len(acts) != 1:
			st.Err = fmt.Sprintf("the target now names %d objects", len(acts))
		default:
			c := acts[0].Describe()
			st.Live, st.Holds = c.From, c.Unchanged
			if e.IRQ != 0 && c.IRQ != e.IRQ {
				st.Renumbered = fmt.Sprintf("%s was IRQ %d when applied, is IRQ %d now", e.Target, e.IRQ, c.IRQ)
			}
		}
		out = append(out, st)
	}
	return out
}
