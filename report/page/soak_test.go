package page

import (
	"encoding/json"
	"testing"

	"linerate/results"
)

// A soak's result draws its rate, the hottest zone's temperature and each
// CPU's clock on one time axis, the span after the throttle shaded; a run
// without a soak draws none of them.
func TestSoakCharts(t *testing.T) {
	run := longRun(t, 4)
	without := render(t, run)
	var r results.Result
	if err := json.Unmarshal(run.Result, &r); err != nil {
		t.Fatal(err)
	}
	r.Soak = &results.Soak{Limit: 600, Throttle: &results.SoakThrottle{At: 3, Why: "the firmware caps the clock (get_throttled 0x60006)"}}
	for s := 1; s <= 5; s++ {
		r.Soak.Samples = append(r.Soak.Samples, results.SoakSample{T: float64(s), BPS: 9.4e8,
			Zones: []results.SoakZone{{Name: "thermal_zone0", Celsius: 70 + float64(s)*3}}, KHz: []int64{1500000, 1500000}})
	}
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	run.Result = b
	page := render(t, run)
	checkOffline(t, page)
	contains(t, page, "soak: rate, bits per second", "soak: the hottest thermal zone, °C", "soak: each CPU's clock", "CPU1",
		"throttled: the firmware caps the clock (get_throttled 0x60006)")
	if got := charts(page) - charts(without); got != 3 {
		t.Errorf("a soak added %d charts, want 3", got)
	}
}
