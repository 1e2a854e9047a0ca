package tune

import (
	"context"
	"errors"
	"fmt"

	"linerate/internal/usage"
)

// ErrNetnsGone is wrapped by Open when the network namespace does not
// exist (for a journal record: its changes went with it).
var ErrNetnsGone = errors.New("no network namespace")

// Opener opens the system of a network namespace ("" for the host).
type Opener func(netns string) (System, error)

// Open is the Opener of the live machine.
func Open(netns string) (System, error) {
	if netns == "" {
		return NewLive(), nil
	}
	if !NetnsExists(netns) {
		return nil, usage.Wrap(fmt.Errorf("%w %s (have: %s)", ErrNetnsGone, netns, listNetns()))
	}
	return NewLiveNetns(netns)
}

// PlanItems plans explicit items, which must all be possible, together
// with diagnose's fixes, which are taken where the system can take them;
// an explicit item wins over a fix for the same target.
func PlanItems(sys System, explicit, fixes []Item) (*Plan, error) {
	if len(fixes) == 0 {
		return NewPlan(sys, explicit)
	}
	if _, err := NewPlan(sys, explicit); err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, it := range explicit {
		have[it.key()] = true
	}
	all := append([]Item(nil), explicit...)
	for _, it := range fixes {
		if !have[it.key()] {
			all = append(all, it)
		}
	}
	return PlanFixes(sys, all)
}

// RollbackResult is what rolling back one record did.
type RollbackResult struct {
	ID       string `json:"id"`
	Netns    string `json:"netns,omitempty"`
	Restored int    `json:"restored"`
	// Dropped says why the record was removed without restoring: its
	// namespace is gone, it is from before the last boot, or forget.
	Dropped string `json:"dropped,omitempty"`
	Err     error  `json:"-"`
}

// RollbackAll restores the journal's records, newest first (only the
// newest with last), opening each record's system with open. With forget
// it removes them without restoring. The error joins every record that
// could not be fully restored; those stay in the journal.
func (s Store) RollbackAll(ctx context.Context, open Opener, last, forget bool) ([]RollbackResult, error) {
	recs, err := s.List()
	if err != nil {
		return nil, err
	}
	if last && len(recs) > 0 {
		recs = recs[len(recs)-1:]
	}
	var out []RollbackResult
	var errs []error
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		res := RollbackResult{ID: r.ID, Netns: r.Netns}
		if forget {
			if err := s.Remove(r); err != nil {
				return out, err
			}
			res.Dropped = "forgotten, nothing restored"
			out = append(out, res)
			continue
		}
		sys, err := open(r.Netns)
		if errors.Is(err, ErrNetnsGone) {
			if err := s.Remove(r); err != nil {
				return out, err
			}
			res.Dropped = "netns " + r.Netns + " is gone, and its changes with it"
			out = append(out, res)
			continue
		}
		if err != nil {
			res.Err = err
			errs = append(errs, fmt.Errorf("%s: %w", r.ID, err))
			out = append(out, res)
			continue
		}
		if err := Elsewhere(sys, r); err != nil {
			sys.Close()
			if r.Netns != "" {
				// The name stands for a namespace made since: the one
				// changed is gone, and its changes with it.
				if err := s.Remove(r); err != nil {
					return out, err
				}
				res.Dropped = "netns " + r.Netns + " was made anew since; the changes went with the old one"
			} else {
				res.Err = err
				errs = append(errs, err)
			}
			out = append(out, res)
			continue
		}
		stale := Stale(sys, r)
		res.Restored, res.Err = s.Rollback(ctx, sys, r)
		sys.Close()
		switch {
		case res.Err != nil:
			errs = append(errs, fmt.Errorf("%s: restored %d, failed: %w", r.ID, res.Restored, res.Err))
		case stale:
			res.Dropped = "from before the last boot, its changes are gone"
		}
		out = append(out, res)
	}
	return out, errors.Join(errs...)
}

// RecordStatus is one journal record with its entries checked against
// the live system.
type RecordStatus struct {
	Record *Record `json:"record"`
	// Stale is true for a record made before the last boot.
	Stale   bool          `json:"stale,omitempty"`
	Entries []EntryStatus `json:"entries"`
	// Err is why the record's system could not be opened (a namespace
	// that is gone).
	Err string `json:"error,omitempty"`
}

// Drifted counts the entries of sts whose live value is no longer the
// one applied (or cannot be read), in records that could be checked.
func Drifted(sts []RecordStatus) int {
	n := 0
	for _, st := range sts {
		for _, e := range st.Entries {
			if !e.Holds || e.Err != "" {
				n++
			}
		}
	}
	return n
}

// StatusAll checks every record of the journal against its system.
func (s Store) StatusAll(open Opener) ([]RecordStatus, error) {
	recs, err := s.List()
	if err != nil {
		return nil, err
	}
	out := []RecordStatus{}
	for _, r := range recs {
		st := RecordStatus{Record: r, Entries: []EntryStatus{}}
		sys, err := open(r.Netns)
		if err == nil {
			if err = Elsewhere(sys, r); err != nil {
				sys.Close()
			}
		}
		if err != nil {
			st.Err = err.Error()
		} else {
			st.Stale = Stale(sys, r)
			if !st.Stale {
				st.Entries = Check(sys, r)
			}
			sys.Close()
		}
		out = append(out, st)
	}
	return out, nil
}
