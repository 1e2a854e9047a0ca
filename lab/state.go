package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"linerate/internal/usage"
)

// Dir is a directory of lab state files: NAME.json for each lab, and
// NAME.lock, held while a lab is being built or removed.
type Dir string

// DefaultStateDir is where labs are recorded unless LINERATE_LAB_DIR says
// otherwise. It is on /run so that a reboot, which removes every
// namespace, removes the records too.
const DefaultStateDir = "/run/linerate/lab"

// Environment variables of the lab.
const (
	// EnvDir overrides DefaultStateDir; `lab exec` sets it for its command.
	EnvDir = "LINERATE_LAB_DIR"
	// EnvLab and EnvNode name the lab and node a command runs in; `lab
	// exec` and Start set them, Resolve reads them.
	EnvLab  = "LINERATE_LAB"
	EnvNode = "LINERATE_LAB_NODE"
	// EnvToken is where bench and serve read a shared secret (the same
	// name as wire.TokenEnv; a test checks they agree); Start
	// sets it to the agents' secret in a lab that has agents.
	EnvToken = "LINERATE_TOKEN"
)

// DefaultDir is $LINERATE_LAB_DIR, or DefaultStateDir when that is unset.
func DefaultDir() Dir {
	if d := os.Getenv(EnvDir); d != "" {
		return Dir(d)
	}
	return DefaultStateDir
}

func (d Dir) statePath(name string) string { return filepath.Join(string(d), name+".json") }
func (d Dir) lockPath(name string) string  { return filepath.Join(string(d), name+".lock") }

// Load reads the state file of the named lab in the default directory.
func Load(name string) (*Lab, error) { return DefaultDir().Load(name) }

// Load reads the state file of the named lab. A lab that does not exist is
// a usage error. A state file that cannot be read as a lab's (empty, cut
// short, not JSON, naming another lab) gives a partial lab: its journal is
// the one in the temporary file a killed save left, if that one reads,
// else empty, so `lab list` shows it and `lab down` removes what is known
// to exist and frees the name.
func (d Dir) Load(name string) (*Lab, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	p := d.statePath(name)
	b, err := readState(p)
	if errors.Is(err, fs.ErrNotExist) {
		if !d.leftover(name) {
			return nil, usage.Errorf("no lab named %q (in %s; see linerate lab list)", name, d)
		}
		// lab up was killed before its first state file was in place:
		// what it left (a lock, a temporary file) is a partial lab.
		b, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read lab state: %w", err)
	}
	l, err := parseState(b, name)
	if b == nil {
		err = errors.New("absent: lab up stopped before it wrote one")
	}
	if err != nil {
		l = &Lab{Spec: Spec{Name: name}}
		if tb, terr := readState(p + ".tmp"); terr == nil {
			if tl, terr := parseState(tb, name); terr == nil {
				l = tl
			}
		}
		l.Partial, l.Complete = fmt.Sprintf("state file %s: %v", p, err), false
	}
	l.dir = d
	return l, nil
}

// leftover reports whether lab up left files of a lab with no state file
// (a temporary state or a lock) and no process holds its lock: a lab up
// that has just taken the lock and not yet written its state is building,
// not a leftover.
func (d Dir) leftover(name string) bool {
	found := false
	for _, p := range []string{d.statePath(name) + ".tmp", d.lockPath(name)} {
		if _, err := os.Lstat(p); err == nil {
			found = true
		}
	}
	return found && !lockHeld(d.lockPath(name))
}

// lockHeld reports whether another process holds a flock on the file at p,
// from /proc/locks (read, so that looking never takes the lock from a lab
// up that wants it). A file that is not there is not locked.
func lockHeld(p string) bool {
	var st unix.Stat_t
	if unix.Stat(p, &st) != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join(procDir, "locks"))
	if err != nil {
		return true // cannot tell: say held, so nothing is taken for a leftover
	}
	// Lines read "1: FLOCK  ADVISORY  WRITE 20893 fe:00:9773057 0 EOF":
	// the device as hex major:minor, then the inode.
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	// The pid before it is the holder's: this process's own lock (Down
	// loading the lab again under it) does not count.
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		i := slices.Index(f, id)
		if i > 0 && slices.Contains(f, "FLOCK") && f[i-1] != strconv.Itoa(os.Getpid()) {
			return true
		}
	}
	return false
}

// maxState bounds what Load reads of a state file: a star of 64 ports
// journals a few hundred objects, far below this.
const maxState = 4 << 20

