package history

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"linerate/internal/jsonbudget"
)

const (
	ext       = ".json.gz"
	indexName = "index.jsonl"
	// maxRun bounds a run file read back, decompressed: a run of hours
	// with every counter of both ends sampled is tens of megabytes.
	maxRun = 512 << 20
	// maxInflate bounds how many times its size a gzip-compressed run may
	// inflate to (plus a MiB): a run's JSON compresses about ten times,
	// where repeated empty values compress a thousand times, so a small
	// file cannot stand for hundreds of megabytes.
	maxInflate = 64
)

// DefaultDir is where the history lives unless told: LINERATE_HISTORY_DIR,
// else /var/lib/linerate/runs as root, else $XDG_STATE_HOME/linerate/runs
// (~/.local/state/linerate/runs).
func DefaultDir() string {
	if d := os.Getenv("LINERATE_HISTORY_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/lib/linerate/runs"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "linerate", "runs")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "linerate", "runs")
	}
	return filepath.Join(os.TempDir(), "linerate-runs")
}

// Store is a history directory.
type Store struct {
	Dir string
	// Warn receives a line for each file skipped (corrupt, unreadable).
	Warn func(string)
	now  func() time.Time
}

// Open returns the store at dir ("" for DefaultDir). The directory is
// made on the first Save.
func Open(dir string) *Store {
	if dir == "" {
		dir = DefaultDir()
	}
	return &Store{Dir: dir, now: time.Now}
}

func (s *Store) warn(format string, a ...any) {
	if s.Warn != nil {
		s.Warn(fmt.Sprintf(format, a...))
	}
}

// Save writes a run under a new id and returns it. The run's Schema, ID
// and Time (when zero) are set here. Two writers at the same moment get
// two ids: a file is created only where none is (link, never rename over).
func (s *Store) Save(r *Run) (string, error) {
	if err := os.MkdirAll(s.Dir, 0o750); err != nil {
		return "", fmt.Errorf("history: %w", err)
	}
	if r.Time.IsZero() {
		r.Time = s.now()
	}
	r.Schema = Schema
	tmp, err := os.CreateTemp(s.Dir, ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("history: %w", err)
	}
	defer os.Remove(tmp.Name())
	for range 20 {
		r.ID = newID(r.Time)
		if err := writeRun(tmp, r); err != nil {
			tmp.Close()
			return "", fmt.Errorf("history: write %s: %w", tmp.Name(), err)
		}
		err := os.Link(tmp.Name(), s.path(r.ID))
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			tmp.Close()
			return "", fmt.Errorf("history: %w", err)
		}
		r.ID = ""
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			tmp.Close()
			return "", err
		}
		if err := tmp.Truncate(0); err != nil {
			tmp.Close()
			return "", err
		}
	}
	tmp.Close()
	if r.ID == "" {
		return "", errors.New("history: no free id after 20 tries")
	}
	// The index is a cache: a failure to append leaves the run findable
	// (List adds files the index lacks).
	if err := s.appendIndex(r.Entry); err != nil {
		s.warn("history: index %s: %v (the run is saved; 'linerate runs' rebuilds the index)", s.indexPath(), err)
	}
	return r.ID, nil
}

func writeRun(f *os.File, r *Run) error {
	zw := gzip.NewWriter(f)
	enc := json.NewEncoder(zw)
	if err := enc.Encode(r); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Sync()
}

