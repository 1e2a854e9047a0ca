package traffic

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"linerate/internal/admit"
	"linerate/wire"
)

// door admits control connections to a Server. Until a client has proved it
// knows the secret it holds one of a few slots of its own, apart from the
// clients that did (Server.MaxConns); one address holds at most a few of
// them; and a source that failed to authenticate waits longer after each
// failure before the server listens to it again.
//
// When every slot is taken, a new connection is not turned away: it takes
// the slot of a handshake under way, chosen so that whoever holds the most
// slots gives one up first (internal/admit; docs/security.md,
// "Admission"). A client that has the secret needs its slot for a round
// trip or two; a flood that wants to take it away must hold every slot
// from distinct addresses, networks and sites and open a new connection
// per slot within that time.
type door struct {
	slots *admit.Table // handshakes under way
	mu    sync.Mutex
	now   func() time.Time
	fails map[netip.Addr]*failures
}

// failures are one source's failed attempts.
type failures struct {
	n     int
	until time.Time // refused until then
	last  time.Time
}

// Limits of the door (docs/security.md).
const (
	maxPending          = 32               // handshakes under way at once
	maxPendingPerSource = 4                // of them from one address
	firstBackoff        = time.Second      // the pause after a first failure; it doubles with each
	maxBackoff          = time.Minute      // the longest pause
	forgetFailures      = 10 * time.Minute // a source's failures are forgotten after this long without one
	maxFailSources      = 4096             // sources remembered at once
)

func newDoor(now func() time.Time) *door {
	if now == nil {
		now = time.Now
	}
	return &door{slots: admit.NewTable(maxPending, maxPendingPerSource), now: now, fails: map[netip.Addr]*failures{}}
}

// enter takes a handshake slot for a connection from a, or says why not
// (ErrBusy, ErrSlowDown). When every slot is taken it gives one up (door);
// cut is how that connection's read is ended if its slot is given up in
// turn.
func (d *door) enter(a netip.Addr, cut func()) (*admit.Slot, error) {
	d.mu.Lock()
	now := d.now()
	f := d.fails[a]
	if f != nil && now.Before(f.until) {
		d.mu.Unlock()
		return nil, fmt.Errorf("%w: %d failed attempts to authenticate from %s; try again in %s",
			wire.ErrSlowDown, f.n, a, f.until.Sub(now).Round(time.Second))
	}
	d.mu.Unlock()
	t, err := d.slots.Enter(a, cut)
	if errors.Is(err, admit.ErrSourceFull) {
		return nil, fmt.Errorf("%w: %d connections from %s are authenticating", wire.ErrBusy, maxPendingPerSource, a)
	}
	return t, err
}

// failed records a failed attempt from a and returns how long a is now
// refused.
func (d *door) failed(a netip.Addr) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	f := d.fails[a]
	if f == nil || now.Sub(f.last) > forgetFailures {
		d.forget(now)
		f = &failures{}
		d.fails[a] = f
	}
	f.n++
	f.last = now
	wait := min(firstBackoff<<min(f.n-1, 16), maxBackoff)
	f.until = now.Add(wait)
	return wait
}

// passed forgets a's failures: it knows the secret.
func (d *door) passed(a netip.Addr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.fails, a)
}

// forget drops sources whose failures are old, and when too many remain
// the one that failed longest ago, so the table stays small.
func (d *door) forget(now time.Time) {
	if len(d.fails) < maxFailSources {
		return
	}
	var oldest netip.Addr
	for a, f := range d.fails {
		if now.Sub(f.last) > forgetFailures {
			delete(d.fails, a)
		} else if !oldest.IsValid() || f.last.Before(d.fails[oldest].last) {
			oldest = a
		}
	}
	if len(d.fails) >= maxFailSources {
		delete(d.fails, oldest)
	}
}
