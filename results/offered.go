package results

import (
	"math"

	"linerate/internal/units"
	"linerate/wire"
)

// LoadsApart is how far apart, relative to the larger, two runs' sent
// rates may be and still count as offered the same load: beyond it a
// change of loss or of received rate between them may be the load's, not
// the change's.
const LoadsApart = 0.05

// Offered is the load a run offered: what it sent and what was asked.
type Offered struct {
	SentPPS float64
	Asked   wire.Rate
}

// Offered is the run's offered load over its measured window.
func (r *Result) Offered() Offered { return Offered{SentPPS: r.Summary.SentPPS, Asked: r.Spec.Rate} }

// String is "96.4 kpps sent (asked 100kpps)" or "… (as fast as possible)".
func (o Offered) String() string {
	asked := "as fast as possible"
	if !o.Asked.Unlimited() {
		asked = "asked " + o.Asked.String()
	}
	return units.Rate(o.SentPPS, "pps") + " sent (" + asked + ")"
}

// LoadsDiffer says whether two sent rates are more than LoadsApart apart.
func LoadsDiffer(a, b float64) bool {
	hi := math.Max(math.Abs(a), math.Abs(b))
	return hi > 0 && math.Abs(a-b) > LoadsApart*hi
}
