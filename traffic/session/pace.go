package session

import (
	"math"
	"time"
)

// Pacer spreads a thread's packets evenly in time: by time t since start,
// at most rate·t packets may have gone. A thread that falls behind (a sleep
// that overslept, a busy machine) catches up by at most one burst of 100
// ms worth of packets, so that the asked rate is met on average but a long
// stall does not turn into a flood. What it could not catch up is counted
// in behind.
type Pacer struct {
	rate   float64 // packets per second; 0 = unlimited
	start  time.Time
	done   float64 // packets accounted for since start
	burst  float64
	behind float64 // packets given up on after stalls
}

// NewPacer paces rate packets a second (0: unlimited) from now, for a
// sender of batches of up to batch packets: after a stall it catches up
// by at most four batches or a tenth of a second's packets, whichever is
// more.
func NewPacer(rate float64, batch int, now time.Time) *Pacer {
	return &Pacer{rate: rate, start: now, burst: math.Max(float64(4*batch), rate*0.1)}
}

// Allow returns how many packets (at most max) may go at now, and when
// none may, how long to wait for the next one.
func (p *Pacer) Allow(now time.Time, limit int) (int, time.Duration) {
	if p.rate <= 0 {
		return limit, 0
	}
	due := now.Sub(p.start).Seconds() * p.rate
	if due-p.done > p.burst {
		p.behind += due - p.burst - p.done
		p.done = due - p.burst
	}
	n := int(due - p.done)
	if n <= 0 {
		wait := time.Duration((p.done + 1 - due) / p.rate * float64(time.Second))
		return 0, wait
	}
	return min(n, limit), 0
}

// Sent records n packets that went.
func (p *Pacer) Sent(n int) { p.done += float64(n) }

// Behind is the packets given up on after stalls.
func (p *Pacer) Behind() uint64 { return uint64(p.behind) }

// SentPart records part of a packet: a TCP write the socket took only
// part of is that part of a write.
func (p *Pacer) SentPart(f float64) { p.done += f }

// BatchFor picks a batch size that keeps a paced thread from sleeping more
// often than every millisecond or so, within [1, max].
func BatchFor(rate float64, limit int) int {
	if rate <= 0 {
		return limit
	}
	return min(max(int(rate/1000), 1), limit)
}
