package session

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"linerate/internal/order"
	"linerate/results"
	"linerate/traffic/sock"
)

// LinkWatch records when the interfaces holding an end's test addresses
// go down and come up during a run, from the kernel's link notifications
// (rtnetlink's link group) in the end's namespace: an event, not a poll,
// so a cut shorter than any polling period is still seen.
type LinkWatch struct {
	side   results.Side
	clk    Clock
	ifaces map[int]string // by index: the test's interfaces
	done   chan struct{}
	over   chan struct{} // closed when the updates' channel closed
	once   sync.Once
	ended  time.Time // when stop was called: an interface still down is down to here

	mu      sync.Mutex
	down    map[int]linkDown // interfaces down now
	events  []linkSpan
	dropped int // events past results.MaxLinkEvents
	err     error
}

// linkDown is an interface that went down at since for why.
type linkDown struct {
	since time.Time
	why   string
}

// linkSpan is one event: up is zero while the interface is still down.
type linkSpan struct {
	iface    string
	why      string
	down, up time.Time
}

// NewLinkWatch subscribes, where setup runs (the end's namespace), to the
// link changes of the interfaces holding locals. A watch that cannot start
// says why in its result's error and records nothing.
func NewLinkWatch(side results.Side, clk Clock, locals []netip.Addr, setup func(func() error) error) *LinkWatch {
	w := &LinkWatch{side: side, clk: clk, ifaces: map[int]string{}, done: make(chan struct{}),
		over: make(chan struct{}), down: map[int]linkDown{}}
	ch := make(chan netlink.LinkUpdate, 64)
	err := setup(func() error {
		for _, a := range locals {
			name, idx, err := sock.InterfaceOf(a)
			if err != nil {
				return err
			}
			w.ifaces[idx] = name
		}
		// The socket belongs to the namespace it is made in.
		return netlink.LinkSubscribeWithOptions(ch, w.done, netlink.LinkSubscribeOptions{ListExisting: true,
			ErrorCallback: func(err error) { w.fail(err) }})
	})
	if err != nil {
		w.err = fmt.Errorf("link events: %w", err)
		close(w.over)
		return w
	}
	go w.read(ch)
	return w
}

// fail records the subscription's first error. One that comes after stop
// is stop's doing: closing the socket under a receive that waits ends it
// with EAGAIN (vishvananda/netlink v1.3.1 returns the last try's error),
// which says nothing about the run.
func (w *LinkWatch) fail(err error) {
	select {
	case <-w.done:
		return
	default:
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = fmt.Errorf("link events: %w", err)
	}
}

// read files the updates until the subscription ends.
func (w *LinkWatch) read(ch <-chan netlink.LinkUpdate) {
	defer close(w.over)
	for u := range ch {
		a := u.Link.Attrs()
		if _, ok := w.ifaces[a.Index]; !ok {
			continue
		}
		w.update(a.Index, downWhy(a), w.clk.Now())
	}
}

// downWhy is why a link is down, or "" when it is up: set down, or up
// without carrier (a veth whose peer is down, a NIC without cable), or an
// operational state that carries nothing (its lower device down). The
// carrier is the flags' IFF_LOWER_UP, which changes with the carrier: the
// operational state follows it up to a second later (the kernel's
// linkwatch batches those).
func downWhy(a *netlink.LinkAttrs) string {
	switch {
	case a.Flags&net.FlagUp == 0:
		return "set down"
	case a.RawFlags&unix.IFF_LOWER_UP == 0:
		return "no carrier"
	case a.OperState == netlink.OperLowerLayerDown:
		return "lower layer down"
	case a.OperState == netlink.OperNotPresent:
		return "not present"
	}
	return ""
}

// update records interface idx as down for why (or up: "") at now.
func (w *LinkWatch) update(idx int, why string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d, wasDown := w.down[idx]
	switch {
	case why != "" && !wasDown:
		w.down[idx] = linkDown{since: now, why: why}
	case why == "" && wasDown:
		delete(w.down, idx)
		w.file(linkSpan{iface: w.ifaces[idx], why: d.why, down: d.since, up: now})
	}
}

// file keeps one event, up to results.MaxLinkEvents. Called with w.mu held.
func (w *LinkWatch) file(s linkSpan) {
	if len(w.events) >= results.MaxLinkEvents {
		w.dropped++
		return
	}
	w.events = append(w.events, s)
}

// stop ends the subscription and waits for its reader.
func (w *LinkWatch) stop() {
	if w == nil {
		return
	}
	w.once.Do(func() {
		now := w.clk.Now()
		close(w.done)
		<-w.over
		w.mu.Lock()
		w.ended = now
		w.mu.Unlock()
	})
}

// result is the events, in seconds since start, with an interface still
// down counted to the watch's stop; valid after stop. The error says why the watch saw nothing, or how
// many events it left out.
func (w *LinkWatch) result(start time.Time) ([]results.LinkEvent, error) {
	if w == nil {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	spans := slices.Clone(w.events)
	for idx, d := range w.down {
		spans = append(spans, linkSpan{iface: w.ifaces[idx], why: d.why, down: d.since})
	}
	var out []results.LinkEvent
	for _, s := range spans {
		down := s.down
		if down.Before(start) {
			down = start // down before the run: down from its start
		}
		e := results.LinkEvent{Side: w.side, Target: -1, Iface: s.iface, Why: s.why, Down: down.Sub(start).Seconds()}
		to := w.ended
		if !s.up.IsZero() {
			up := s.up.Sub(start).Seconds()
			e.Up, to = &up, s.up
		}
		e.Seconds = max(to.Sub(down).Seconds(), 0)
		out = append(out, e)
	}
	order.Sort(out, func(a, b results.LinkEvent) int { return cmp.Compare(a.Down, b.Down) })
	err := w.err
	if w.dropped > 0 && err == nil {
		err = fmt.Errorf("link events: %d more left out (at most %d are kept)", w.dropped, results.MaxLinkEvents)
	}
	return out, err
}
