package session

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"linerate/box"
	"linerate/results"
	"linerate/traffic/sock"
)

// DropCounters reads the drop counters of the network namespace an end
// runs in and what limits the rate through its interfaces: a
// netnsread.Reader, made and closed by the caller (cmd, or a test for its
// own namespaces). A session only snapshots it around a test's measured
// window; the drop ledger is built from the snapshots.
type DropCounters interface {
	Drops() (box.Drops, error)
	Path(host string, ifaces ...string) ([]box.PathIface, error)
}

// DropWindow snapshots one end's drop counters at the measured window's
// start (mark) and once the receivers drained (drained).
type DropWindow struct {
	r DropCounters
	// lock, if set, is held while the counters are read: a server's tests
	// share its reader.
	lock *sync.Mutex
	out  results.EndDrops

	mu     sync.Mutex
	a      box.Drops
	marked bool
	done   bool
}

// NewDropWindow finds the end's interfaces (those holding locals, looked
// up where setup runs: the end's namespace) and reads their path limits.
// A nil r gives a nil window, which does nothing.
func NewDropWindow(r DropCounters, lock *sync.Mutex, side results.Side, target int, locals []netip.Addr, setup func(func() error) error) *DropWindow {
	if r == nil {
		return nil
	}
	w := &DropWindow{r: r, lock: lock, out: results.EndDrops{Side: side, Target: target}}
	err := setup(func() error {
		for _, a := range locals {
			name, _, err := sock.InterfaceOf(a)
			if err != nil {
				return err
			}
			if !slices.Contains(w.out.Ifaces, name) {
				w.out.Ifaces = append(w.out.Ifaces, name)
			}
		}
		return nil
	})
	if err == nil {
		w.lockReader()
		w.out.Path, err = r.Path(string(side), w.out.Ifaces...)
		w.unlockReader()
	}
	if err != nil {
		w.out.Error = err.Error()
	}
	return w
}

func (w *DropWindow) lockReader() {
	if w.lock != nil {
		w.lock.Lock()
	}
}

func (w *DropWindow) unlockReader() {
	if w.lock != nil {
		w.lock.Unlock()
	}
}

// read takes one snapshot, holding the reader's lock.
func (w *DropWindow) read() (box.Drops, error) {
	w.lockReader()
	defer w.unlockReader()
	return w.r.Drops()
}

// mark takes the snapshot at the window's start.
func (w *DropWindow) mark() {
	if w == nil {
		return
	}
	a, err := w.read()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	if err != nil {
		w.out.Error = fmt.Sprintf("drop counters at the window's start: %v", err)
		return
	}
	w.a, w.marked = a, true
}

// drained takes the snapshot at the end and keeps the difference. It does
// nothing when the window never started.
func (w *DropWindow) drained() {
	if w == nil {
		return
	}
	w.mu.Lock()
	marked := w.marked
	w.done = true
	w.mu.Unlock()
	if !marked {
		return
	}
	b, err := w.read()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.out.Error = fmt.Sprintf("drop counters after the test: %v", err)
		return
	}
	d := box.DropDelta(w.a, b)
	w.out.Delta = &d
}

// Result is what the window counted, with the datagrams the end's
// senders saw refused; nil for a nil window.
func (w *DropWindow) Result(refused uint64) *results.EndDrops {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.out
	out.Refused = refused
	return &out
}

// PathDrops snapshots the drop counters of a device in the middle (this
// host, when it runs third-party flows) now; the returned function
// snapshots them again and gives the difference, over every interface.
func PathDrops(r DropCounters) func() results.EndDrops {
	before, err := r.Drops()
	return func() results.EndDrops {
		out := results.EndDrops{Side: results.SideDUT, Target: -1}
		if err != nil {
			out.Error = err.Error()
			return out
		}
		after, err := r.Drops()
		if err != nil {
			out.Error = err.Error()
			return out
		}
		d := box.DropDelta(before, after)
		out.Delta = &d
		return out
	}
}
