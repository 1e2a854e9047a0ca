package traffic

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

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
// slots gives one up first (docs/security.md, "Admission"). The victim is
// the connection whose address holds the most slots; among equals, the one
// whose network (IPv4 /24, IPv6 /64) holds the most; then whose site (IPv4
// /16, IPv6 /48) holds the most; then the oldest. A client that has the
// secret needs its slot for a round trip or two; a flood that wants to take
// it away must hold every slot from distinct addresses, networks and sites
// and open a new connection per slot within that time.
type door struct {
	mu      sync.Mutex
	now     func() time.Time
	pending []*ticket // handshakes under way, oldest first
	fails   map[netip.Addr]*failures
}

// ticket is one handshake's slot.
type ticket struct {
	addr, net, site netip.Addr // the source, its /24|/64 and its /16|/48
	// gone says the slot was given to a newer connection; the handshake
	// ends at its next read (ctl.gone).
	gone atomic.Bool
	cut  func() // ends a read under way
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
	return &door{now: now, fails: map[netip.Addr]*failures{}}
}

// groups are the network and the site of a: for IPv4 its /24 and /16, for
// IPv6 its /64 and /48 (one host has a whole /64; one site a /48).
func groups(a netip.Addr) (netw, site netip.Addr) {
	n, s := 24, 16
	if !a.Is4() {
		n, s = 64, 48
	}
	p, _ := a.Prefix(n)
	q, _ := a.Prefix(s)
	return p.Addr(), q.Addr()
}

// enter takes a handshake slot for a connection from a, or says why not
// (ErrBusy, ErrSlowDown). When every slot is taken it gives one up (door);
// cut is how that connection's read is ended if its slot is given up in
// turn.
func (d *door) enter(a netip.Addr, cut func()) (*ticket, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if f := d.fails[a]; f != nil && now.Before(f.until) {
		return nil, fmt.Errorf("%w: %d failed attempts to authenticate from %s; try again in %s",
			wire.ErrSlowDown, f.n, a, f.until.Sub(now).Round(time.Second))
	}
	t := &ticket{addr: a.WithZone(""), cut: cut}
	t.net, t.site = groups(t.addr)
	if n := d.count(func(o *ticket) bool { return o.addr == t.addr }); n >= maxPendingPerSource {
		return nil, fmt.Errorf("%w: %d connections from %s are authenticating", wire.ErrBusy, n, a)
	}
	if len(d.pending) >= maxPending {
		v := d.victim()
		d.remove(v)
		v.gone.Store(true)
		if v.cut != nil {
			v.cut()
		}
	}
	d.pending = append(d.pending, t)
	return t, nil
}

// count is how many pending handshakes match.
func (d *door) count(match func(*ticket) bool) int {
	n := 0
	for _, t := range d.pending {
		if match(t) {
			n++
		}
	}
	return n
}

// victim is the handshake that gives up its slot: the one whose address,
// then network, then site holds the most slots, the oldest among equals.
func (d *door) victim() *ticket {
	var best *ticket
	var bestKey [3]int
	for _, t := range d.pending {
		key := [3]int{
			d.count(func(o *ticket) bool { return o.addr == t.addr }),
			d.count(func(o *ticket) bool { return o.net == t.net }),
			d.count(func(o *ticket) bool { return o.site == t.site }),
		}
		if best == nil || greater(key, bestKey) {
			best, bestKey = t, key
		}
	}
	return best
}

// greater compares keys in order; equal is not greater, so the oldest of
// equals stays the victim.
func greater(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

func (d *door) remove(t *ticket) {
	for i, o := range d.pending {
		if o == t {
			d.pending = append(d.pending[:i], d.pending[i+1:]...)
			return
		}
	}
}

// leave gives back t's slot (nothing if it was given up already).
func (d *door) leave(t *ticket) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.remove(t)
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
