package search

import (
	"math"
	"time"
)

// Buffering is what a path holds ahead of its slowest part before it
// loses a frame: a queue, a shaper's full bucket. A trial at a rate over
// the ceiling loses nothing while what it sends beyond the ceiling,
// (rate − CeilingFPS) × duration, still fits in Frames: a short trial
// passes at rates the path cannot carry. RFC 2544 asks for trials long
// enough that no buffer hides loss; the final trials over the
// ceiling are made that long (Trial).
type Buffering struct {
	// Frames is how many frames the path holds before it drops.
	Frames float64 `json:"frames"`
	// CeilingFPS is the rate the buffering drains at: the path's ceiling.
	CeilingFPS float64 `json:"ceiling_fps"`
	// What names where Frames comes from ("tbf 1: on lra in client: queue
	// 256,072 B + bucket 131,072 B").
	What string `json:"what,omitempty"`
}

// BufferMargin is how many times over a final trial above the ceiling
// fills the path's buffering: one time over would leave a rate just
// fitting it passing, and a drain faster than the ceiling's model (the
// ends' clocks, the shaper's rounding) would hide the first frames lost.
const BufferMargin = 2

// Trial is the duration of a final trial at rate: final at or below the
// ceiling, where no queue grows; over it, long enough that the excess
// fills the buffering BufferMargin times, at least final and at most
// longest. capped reports that longest cut it short: the trial may pass
// at a rate over the ceiling (up to Hides(longest, 0)).
func (b Buffering) Trial(rate float64, final, longest time.Duration) (d time.Duration, capped bool) {
	excess := rate - b.CeilingFPS
	if excess <= 0 || b.Frames <= 0 {
		return final, false
	}
	need := BufferMargin * b.Frames / excess
	if need >= longest.Seconds() {
		return max(longest, final), need > longest.Seconds()
	}
	return max(final, time.Duration(math.Ceil(need*float64(time.Second)))), false
}

// Hides is the fastest rate at which a trial of d loses at most loss
// (0 for the NDR) of what it sends while the buffering takes the first
// Frames of its excess: (ceiling + Frames/d) / (1 − loss). Over the
// ceiling, the trial's loss ratio is ((rate − ceiling) × d − Frames) /
// (rate × d), less than the path loses once its buffering is full.
func (b Buffering) Hides(d time.Duration, loss float64) float64 {
	if d <= 0 || loss >= 1 {
		return math.Inf(1)
	}
	return (b.CeilingFPS + b.Frames/d.Seconds()) / (1 - loss)
}
