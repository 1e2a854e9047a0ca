package results

import (
	"linerate/ledger"
	"linerate/search"
)

// SizeSearch is the search of one frame size in a result: the search's
// figures, and the drop ledger of one final-duration trial at the slowest
// rate that lost frames (where the loss begins).
type SizeSearch struct {
	search.SizeResult
	Ledger *ledger.Ledger `json:"ledger,omitempty"`
}
