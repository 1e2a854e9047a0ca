package udp

import (
	"fmt"
	"testing"
	"time"
)

// TestRecvGatherNext: how long a receiver thread lets datagrams gather
// after a call that emptied its socket.
func TestRecvGatherNext(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		name   string
		budget int
		n      int
		bytes  uint64
		dt     time.Duration // since the call before
		want   time.Duration
	}{
		// 40 datagrams in 100 µs: 400 kpps, half a batch (128) in 320 µs.
		{"400 kpps", 4 << 20 / gatherShare, 40, 40 * 18, 100 * time.Microsecond, 320 * time.Microsecond},
		// 100 kpps: half a batch would take 1.28 ms; gatherMax bounds it.
		{"100 kpps", 4 << 20 / gatherShare, 10, 10 * 18, 100 * time.Microsecond, gatherMax},
		// 10 kpps: 5 datagrams in gatherMax, under gatherMin: block instead.
		{"10 kpps", 4 << 20 / gatherShare, 1, 18, 100 * time.Microsecond, 0},
		// A full batch: the thread is behind, no sleep.
		{"behind", 4 << 20 / gatherShare, recvBatch, recvBatch * 18, 100 * time.Microsecond, 0},
		// A 64 KiB buffer: 8 KiB of queue holds 7 datagrams (1042 bytes
		// each), too few to wait for.
		{"small buffer", 64 << 10 / gatherShare, 40, 40 * 18, 100 * time.Microsecond, 0},
		// 1 MiB buffer, 1472-byte datagrams at 400 kpps: 128 KiB of queue
		// holds 52 of 2496 bytes, 131 µs of them.
		{"big datagrams", 1 << 20 / gatherShare, 40, 40 * 1472, 100 * time.Microsecond, 131 * time.Microsecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := recvGather{budget: c.budget}
			if d := g.next(c.n, c.bytes, t0); d != 0 {
				t.Errorf("first call: %v, want 0 (no rate yet)", d)
			}
			d := g.next(c.n, c.bytes, t0.Add(c.dt))
			if d < c.want-time.Microsecond || d > c.want+time.Microsecond {
				t.Errorf("sleep %v, want %v", d, c.want)
			}
		})
	}
	g := recvGather{budget: 1 << 20}
	g.next(10, 180, t0)
	if d := g.next(0, 0, t0.Add(time.Millisecond)); d != 0 {
		t.Errorf("after a call that took nothing: %v, want 0", d)
	}
}

// TestUDPReceiverGathers: at 100 kpps over loopback a receiver thread
// takes many datagrams per recvmmsg and loses none, with one socket (it
// blocks in recvmmsg) and with two (it waits in poll). Blocking at once
// after each call, as it did, it was woken for every few datagrams
// (docs/benchmarks.md, "receivers that let datagrams gather").
func TestUDPReceiverGathers(t *testing.T) {
	for _, ports := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d sockets", ports), func(t *testing.T) {
			tx, rx, recv := loopbackUDP(t, ports, 100000, 500*time.Millisecond)
			calls := recv.threads[0].calls
			// With two sockets each round asks both, one of them idle.
			per := float64(rx) / float64(max(calls, 1)) * float64(ports)
			t.Logf("sent %d, received %d in %d recvmmsg calls (%.1f a call to the busy socket)", tx, rx, calls, per)
			if tx < 20000 {
				t.Fatalf("sent %d datagrams in 500 ms: want about 50,000", tx)
			}
			if rx != tx {
				t.Errorf("received %d of %d", rx, tx)
			}
			if per < 10 {
				t.Errorf("%.1f datagrams a recvmmsg call: want at least 10", per)
			}
		})
	}
}