// newID is the time to the second and 4 random hex digits: ids sort by
// time and two runs in one second differ.
func newID(t time.Time) string {
	var b [2]byte
	rand.Read(b[:])
	return t.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

func (s *Store) path(id string) string { return filepath.Join(s.Dir, id+ext) }
func (s *Store) indexPath() string     { return filepath.Join(s.Dir, indexName) }
func validID(id string) bool           { return id != "" && !strings.ContainsAny(id, "/\\\x00") && id[0] != '.' }
func idOf(name string) (string, bool) {
	id, ok := strings.CutSuffix(name, ext)
	return id, ok && validID(id)
}
func lockFile(f *os.File, how int) error { return unix.Flock(int(f.Fd()), how) }

// appendIndex adds one line to the index under an exclusive lock, in one
// write.
func (s *Store) appendIndex(e Entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(s.indexPath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := lockFile(f, unix.LOCK_EX); err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	return err
}

// List returns the runs newest first. The index is read and checked
// against the directory: a run file the index lacks is read and added, an
// index line whose file is gone is dropped, and the index is rewritten
// when they differed. A corrupt file is skipped with a warning naming it.
func (s *Store) List() ([]Entry, error) {
	names, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	files := map[string]bool{}
	for _, n := range names {
		if id, ok := idOf(n.Name()); ok && n.Type().IsRegular() {
			files[id] = true
		}
	}
	indexed, clean := s.readIndex()
	var out []Entry
	seen := map[string]bool{}
	for _, e := range indexed {
		if !files[e.ID] || seen[e.ID] {
			clean = false
			continue
		}
		seen[e.ID] = true
		out = append(out, e)
	}
	for id := range files {
		if seen[id] {
			continue
		}
		clean = false
		r, err := s.Load(id)
		if err != nil {
			s.warn("history: skipped %s: %v", s.path(id), err)
			continue
		}
		out = append(out, r.Entry)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.After(out[j].Time)
		}
		return out[i].ID > out[j].ID
	})
	if !clean {
		if err := s.rewriteIndex(out); err != nil {
			s.warn("history: index %s: %v", s.indexPath(), err)
		}
	}
	return out, nil
}

// readIndex reads the index's lines; clean is false when a line was bad.
func (s *Store) readIndex() (out []Entry, clean bool) {
	f, err := os.Open(s.indexPath())
	if err != nil {
		return nil, errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close()
	if lockFile(f, unix.LOCK_SH) != nil {
		return nil, false
	}
	clean = true
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || !validID(e.ID) {
			clean = false
			continue
		}
		out = append(out, e)
	}
	if sc.Err() != nil {
		clean = false
	}
	return out, clean
}

