package page

import (
	"fmt"
	"math"
)

// soak charts a bench --soak beside its rate: the rate, the hottest
// thermal zone's temperature and each CPU's clock, second by second on one
// time axis, the span after the first throttle shaded in each.
func (v *benchView) soak() {
	s := v.res.Soak
	if s == nil || len(s.Samples) == 0 {
		return
	}
	var t, bps, temp []float64
	var khz [][]float64
	for _, x := range s.Samples {
		t = append(t, x.T)
		b := x.BPS
		if x.RateUnknown {
			b = math.NaN()
		}
		bps = append(bps, b)
		c := math.NaN()
		if z, ok := x.Hottest(); ok {
			c = z.Celsius
		}
		temp = append(temp, c)
		for len(khz) < len(x.KHz) {
			khz = append(khz, nil)
		}
		for i := range khz {
			m := math.NaN()
			if i < len(x.KHz) && x.KHz[i] > 0 {
				m = float64(x.KHz[i]) * 1e3
			}
			khz[i] = append(khz[i], m)
		}
	}
	var bands []band
	if th := s.Throttle; th != nil {
		bands = []band{{From: th.At, To: t[len(t)-1], Label: "throttled: " + th.Why}}
	}
	clocks := make([]series, len(khz))
	for i, y := range khz {
		clocks[i] = series{Name: fmt.Sprintf("CPU%d", i), Color: colour(i), Y: y}
	}
	v.Rates = append(v.Rates,
		chart{Title: "soak: rate, bits per second", X: t, Unit: "b/s", Bands: bands,
			Series: []series{{Name: "rate", Color: colour(1), Y: bps}}}.Render(),
		chart{Title: "soak: the hottest thermal zone, °C", X: t, Unit: "°C", Bands: bands,
			Series: []series{{Name: "temperature", Color: colour(3), Y: temp}}}.Render(),
		chart{Title: "soak: each CPU's clock", X: t, Unit: "Hz", Bands: bands, Series: clocks}.Render())
}
