package traffic

import (
	"math"
	"testing"
	"time"

	"linerate/wire"
)

func TestPacer(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newPacer(1000, 10, t0) // 1000 pps, burst max(4·10, 100) = 100
	if n, wait := p.allow(t0, 10); n != 0 || wait != time.Millisecond {
		t.Fatalf("at start: %d, %v", n, wait)
	}
	n, _ := p.allow(t0.Add(5*time.Millisecond), 10)
	if n != 5 {
		t.Fatalf("after 5ms: %d, want 5", n)
	}
	p.sent(n)
	// A one-second stall allows one burst, not a second's worth.
	n, _ = p.allow(t0.Add(time.Second+5*time.Millisecond), 1000)
	if n != 100 || math.Round(p.behind) != 900 {
		t.Fatalf("after a stall: %d, want the burst of 100; behind %v, want 900", n, p.behind)
	}
	// Over a long run, exactly the rate goes.
	p = newPacer(1000, 10, t0)
	total := 0
	for ms := 0; ms <= 10000; ms++ {
		n, _ := p.allow(t0.Add(time.Duration(ms)*time.Millisecond), 10)
		p.sent(n)
		total += n
	}
	if total != 10000 {
		t.Fatalf("10 s at 1000 pps sent %d", total)
	}
	if n, wait := newPacer(0, 8, t0).allow(t0, 8); n != 8 || wait != 0 {
		t.Fatalf("unlimited: %d %v", n, wait)
	}
}

func TestBatchFor(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want int
	}{{0, 128}, {100, 1}, {50000, 50}, {1e7, 128}} {
		if got := batchFor(tc.rate, 128); got != tc.want {
			t.Errorf("batchFor(%v) = %d, want %d", tc.rate, got, tc.want)
		}
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		host string
		port uint16
	}{
		{"10.0.0.2", "10.0.0.2", wire.DefaultPort},
		{"10.0.0.2:9000", "10.0.0.2", 9000},
		{"fe80::1", "fe80::1", wire.DefaultPort},
		{"[fe80::1]:80", "fe80::1", 80},
		{"[::1]", "::1", wire.DefaultPort},
		{"pi.lan", "pi.lan", wire.DefaultPort},
	} {
		h, p, err := parseTarget(tc.in)
		if err != nil || h != tc.host || p != tc.port {
			t.Errorf("parseTarget(%q) = %q %d %v", tc.in, h, p, err)
		}
	}
	for _, in := range []string{"", "h:0", "h:70000", ":80"} {
		if _, _, err := parseTarget(in); err == nil {
			t.Errorf("parseTarget(%q) accepted", in)
		}
	}
}