// rewriteIndex replaces the index with entries (oldest first), under the
// lock of the old one so no append is lost between the read and the
// rename: an append made meanwhile to the old file is merged.
func (s *Store) rewriteIndex(entries []Entry) error {
	old, err := os.OpenFile(s.indexPath(), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	defer old.Close()
	if err := lockFile(old, unix.LOCK_EX); err != nil {
		return err
	}
	// Lines appended since List read the index keep their place.
	have := map[string]bool{}
	for _, e := range entries {
		have[e.ID] = true
	}
	fresh, _ := s.readIndexLocked(old)
	for _, e := range fresh {
		if !have[e.ID] {
			if _, err := os.Stat(s.path(e.ID)); err == nil {
				entries = append(entries, e)
				have[e.ID] = true
			}
		}
	}
	var buf bytes.Buffer
	for i := len(entries) - 1; i >= 0; i-- {
		line, err := json.Marshal(entries[i])
		if err != nil {
			return err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	tmp, err := os.CreateTemp(s.Dir, ".tmp-index-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), s.indexPath())
}

func (s *Store) readIndexLocked(f *os.File) ([]Entry, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) == nil && validID(e.ID) {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// Load reads the run with this id, or with the only id that starts with it.
func (s *Store) Load(id string) (*Run, error) {
	full, err := s.resolve(id)
	if err != nil {
		return nil, err
	}
	return ReadFile(s.path(full))
}

// resolve finds the id a prefix names.
func (s *Store) resolve(id string) (string, error) {
	if !validID(id) {
		return "", &NotFoundError{ID: id, Dir: s.Dir}
	}
	if _, err := os.Stat(s.path(id)); err == nil {
		return id, nil
	}
	names, _ := os.ReadDir(s.Dir)
	var match []string
	for _, n := range names {
		if full, ok := idOf(n.Name()); ok && strings.HasPrefix(full, id) {
			match = append(match, full)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return "", &NotFoundError{ID: id, Dir: s.Dir}
	}
	return "", fmt.Errorf("run %q: %d runs start with it (%s, ...): %w", id, len(match), strings.Join(match[:2], ", "), ErrAmbiguous)
}

// Remove deletes runs. Every id is checked first: one that is not there
// removes none.
func (s *Store) Remove(ids ...string) ([]string, error) {
	var full []string
	for _, id := range ids {
		f, err := s.resolve(id)
		if err != nil {
			return nil, err
		}
		full = append(full, f)
	}
	for _, id := range full {
		if err := os.Remove(s.path(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("history: %w", err)
		}
	}
	_, err := s.List() // drops their index lines
	return full, err
}

// Prune keeps the newest keep runs and removes the rest, returning the
// ids removed.
func (s *Store) Prune(keep int) ([]string, error) {
	if keep < 0 {
		return nil, fmt.Errorf("--keep %d: negative", keep)
	}
	all, err := s.List()
	if err != nil || len(all) <= keep {
		return nil, err
	}
	var gone []string
	for _, e := range all[keep:] {
		if err := os.Remove(s.path(e.ID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return gone, fmt.Errorf("history: %w", err)
		}
		gone = append(gone, e.ID)
	}
	_, err = s.List()
	return gone, err
}

// ReadFile reads a run from a file: a history file (gzip-compressed or
// not) or a plain result as a command's --json wrote it, whose kind is
// guessed from its fields (the run then has no id).
func ReadFile(path string) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var rd io.Reader = br
	limit := int64(maxRun)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rd = zr
		if st, err := f.Stat(); err == nil {
			limit = min(limit, maxInflate*st.Size()+1<<20)
		}
	}
	data, err := io.ReadAll(io.LimitReader(rd, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case int64(len(data)) <= limit:
	case limit < maxRun:
		return nil, fmt.Errorf("%s: inflates to more than %d times its size: not a linerate run (whose JSON compresses about ten times)", path, maxInflate)
	default:
		return nil, fmt.Errorf("%s: more than %d MiB decompressed: not a linerate run", path, maxRun>>20)
	}
	return Decode(data, path)
}

// Decode reads a run (or a bare result) from JSON; where names it in
// errors. The envelope is decoded within jsonbudget's budget; the result
// stays raw, for the reader that knows its kind to decode the same way.
func Decode(data []byte, where string) (*Run, error) {
	var probe struct {
		Schema   *int            `json:"schema"`
		Kind     string          `json:"kind"`
		Result   json.RawMessage `json:"result"`
		Spec     json.RawMessage `json:"spec"`
		Search   json.RawMessage `json:"search"`
		Rig      json.RawMessage `json:"rig"`
		Findings json.RawMessage `json:"findings"`
		Rules    json.RawMessage `json:"rules"`
		Flows    json.RawMessage `json:"flows"`
		Plan     json.RawMessage `json:"plan"`
		Time     time.Time       `json:"time"`
		Version  string          `json:"linerate_version"`
	}
	if err := jsonbudget.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%s: not a linerate run or result: %w", where, err)
	}
	if probe.Kind != "" && len(probe.Result) > 0 {
		if probe.Schema != nil && *probe.Schema > Schema {
			return nil, &NewerError{Where: where, Schema: *probe.Schema}
		}
		var r Run
		if err := jsonbudget.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		return &r, nil
	}
	r := &Run{Entry: Entry{Schema: Schema, Time: probe.Time, Version: probe.Version}, Result: json.RawMessage(data)}
	switch {
	case len(probe.Rig) > 0:
		r.Kind = KindTuneAuto
	case len(probe.Rules) > 0 && len(probe.Findings) > 0:
		r.Kind = KindDiagnose
	case len(probe.Plan) > 0:
		r.Kind = KindPlan
	case len(probe.Flows) > 0:
		r.Kind = KindFlows
	case len(probe.Search) > 0 && string(probe.Search) != "null":
		r.Kind = KindSearch
	case len(probe.Spec) > 0:
		r.Kind = KindBench
	default:
		return nil, fmt.Errorf("%s: not a linerate run or result (no kind, spec, rig or findings)", where)
	}
	return r, nil
}
