package session

import (
	"sync"
	"time"
)

// trail is every entry's live progress as read at the test's start, at
// each tick of Run and when the senders stopped: what this end had
// counted at a moment it did not stop at, found again after the fact
// (ProgressAt). A peer that dies is noticed after its last report; the
// figures both ends counted end at that report, and this end's counts at
// that moment are read from the trail.
type trail struct {
	mu    sync.Mutex
	marks []trailMark
}

// trailMark is the entries' progress (packets, bytes) read at t.
type trailMark struct {
	t time.Time
	p [][2]uint64
}

// mark reads every entry's progress now.
func (s *Session) mark() {
	m := trailMark{t: s.clk.Now(), p: make([][2]uint64, len(s.entries))}
	for i, e := range s.entries {
		m.p[i][0], m.p[i][1] = e.f.Progress()
	}
	s.trail.mu.Lock()
	s.trail.marks = append(s.trail.marks, m)
	s.trail.mu.Unlock()
}

// ProgressAt is what entry e had counted (warmup included) at at, taken
// in a straight line between the two readings of the trail around it:
// the flows are read at the start, at each tick and when the senders
// stopped. Before the first reading it is the first's, after the last
// the last's. ok is false when e is not the session's or nothing was
// read.
func (s *Session) ProgressAt(e *Entry, at time.Time) (packets, bytes float64, ok bool) {
	idx := -1
	for i, x := range s.entries {
		if x == e {
			idx = i
		}
	}
	s.trail.mu.Lock()
	defer s.trail.mu.Unlock()
	ms := s.trail.marks
	if idx < 0 || len(ms) == 0 {
		return 0, 0, false
	}
	val := func(m trailMark) (float64, float64) {
		if idx >= len(m.p) {
			return 0, 0
		}
		return float64(m.p[idx][0]), float64(m.p[idx][1])
	}
	if !at.After(ms[0].t) {
		packets, bytes = val(ms[0])
		return packets, bytes, true
	}
	for i := 1; i < len(ms); i++ {
		if at.After(ms[i].t) {
			continue
		}
		p0, b0 := val(ms[i-1])
		p1, b1 := val(ms[i])
		span := ms[i].t.Sub(ms[i-1].t).Seconds()
		f := 1.0
		if span > 0 {
			f = at.Sub(ms[i-1].t).Seconds() / span
		}
		return p0 + f*(p1-p0), b0 + f*(b1-b0), true
	}
	packets, bytes = val(ms[len(ms)-1])
	return packets, bytes, true
}
