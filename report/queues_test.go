package report

import (
	"testing"

	"linerate/results"
)

func TestQueueSpread(t *testing.T) {
	cases := []struct {
		q    results.QueueStat
		want string
	}{
		{results.QueueStat{Interface: "a", Counter: results.CounterXDP, Packets: []uint64{34359, 0, 51600, 51600}},
			"a (xdp): q0 34359 25 %, q1 0 0 %, q2 51600 38 %, q3 51600 38 %"},
		{results.QueueStat{Interface: "eth1", Counter: results.CounterEthtool, Packets: []uint64{0, 0}},
			"eth1 (ethtool): q0 0 0 %, q1 0 0 %"},
		{results.QueueStat{Interface: "a", Error: "a has no per-queue receive counters"}, "a has no per-queue receive counters"},
		{results.QueueStat{}, "no counts"},
	}
	for _, c := range cases {
		if got := QueueSpread(&c.q); got != c.want {
			t.Errorf("QueueSpread(%+v) = %q, want %q", c.q, got, c.want)
		}
	}
}
