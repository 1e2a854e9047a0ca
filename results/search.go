package results

import (
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
	// OverCeiling of the path's ceiling, and what to suspect.
	Notes []string `json:"notes,omitempty"`
}
