// Package admit keeps the slots of a listener's connections: a cap in all
// and a cap per source address, and a way through for a newcomer when the
// table is full. Each of serve's doors (the control port's handshakes, a
// test's data connections, the iperf3 port, --web) holds its connections
// in a Table (docs/security.md, "The doors").
//
// A full table turns no one away: the newcomer takes the slot of a
// connection already in, chosen so that whoever holds the most gives one
// up first. The victim is idle (a connection that asked nothing yet, or
// waits between requests) before busy; then the connection whose address
// holds the most slots; among equals, the one whose network (IPv4 /24,
// IPv6 /64) holds the most; then whose site (IPv4 /16, IPv6 /48) holds the
// most; then the oldest. Silent connections therefore cannot hold a door
// shut: a client that needs its slot for a round trip or two keeps it
// against any flood whose connections do not each come from a distinct
// address, network and site.
package admit

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
)

// ErrSourceFull is what Enter says when an address holds its share of the
// slots already.
var ErrSourceFull = errors.New("this address holds its share of the slots")

// Table is one door's slots. The zero Table is not usable: NewTable.
type Table struct {
	total, perSource int

	mu   sync.Mutex
	held []*Slot // oldest first
}

// NewTable makes a table of total slots, of which one address holds at
// most perSource (both at least 1).
func NewTable(total, perSource int) *Table {
	return &Table{total: max(total, 1), perSource: max(min(perSource, total), 1)}
}

// Slot is one connection's place in a Table.
type Slot struct {
	tab             *Table
	addr, net, site netip.Addr // the source, its /24|/64 and its /16|/48
	cut             func()
	// gone says the slot was given to a newer connection (or shed); cut
	// was called.
	gone atomic.Bool
	busy atomic.Bool
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

// Enter takes a slot for a connection from a. An address that holds its
// share is refused (ErrSourceFull, wrapped with the count). When every
// slot is taken, the victim's slot is given up: its cut is called (it
// must end the connection's wait: close it, or end its read) and its
// Gone reports true. cut may be nil.
func (t *Table) Enter(a netip.Addr, cut func()) (*Slot, error) {
	s := &Slot{tab: t, addr: a.Unmap().WithZone(""), cut: cut}
	s.net, s.site = groups(s.addr)
	t.mu.Lock()
	n := 0
	for _, o := range t.held {
		if o.addr == s.addr {
			n++
		}
	}
	if n >= t.perSource {
		t.mu.Unlock()
		return nil, fmt.Errorf("%w: %d connections from %s", ErrSourceFull, n, s.addr)
	}
	var v *Slot
	if len(t.held) >= t.total {
		v = t.victim(false)
		t.give(v)
	}
	t.held = append(t.held, s)
	t.mu.Unlock()
	v.end()
	return s, nil
}

// Shed gives up the slot of the victim among the idle connections, to
// free its descriptor when the listener ran out; false when none is idle.
func (t *Table) Shed() bool {
	t.mu.Lock()
	v := t.victim(true)
	t.give(v)
	t.mu.Unlock()
	v.end()
	return v != nil
}

// Len is how many slots are held.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.held)
}

// victim is the slot to give up (nil when none, or with idleOnly none
// idle); t.mu is held.
func (t *Table) victim(idleOnly bool) *Slot {
	addrs, nets, sites := map[netip.Addr]int{}, map[netip.Addr]int{}, map[netip.Addr]int{}
	for _, s := range t.held {
		addrs[s.addr]++
		nets[s.net]++
		sites[s.site]++
	}
	var best *Slot
	var bestKey [4]int
	for _, s := range t.held {
		idle := 1
		if s.busy.Load() {
			if idleOnly {
				continue
			}
			idle = 0
		}
		key := [4]int{idle, addrs[s.addr], nets[s.net], sites[s.site]}
		if best == nil || greater(key, bestKey) {
			best, bestKey = s, key
		}
	}
	return best
}

// greater compares keys in order; equal is not greater, so the oldest of
// equals stays the victim.
func greater(a, b [4]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

// remove takes s out of the table; false when it was not in it. t.mu is
// held.
func (t *Table) remove(s *Slot) bool {
	for i, o := range t.held {
		if o == s {
			t.held = append(t.held[:i], t.held[i+1:]...)
			return true
		}
	}
	return false
}

// give takes s out of the table and marks it given up (nothing for nil);
// t.mu is held. Its cut is called once the lock is let go (end): a cut
// may close the connection, whose Leave takes the lock.
func (t *Table) give(s *Slot) {
	if s != nil {
		t.remove(s)
		s.gone.Store(true)
	}
}

// end ends the wait of a connection whose slot was given up (nothing for
// nil).
func (s *Slot) end() {
	if s != nil && s.cut != nil {
		s.cut()
	}
}

// Leave gives the slot back. It is false when the slot was given up
// before: its cut was called, or is about to be, so the connection must
// be ended however far it got. Leaving twice is harmless.
func (s *Slot) Leave() bool {
	s.tab.mu.Lock()
	defer s.tab.mu.Unlock()
	s.tab.remove(s)
	return !s.gone.Load()
}

// Gone says the slot was given to a newer connection or shed.
func (s *Slot) Gone() bool { return s.gone.Load() }

// Busy marks the connection as doing something (a request under way) or
// idle: idle connections give up their slots first.
func (s *Slot) Busy(b bool) { s.busy.Store(b) }

// Addr is the source the slot was taken for.
func (s *Slot) Addr() netip.Addr { return s.addr }
