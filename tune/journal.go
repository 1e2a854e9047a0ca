package tune

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"linerate/internal/usage"
)

// DefaultStateDir is where linerate keeps its state on a live machine; the
// journal is its journal/ subdirectory.
const DefaultStateDir = "/var/lib/linerate"

// RecordSchema is the version of the journal file format.
const RecordSchema = 1

// Entry states in the journal. An entry is written "changing" before its
// change starts, so a process killed at any moment leaves a journal whose
// changing and applied entries are exactly those that may have happened.
const (
	Pending       = "pending"        // not started
	Changing      = "changing"       // about to change, or changed but not yet read back
	Applied       = "applied"        // changed and read back
	Failed        = "failed"         // its change failed and left nothing changed
	Restored      = "restored"       // put back
	RestoreFailed = "restore-failed" // putting back failed; Error says why
)

// Record states.
const (
	RecApplying = "applying" // Apply started and has not finished
	RecApplied  = "applied"  // every change made
	RecFailed   = "failed"   // a change or its restore failed; some entries are not restored
)

// Entry is one change in the journal.
type Entry struct {
	Change
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Said is what applying it showed: the value the driver kept instead
	// of the one asked, a link that reset and came back, an interrupt
	// found under a new number.
	Said string `json:"said,omitempty"`
}

// mayHaveChanged reports whether the system may hold the entry's new value.
func (e Entry) mayHaveChanged() bool {
	return e.State == Changing || e.State == Applied || e.State == RestoreFailed
}

// Record is one transaction in the journal: a file in the journal
// directory, rewritten (atomically, fsynced) at every step.
type Record struct {
	Schema  int       `json:"schema"`
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	// BootID is the kernel's boot_id when the record was made: after a
	// reboot the record's changes are gone.
	BootID string `json:"boot_id,omitempty"`
	// Netns is the network namespace changed; "" for the host.
	Netns string `json:"netns,omitempty"`
	// NetnsID is the kernel's name of that namespace ("net:[4026532297]"),
	// unique while it lives: a rollback from another namespace, or into a
	// namespace made anew under the same name, is refused.
	NetnsID string `json:"netns_id,omitempty"`
	State   string `json:"state"`
	// Items are what was asked; Persist re-applies them at boot.
	Items   []Item  `json:"items"`
	Entries []Entry `json:"entries"`
}

// Store is a journal directory.
type Store struct{ Dir string }

// NewStore returns the journal under a state directory
// (DefaultStateDir on a live machine).
func NewStore(stateDir string) Store { return Store{Dir: filepath.Join(stateDir, "journal")} }

func (s Store) path(id string) string { return filepath.Join(s.Dir, id+".json") }

// Lock takes the journal's lock so that one linerate at a time changes
// the system, waiting up to wait for another one to finish (at boot the
// units of several interfaces start together); unlock releases it.
func (s Store) Lock(wait time.Duration) (unlock func(), err error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal %s: %w", s.Dir, err)
	}
	p := filepath.Join(s.Dir, ".lock")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal lock: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("journal lock %s: %w", p, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another linerate is changing the system (lock %s held for %s)", p, wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A save killed between its temporary file and the rename leaves the
	// temporary file: no one else writes while the lock is held.
	if tmps, err := filepath.Glob(filepath.Join(s.Dir, ".tmp-*")); err == nil {
		for _, p := range tmps {
			os.Remove(p)
		}
	}
	return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
}

// List reads every record, oldest first. A missing directory is an empty
// journal.
func (s Store) List() ([]*Record, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", s.Dir, err)
	}
	var out []*Record
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, ".json") || strings.HasPrefix(n, ".") {
			continue
		}
		r, err := s.Load(strings.TrimSuffix(n, ".json"))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Load reads one record.
func (s Store) Load(id string) (*Record, error) {
	p := s.path(id)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, usage.Errorf("journal %s: %w", p, err)
	}
	if r.Schema != RecordSchema {
		return nil, usage.Errorf("journal %s: schema %d, this linerate reads %d", p, r.Schema, RecordSchema)
	}
	return &r, nil
}

// save writes the record durably: a temporary file, fsync, rename over
// the record, fsync of the directory. A kill at any point leaves either
// the old record or the new one, whole.
func (s Store) save(r *Record) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("journal %s: %w", s.Dir, err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	tmp, err := os.CreateTemp(s.Dir, ".tmp-"+r.ID+"-")
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	_, werr := tmp.Write(b)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("journal %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), s.path(r.ID)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("journal: %w", err)
	}
	return syncDir(s.Dir)
}

// Remove deletes a record.
func (s Store) Remove(r *Record) error {
	if err := os.Remove(s.path(r.ID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("journal: %w", err)
	}
	return syncDir(s.Dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("journal %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("journal %s: fsync: %w", dir, err)
	}
	return nil
}

// bootID reads the kernel's boot_id; "" when the system does not say.
func bootID(sys System) string {
	s, err := readTrim(sys, "proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return s
}

// netnsID is the identity of the network namespace sys changes; "" when
// the system cannot say (a directory standing for a root).
func netnsID(sys System) string {
	l := liveOf(sys)
	if l == nil {
		return ""
	}
	id, err := l.NetnsID()
	if err != nil {
		return ""
	}
	return id
}

// ErrElsewhere is wrapped by Elsewhere: the record was made in another
// network namespace than the one sys changes.
var ErrElsewhere = errors.New("made in another network namespace")

// Elsewhere is an error saying where r belongs when sys changes another
// network namespace than the one r was made in; nil when they are the
// same or either cannot say.
func Elsewhere(sys System, r *Record) error {
	now := netnsID(sys)
	if r.NetnsID == "" || now == "" || now == r.NetnsID {
		return nil
	}
	if r.Netns != "" {
		return fmt.Errorf("record %s: %w: netns %s was %s when it was made and is %s now (made anew)", r.ID, ErrElsewhere, r.Netns, r.NetnsID, now)
	}
	return fmt.Errorf("record %s: %w: it was made in %s, and this linerate runs in %s: run it from there (as the apply ran: under the same 'ip netns exec', or on the host)", r.ID, ErrElsewhere, r.NetnsID, now)
}

// Stale reports whether the record was made before the system's last
// boot: its changes did not survive the reboot. A record that edited a
// boot file is never stale: the edit is on disk, and rollback restores it.
func Stale(sys System, r *Record) bool {
	for _, e := range r.Entries {
		if e.Boot && e.mayHaveChanged() {
			return false
		}
	}
	return rebootedSince(sys, r)
}

// rebootedSince reports whether sys booted again after r was made (both
// boot ids known and different).
func rebootedSince(sys System, r *Record) bool {
	now := bootID(sys)
	return r.BootID != "" && now != "" && now != r.BootID
}

// DropStale removes the records made before the system's last boot and
// returns their IDs: their changes did not survive the reboot.
func (s Store) DropStale(sys System) ([]string, error) {
	recs, err := s.List()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, r := range recs {
		if Stale(sys, r) {
			if err := s.Remove(r); err != nil {
				return ids, err
			}
			ids = append(ids, r.ID)
		}
	}
	return ids, nil
}

// newID names a record so that names sort in time order.
func newID() string {
	return fmt.Sprintf("%s-%d", time.Now().UTC().Format("20060102T150405.000000000"), os.Getpid())
}
