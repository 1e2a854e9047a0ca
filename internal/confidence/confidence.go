// Package confidence is the Student-t interval of a mean, shared by the
// loops that judge repeated rounds: tune auto's pairs of rounds and a plan
// matrix's cells.
package confidence

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is a mean with the half-width of its two-sided interval: Mean
// ± Half. N counts the figures; with fewer than two there is no interval
// (Half is 0 and OK is false).
type Interval struct {
	Mean, Half float64
	N          int
}

// OK says whether the interval exists (two figures or more).
func (i Interval) OK() bool { return i.N >= 2 }

// Low is the interval's lower end.
func (i Interval) Low() float64 { return i.Mean - i.Half }

// High is the interval's upper end.
func (i Interval) High() float64 { return i.Mean + i.Half }

// Mean is the mean of xs with its two-sided interval at confidence conf
// (0.95 for 95 %): t(1 − (1−conf)/2, n−1) · s/√n, s the sample standard
// deviation (Student's t: exact for normal figures, the quantile from
// gonum's distribution rather than a table cut at 30 degrees of freedom).
func Mean(xs []float64, conf float64) Interval {
	i := Interval{N: len(xs)}
	if i.N == 0 {
		return i
	}
	for _, x := range xs {
		i.Mean += x
	}
	i.Mean /= float64(i.N)
	if i.N < 2 {
		return i
	}
	var ss float64
	for _, x := range xs {
		ss += (x - i.Mean) * (x - i.Mean)
	}
	s := math.Sqrt(ss / float64(i.N-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(i.N - 1)}.Quantile(1 - (1-conf)/2)
	i.Half = t * s / math.Sqrt(float64(i.N))
	return i
}
