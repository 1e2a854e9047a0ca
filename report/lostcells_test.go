package report

import (
	"testing"

	"linerate/results"
)

// TestLostCells: a direction whose receiver died shows its loss as
// unknown, alone or beside what other directions lost.
func TestLostCells(t *testing.T) {
	for _, c := range []struct {
		t          results.Totals
		lost, loss string
	}{
		{results.Totals{LostPackets: 7}, "7", "r"},
		{results.Totals{LossUnknown: true}, "unknown", "unknown"},
		{results.Totals{LostPackets: 7, LossUnknown: true}, "7 + unknown", "r + unknown"},
	} {
		if lost, loss := lostCells(&c.t, "r"); lost != c.lost || loss != c.loss {
			t.Errorf("%+v: %q, %q; want %q, %q", c.t, lost, loss, c.lost, c.loss)
		}
	}
}
