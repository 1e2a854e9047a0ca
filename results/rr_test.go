package results

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"linerate/box"
)

// TestHistogramQuantiles compares the histogram's percentiles with exact
// ones over durations spread from nanoseconds to seconds: each within its
// bucket's 1/64, min and max exact.
func TestHistogramQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h, a, b Histogram
	var all []time.Duration
	for i := range 100000 {
		d := time.Duration(r.ExpFloat64() * float64(time.Duration(1)<<(i%30)))
		all = append(all, d)
		h.Add(d)
		if i%2 == 0 {
			a.Add(d)
		} else {
			b.Add(d)
		}
	}
	a.Merge(&b)
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := all[int(q*float64(len(all))+0.999999)-1]
		got := h.Quantile(q)
		if diff := float64(got - exact); diff > float64(exact)/32+1 || -diff > float64(exact)/32+1 {
			t.Errorf("q%.3f: %s, exact %s", q, got, exact)
		}
		if a.Quantile(q) != got {
			t.Errorf("q%.3f: merged halves give %s, the whole %s", q, a.Quantile(q), got)
		}
	}
	l := h.Latency()
	if l.Min != float64(all[0])/1e3 || l.Max != float64(all[len(all)-1])/1e3 {
		t.Errorf("min %v max %v, want %v %v", l.Min, l.Max, all[0], all[len(all)-1])
	}
	if !(l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Errorf("out of order: %+v", l)
	}
	var empty Histogram
	if empty.Latency() != (RRLatency{}) || empty.Quantile(0.5) != 0 {
		t.Error("an empty histogram has figures")
	}
}

// TestBucketsCover checks every bucket's middle falls in that bucket.
func TestBucketsCover(t *testing.T) {
	for i := range 64 * histSub {
		v := bucketValue(i)
		if v < 0 {
			break // past int64
		}
		if bucket(v) != i {
			t.Fatalf("bucket %d: middle %d falls in %d", i, v, bucket(v))
		}
	}
}

func TestConntrackUse(t *testing.T) {
	samples := []box.Rates{
		{},
		{Conntrack: &box.ConntrackRate{Start: 10, Entries: 90, Max: 100}},
		{Conntrack: &box.ConntrackRate{Start: 90, Entries: 100, Max: 100, EarlyDrop: 3}},
		{Conntrack: &box.ConntrackRate{Start: 100, Entries: 80, Max: 100, Drop: 2}},
	}
	use, ok := Conntrack("router", samples)
	want := ConntrackUse{Host: "router", Start: 10, Peak: 100, End: 80, Max: 100, Drop: 2, EarlyDrop: 3}
	if !ok || use != want || !use.Full() {
		t.Errorf("got %+v %v, want %+v", use, ok, want)
	}
	if _, ok := Conntrack("x", samples[:1]); ok {
		t.Error("conntrack from samples without it")
	}
	if (ConntrackUse{Peak: 50, Max: 100}).Full() {
		t.Error("half a table is full")
	}
}
