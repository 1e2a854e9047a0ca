package sample

import (
	"errors"
	"sync"
	"testing"
	"time"

	"linerate/box"
)

// fakeReader returns snapshots one simulated second apart, with CPU 0
// busy for half of each second (50 of 100 ticks), failing on the reads
// listed in fail.
type fakeReader struct {
	mu   sync.Mutex
	n    int
	t0   time.Time
	fail map[int]bool
}

func (f *fakeReader) read() (box.Counters, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.n
	f.n++
	if f.fail[i] {
		return box.Counters{}, errors.New("read failed")
	}
	ticks := uint64(100 * i)
	return box.Counters{
		Time:   f.t0.Add(time.Duration(i) * time.Second),
		CPU:    []box.CPUTimes{{ID: 0, User: ticks / 2, Idle: ticks / 2}},
		NetDev: map[string]box.NetDev{"eth0": {RxPackets: uint64(1000 * i)}},
	}, nil
}

// waitReads waits until the loop has read n snapshots.
func waitReads(t *testing.T, f *fakeReader, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		got := f.n
		f.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d reads in 5s", got)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLoopRecordsEachInterval(t *testing.T) {
	f := &fakeReader{t0: time.Unix(1000, 0)}
	var seen []box.Rates
	var mu sync.Mutex
	l := Start(f.read, 10*time.Millisecond, func(r box.Rates) {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
	})
	waitReads(t, f, 4)
	rates, err := l.Stop()
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(rates) < 3 || len(rates) != len(seen) {
		t.Fatalf("%d intervals, %d callbacks", len(rates), len(seen))
	}
	for i, r := range rates {
		if r.Seconds != 1 {
			t.Errorf("interval %d: %v seconds, want 1 (the snapshots' own times)", i, r.Seconds)
		}
		if i > 0 && !r.Start.Equal(rates[i-1].End) {
			t.Errorf("interval %d starts %v, the one before ended %v", i, r.Start, rates[i-1].End)
		}
		if got := r.NetDev["eth0"].RxPps; got != 1000 {
			t.Errorf("interval %d: rx %v pps, want 1000", i, got)
		}
		if len(r.CPU) != 1 || r.CPU[0].Busy != 50 {
			t.Errorf("interval %d: cpu %+v, want 50%% busy", i, r.CPU)
		}
	}
}

func TestLoopKeepsGoingAfterAFailedRead(t *testing.T) {
	f := &fakeReader{t0: time.Unix(1000, 0), fail: map[int]bool{1: true}}
	l := Start(f.read, 2*time.Millisecond, nil)
	waitReads(t, f, 5)
	rates, err := l.Stop()
	if err == nil {
		t.Error("a failed read was not reported")
	}
	if len(rates) < 2 {
		t.Fatalf("%d intervals after one failed read", len(rates))
	}
	// The failed read leaves a two-second interval, not a wrong rate.
	if rates[0].Seconds != 2 || rates[0].NetDev["eth0"].RxPps != 1000 {
		t.Errorf("first interval %v s, %v pps", rates[0].Seconds, rates[0].NetDev["eth0"].RxPps)
	}
}

func TestLoopNothingReadable(t *testing.T) {
	l := Start(func() (box.Counters, error) { return box.Counters{}, errors.New("no /proc") }, time.Millisecond, nil)
	time.Sleep(5 * time.Millisecond)
	rates, err := l.Stop()
	if err == nil || len(rates) != 0 {
		t.Fatalf("rates %d, err %v", len(rates), err)
	}
}

func TestFunc(t *testing.T) {
	f := &fakeReader{t0: time.Unix(0, 0)}
	stop := Func(f.read, time.Millisecond)(nil)
	time.Sleep(5 * time.Millisecond)
	rates, err := stop()
	if err != nil || len(rates) == 0 {
		t.Fatalf("rates %d, err %v", len(rates), err)
	}
}

// Stream hands every interval to each and keeps none.
func TestStreamKeepsNothing(t *testing.T) {
	f := &fakeReader{t0: time.Unix(1000, 0)}
	var mu sync.Mutex
	seen := 0
	l := Stream(f.read, time.Millisecond, func(r box.Rates) {
		mu.Lock()
		seen++
		mu.Unlock()
		if r.NetDev["eth0"].RxPps != 1000 {
			t.Errorf("rx %v pps, want 1000", r.NetDev["eth0"].RxPps)
		}
	})
	waitReads(t, f, 5)
	rates, err := l.Stop()
	mu.Lock()
	defer mu.Unlock()
	if err != nil || len(rates) != 0 || seen < 4 {
		t.Errorf("Stop: %d rates, %v; each saw %d: want none kept, no error, at least 4 seen", len(rates), err, seen)
	}
	if len(l.rates) != 0 {
		t.Errorf("the loop holds %d intervals", len(l.rates))
	}
}

// TestWithQueues: a driver's qstats replace what ethtool gave for its
// interface and add interfaces ethtool had none for; a QueueReader that
// fails leaves the snapshot whole.
func TestWithQueues(t *testing.T) {
	base := Reader(func() (box.Counters, error) {
		return box.Counters{RxQueues: map[string][]uint64{"eth0": {1, 2}, "eth1": {7}}}, nil
	})
	var asked []string
	r := base.WithQueues(func(ifaces []string) (map[string][]uint64, error) {
		asked = ifaces
		return map[string][]uint64{"eth0": {10, 20, 30}, "eth2": {5}}, nil
	}, []string{"eth0", "eth2"})
	c, err := r()
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 2 || len(c.RxQueues["eth0"]) != 3 || c.RxQueues["eth0"][2] != 30 || c.RxQueues["eth1"][0] != 7 || c.RxQueues["eth2"][0] != 5 {
		t.Errorf("RxQueues = %v (asked for %v)", c.RxQueues, asked)
	}
	r = base.WithQueues(func([]string) (map[string][]uint64, error) { return nil, errors.New("no netdev family") }, nil)
	if c, err := r(); err != nil || len(c.RxQueues["eth0"]) != 2 {
		t.Errorf("a failed queue read: %v %v", c.RxQueues, err)
	}
}
