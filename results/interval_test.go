package results

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"linerate/box"
)

func TestGroupIntervals(t *testing.T) {
	var got []IntervalStats
	f := GroupIntervals(3*time.Second, func(iv IntervalStats) { got = append(got, iv) })
	lines := []IntervalStats{
		{T: 1, Warmup: true, SentPPS: 100, ReceivedBPS: 8, CPU: []box.CPUUse{{ID: 0, Busy: 30}}},
		{T: 2, SentPPS: 200, ReceivedBPS: 16, CPU: []box.CPUUse{{ID: 0, Busy: 60}}},
		{T: 3, SentPPS: 300, ReceivedBPS: 24, CPU: []box.CPUUse{{ID: 0, Busy: 90}}},
		{T: 4, SentPPS: 50},
		{T: 5.5, SentPPS: 100}, // a late tick: weighted by its 1.5 s
		{T: 6, SentPPS: 400},
		{T: 7, SentPPS: 1},
	}
	for _, iv := range lines {
		f(iv)
	}
	if len(got) != 2 {
		t.Fatalf("%d lines for 7 s at -i 3, want 2 (the last, partial second is not printed): %+v", len(got), got)
	}
	a, b := got[0], got[1]
	if a.T != 3 || !a.Warmup || math.Abs(a.SentPPS-200) > 1e-9 || math.Abs(a.ReceivedBPS-16) > 1e-9 {
		t.Errorf("first line %+v, want t=3, warmup (its first second is), 200 pps, 16 b/s", a)
	}
	if b := got[1]; b.Warmup {
		t.Errorf("second line %+v: no warmup in it", b)
	}
	if len(a.CPU) != 1 || math.Abs(a.CPU[0].Busy-60) > 1e-9 {
		t.Errorf("first line cpu %+v, want 60%% busy", a.CPU)
	}
	if want := (50*1 + 100*1.5 + 400*0.5) / 3; b.T != 6 || math.Abs(b.SentPPS-want) > 1e-9 {
		t.Errorf("second line %+v, want t=6, %.1f pps", b, want)
	}
	var all []IntervalStats
	g := GroupIntervals(time.Second, func(iv IntervalStats) { all = append(all, iv) })
	for _, iv := range lines {
		g(iv)
	}
	if len(all) != len(lines) {
		t.Errorf("-i 1 passed %d of %d lines", len(all), len(lines))
	}
}

func TestGroupIntervalsUnknown(t *testing.T) {
	var got []IntervalStats
	f := GroupIntervals(2*time.Second, func(iv IntervalStats) { got = append(got, iv) })
	for _, iv := range []IntervalStats{
		{T: 1, SentPPS: 100, ReceivedPPS: 100},
		{T: 2, SentPPS: 100, ReceivedUnknown: true},
		{T: 3, SentPPS: 100, ReceivedPPS: 90},
		{T: 4, SentPPS: 100, ReceivedPPS: 100},
	} {
		f(iv)
	}
	if len(got) != 2 {
		t.Fatalf("%d lines, want 2: %+v", len(got), got)
	}
	if a := got[0]; !a.ReceivedUnknown || a.ReceivedPPS != 0 || a.SentUnknown || a.SentPPS != 100 {
		t.Errorf("line with an unknown second %+v: want received unknown (no figure), sent 100 pps", a)
	}
	if b := got[1]; b.ReceivedUnknown || b.ReceivedPPS != 95 {
		t.Errorf("line of known seconds %+v: want received 95 pps", b)
	}
}

func TestIntervalJSON(t *testing.T) {
	// A result saved before the unknown flags existed: every figure known.
	var old IntervalStats
	if err := json.Unmarshal([]byte(`{"t":2,"warmup":false,"sent_pps":100,"sent_bps":800,"received_pps":0,"received_bps":0}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.SentUnknown || old.ReceivedUnknown || old.SentPPS != 100 {
		t.Errorf("old interval read as %+v: want every figure known, received a measured 0", old)
	}
	iv := IntervalStats{T: 3, SentPPS: 100, SentBPS: 800, ReceivedUnknown: true}
	b, err := json.Marshal(iv)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["received_pps"] != nil || m["received_bps"] != nil || m["received_unknown"] != true || m["sent_pps"] != 100.0 {
		t.Errorf("unknown received side written as %s: want null rates and received_unknown", b)
	}
	if _, ok := m["sent_unknown"]; ok {
		t.Errorf("known sent side written with sent_unknown: %s", b)
	}
	var back IntervalStats
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.T != iv.T || back.SentPPS != iv.SentPPS || back.SentBPS != iv.SentBPS || !back.ReceivedUnknown || back.ReceivedPPS != 0 {
		t.Errorf("read back as %+v, want %+v", back, iv)
	}
}
