package autotune

// Pair is one pair of interleaved rounds of a trial: the goal metric
// measured without the change (Before) and with it (After), one right
// after the other.
type Pair struct {
	Before float64 `json:"before"`
	After  float64 `json:"after"`
}

// FalseKeep is the chance, over every look of a trial, that tune auto
// keeps a change whose true gain is at or below the threshold (and
// likewise that it calls one that clears it "clearly not"). Each look's
// interval is two-sided at 1 − 2·FalseKeep/looks (Bonferroni over the
// looks: a trial looks again after each pair it adds, and every look is
// one more chance to be fooled).
const FalseKeep = 0.05

// LookConfidence is the two-sided confidence of each look's interval
// when a trial may look looks times.
func LookConfidence(looks int) float64 {
	return 1 - 2*FalseKeep/float64(max(looks, 1))
}
