package live

import (
	"sync"

	"linerate/box"
	"linerate/results"
)

// subscriberBuffer is how many snapshots a subscriber may lag behind
// before it is dropped.
const subscriberBuffer = 8

// Hub keeps the latest Snapshot and sends each new one to its
// subscribers. Publishing never blocks: a subscriber whose buffer is full
// is dropped (its channel closed). The zero Hub is not usable: NewHub.
type Hub struct {
	view *View

	mu     sync.Mutex
	seq    uint64
	latest *Snapshot
	bench  *results.IntervalStats
	totals Totals
	subs   map[chan Snapshot]struct{}
	closed bool
}

// NewHub makes a hub that turns rates into snapshots with view.
func NewHub(view *View) *Hub {
	return &Hub{view: view, subs: map[chan Snapshot]struct{}{}}
}

// Rates publishes one interval of the sampler, with the last bench
// second if there is one, and returns the snapshot published.
func (h *Hub) Rates(r box.Rates) Snapshot {
	s := h.view.Snapshot(r)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.totals.addInterval(s)
	s.Bench = h.bench
	return h.publish(s)
}

// Bench publishes one second of a running bench with the last sampled
// rates (or none yet).
func (h *Hub) Bench(iv results.IntervalStats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bench = benchOf(iv)
	h.totals.addBench(iv)
	var s Snapshot
	if h.latest != nil {
		s = *h.latest
	}
	s.Bench = h.bench
	h.publish(s)
}

// publish numbers s, keeps it and offers it to every subscriber; h.mu is
// held.
func (h *Hub) publish(s Snapshot) Snapshot {
	if h.closed {
		return s
	}
	h.seq++
	s.Seq = h.seq
	h.latest = &s
	for ch := range h.subs {
		select {
		case ch <- s:
		default:
			delete(h.subs, ch)
			close(ch)
		}
	}
	return s
}

// Latest is the last snapshot published; ok is false before the first.
func (h *Hub) Latest() (s Snapshot, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.latest == nil {
		return Snapshot{}, false
	}
	return *h.latest, true
}

// Metrics is the last snapshot published with a copy of the counters so
// far, for /metrics: the counters are copied when scraped, not on every
// publish. ok is false before the first snapshot.
func (h *Hub) Metrics() (s Snapshot, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.latest == nil {
		return Snapshot{}, false
	}
	s = *h.latest
	s.Totals = h.totals.clone()
	return s, true
}

// Subscribe returns a channel that receives every snapshot published from
// now on, and a function that ends the subscription. The channel is
// closed when the subscriber falls behind, when cancel is called, or when
// the hub is closed.
func (h *Hub) Subscribe() (<-chan Snapshot, func()) {
	ch := make(chan Snapshot, subscriberBuffer)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(ch)
		return ch, func() {}
	}
	h.subs[ch] = struct{}{}
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.subs[ch]; ok {
			delete(h.subs, ch)
			close(ch)
		}
	}
}

// Close ends every subscription; later publications are ignored.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for ch := range h.subs {
		delete(h.subs, ch)
		close(ch)
	}
}
