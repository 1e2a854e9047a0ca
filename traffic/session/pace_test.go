package session

import (
	"math"
	"testing"
	"time"
)

func TestPacer(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := NewPacer(1000, 10, t0) // 1000 pps, burst max(4·10, 100) = 100
	if n, wait := p.Allow(t0, 10); n != 0 || wait != time.Millisecond {
		t.Fatalf("at start: %d, %v", n, wait)
	}
	n, _ := p.Allow(t0.Add(5*time.Millisecond), 10)
	if n != 5 {
		t.Fatalf("after 5ms: %d, want 5", n)
	}
	p.Sent(n)
	// A one-second stall allows one burst, not a second's worth.
	n, _ = p.Allow(t0.Add(time.Second+5*time.Millisecond), 1000)
	if n != 100 || math.Round(p.behind) != 900 {
		t.Fatalf("after a stall: %d, want the burst of 100; behind %v, want 900", n, p.behind)
	}
	// Over a long run, exactly the rate goes.
	p = NewPacer(1000, 10, t0)
	total := 0
	for ms := 0; ms <= 10000; ms++ {
		n, _ := p.Allow(t0.Add(time.Duration(ms)*time.Millisecond), 10)
		p.Sent(n)
		total += n
	}
	if total != 10000 {
		t.Fatalf("10 s at 1000 pps sent %d", total)
	}
	if n, wait := NewPacer(0, 8, t0).Allow(t0, 8); n != 8 || wait != 0 {
		t.Fatalf("unlimited: %d %v", n, wait)
	}
}

func TestBatchFor(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want int
	}{{0, 128}, {100, 1}, {50000, 50}, {1e7, 128}} {
		if got := BatchFor(tc.rate, 128); got != tc.want {
			t.Errorf("BatchFor(%v) = %d, want %d", tc.rate, got, tc.want)
		}
	}
}