// readState reads a state file, regular files only and at most maxState
// bytes.
func readState(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	return io.ReadAll(io.LimitReader(f, maxState+1))
}

// parseState reads a lab's state, which must name the lab.
func parseState(b []byte, name string) (*Lab, error) {
	if len(b) == 0 {
		return nil, errors.New("empty")
	}
	if len(b) > maxState {
		return nil, fmt.Errorf("larger than %d bytes", maxState)
	}
	l := &Lab{}
	if err := json.Unmarshal(b, l); err != nil {
		return nil, err
	}
	if l.Spec.Name != name {
		return nil, fmt.Errorf("names lab %q", l.Spec.Name)
	}
	return l, nil
}

// List reads every lab in the default directory.
func List() ([]*Lab, error) { return DefaultDir().List() }

// List reads every lab recorded in d, by name. A directory that does not
// exist holds no labs.
func (d Dir) List() ([]*Lab, error) {
	ents, err := os.ReadDir(string(d))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list labs: %w", err)
	}
	var labs []*Lab
	seen := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		for _, suffix := range []string{".json", ".json.tmp", ".lock"} {
			name = strings.TrimSuffix(name, suffix)
		}
		if name == e.Name() || seen[name] || CheckName(name) != nil {
			continue
		}
		seen[name] = true
		l, err := d.Load(name)
		if usage.Is(err) {
			continue // gone meanwhile, or a lab up that has just begun
		}
		if err != nil {
			return nil, err
		}
		labs = append(labs, l)
	}
	slices.SortFunc(labs, func(a, b *Lab) int { return strings.Compare(a.Spec.Name, b.Spec.Name) })
	return labs, nil
}

// NodeNetns returns the network namespace of a node of a lab recorded in
// the default directory: what `inspect --lab NAME --node NODE` looks in.
func NodeNetns(lab, node string) (string, error) {
	l, err := Load(lab)
	if err != nil {
		return "", err
	}
	n, err := l.Node(node)
	if err != nil {
		return "", err
	}
	return n.Netns, nil
}

// Building reports whether the process that ran Up for the lab is still
// alive while the lab is incomplete.
func (l *Lab) Building() bool {
	if l.Complete || l.Pid <= 0 {
		return false
	}
	err := syscall.Kill(l.Pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// save writes the state file atomically: a reader (or a Down after a crash)
// sees the old journal or the new one, never half of one. It syncs the
// file before the rename and the directory after it, so the record of an
// object is on disk before the object is made.
func (l *Lab) save() error {
	p := l.dir.statePath(l.Spec.Name)
	tmp, err := l.writeTemp()
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err == nil {
		err = syncDir(string(l.dir))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write lab state %s: %w", p, err)
	}
	return nil
}

// create writes the first state file of a lab, failing if one exists. The
// file appears whole or not at all (a hard link of the synced temporary
// file, which fails if the name is taken), so a kill -9 never leaves an
// empty state behind.
func (l *Lab) create() error {
	p := l.dir.statePath(l.Spec.Name)
	tmp, err := l.writeTemp()
	if err == nil {
		err = os.Link(tmp, p)
		os.Remove(tmp)
	}
	if errors.Is(err, fs.ErrExist) {
		return usage.Errorf("lab %s is already up (linerate lab down %s removes it)", l.Spec.Name, l.Spec.Name)
	}
	if err == nil {
		err = syncDir(string(l.dir))
	}
	if err != nil {
		return fmt.Errorf("create lab state %s: %w", p, err)
	}
	return nil
}

// writeTemp writes the state to NAME.json.tmp and syncs it.
func (l *Lab) writeTemp() (string, error) {
	p := l.dir.statePath(l.Spec.Name)
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return "", err
	}
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return "", err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// syncDir makes a rename or link in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// lock is the lock of one lab, held while it is built or removed. The
// kernel drops it when its holder dies, so a lab whose Up was killed can
// be removed at once.
type lock struct{ f *os.File }

func (d Dir) lock(name string) (*lock, error) {
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		return nil, fmt.Errorf("lab state directory: %w", err)
	}
	p := d.lockPath(name)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lab lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("lab %s is being built or removed by another linerate (lock %s)", name, p)
		}
		return nil, fmt.Errorf("lab lock %s: %w", p, err)
	}
	return &lock{f: f}, nil
}

// release drops the lock and, with remove, its file (the lab is gone).
func (k *lock) release(remove bool) error {
	var err error
	if remove {
		err = os.Remove(k.f.Name())
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	}
	k.f.Close()
	return err
}
