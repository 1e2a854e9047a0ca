package confidence

import (
	"math"
	"testing"
)

// Worked by hand: 10, 12, 14 have mean 12 and s = 2; t(0.975, 2) =
// 4.3027, so the 95 % half-width is 4.3027 · 2/√3 = 4.968.
func TestMean(t *testing.T) {
	i := Mean([]float64{10, 12, 14}, 0.95)
	if i.Mean != 12 || math.Abs(i.Half-4.968) > 0.001 || !i.OK() || math.Abs(i.Low()-7.032) > 0.001 {
		t.Errorf("Mean = %+v", i)
	}
	if i := Mean([]float64{5}, 0.95); i.OK() || i.Mean != 5 || i.Half != 0 {
		t.Errorf("one figure: %+v", i)
	}
	if i := Mean(nil, 0.95); i.OK() || i.N != 0 {
		t.Errorf("none: %+v", i)
	}
	// A higher confidence, a wider interval.
	if w := Mean([]float64{10, 12, 14}, 0.99); w.Half <= i.Half {
		t.Errorf("99 %%: half %.3f, not wider than 95 %%'s %.3f", w.Half, i.Half)
	}
}
