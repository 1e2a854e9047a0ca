package results

import (
	"linerate/box"
	"linerate/ceiling"
	"linerate/ledger"
	"linerate/search"
)

// SizeSearch is the search of one frame size in a result: the search's
// figures, and the drop ledger of one final-duration trial at the slowest
// rate that lost frames (where the loss begins), and notes.
type SizeSearch struct {
	search.SizeResult
	Ledger *ledger.Ledger `json:"ledger,omitempty"`
	// Notes flag what the figures cannot be taken as: an NDR or PDR over
	// the path's ceiling, why the trials did not show the loss (the
	// path's buffering, when the longest trial allowed could not overflow
	// it or it was not known) or what to suspect.
	Notes []string `json:"notes,omitempty"`
}

// SearchBuffering is the buffering ahead of res's path ceiling lim for
// frames of mix m (ceiling.PathBuffer over the interfaces whose queues
// hold what the test sends: the sending end's, unless its engine sends
// below them), as the search sizes its final trials by; nil when it was
// not read (a ceiling on the receiving end: its queues are for the other
// direction).
func SearchBuffering(res *Result, lim ceiling.PathLimit, m ceiling.Mix) *search.Buffering {
	senderSide := sendingSide(res)
	var path []box.PathIface
	for _, d := range res.Drops {
		if queuesHold(res, d.Side, senderSide) {
			path = append(path, d.Path...)
		}
	}
	b, ok := ceiling.PathBuffer(path, lim, m)
	if !ok {
		return nil
	}
	return &search.Buffering{Frames: b.Frames, CeilingFPS: lim.FPS, What: b.What}
}
