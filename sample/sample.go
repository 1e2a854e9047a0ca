// Package sample owns the once-a-second recording of a machine's counters
// while traffic runs: a loop that takes a snapshot (box.Counters) every
// interval and keeps the rates between consecutive snapshots (box.Rates).
// It reads through a Reader function, so tests drive it with a fake one and
// commands with Live.
package sample

import (
	"errors"
	"sync"
	"time"

	"linerate/box"
	"linerate/source/ethtool"
	"linerate/source/procfs"
)

// Reader takes one snapshot of the counters.
type Reader func() (box.Counters, error)

// Live reads this machine's counters (in the network namespace of the
// calling thread: the per-namespace files come from /proc/thread-self/net).
// et may be nil; ifaces limits the ethtool counters.
func Live(proc procfs.FS, et ethtool.Client, ifaces []string) Reader {
	return func() (box.Counters, error) { return box.ReadCounters(proc, et, ifaces) }
}

// QueueReader reads the packets of each receive queue of the named
// interfaces (every interface that has them when ifaces is empty), by
// interface name: qstats.ByName, which this package does not link so that
// the readers of samples link no netlink.
type QueueReader func(ifaces []string) (map[string][]uint64, error)

// WithQueues lays the receive queues q reads over those r's snapshots
// hold (a driver's netdev qstats over its ethtool statistics: newer
// drivers list no per-queue packets in ethtool -S). A failed q leaves the
// snapshot as r read it.
func (r Reader) WithQueues(q QueueReader, ifaces []string) Reader {
	return func() (box.Counters, error) {
		c, err := r()
		if err != nil {
			return c, err
		}
		qs, qerr := q(ifaces)
		if qerr != nil {
			return c, nil
		}
		for name, v := range qs {
			if c.RxQueues == nil {
				c.RxQueues = map[string][]uint64{}
			}
			c.RxQueues[name] = v
		}
		return c, nil
	}
}

// Loop records rates once an interval until Stop.
type Loop struct {
	read  Reader
	every time.Duration
	each  func(box.Rates)
	clock func() time.Time
	// keep says whether Stop returns the intervals (Start) or not
	// (Stream, which runs for as long as someone watches).
	keep bool

	mu    sync.Mutex
	rates []box.Rates
	prev  *box.Counters
	err   error
	stop  chan struct{}
	done  chan struct{}
}

// Start takes a first snapshot now and then one every interval; each
// interval's rates go to each (if not nil) as they are made.
func Start(read Reader, every time.Duration, each func(box.Rates)) *Loop {
	return start(read, every, each, true)
}

// Stream is Start for a loop that may run for days: each interval goes
// to each and is not kept, so Stop returns no rates (and only a read's
// error).
func Stream(read Reader, every time.Duration, each func(box.Rates)) *Loop {
	return start(read, every, each, false)
}

func start(read Reader, every time.Duration, each func(box.Rates), keep bool) *Loop {
	l := &Loop{read: read, every: every, each: each, clock: time.Now, keep: keep,
		stop: make(chan struct{}), done: make(chan struct{})}
	l.take()
	go l.run()
	return l
}

func (l *Loop) run() {
	defer close(l.done)
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.take()
		}
	}
}

// take reads a snapshot and, with the one before, records an interval.
func (l *Loop) take() {
	c, err := l.read()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if l.err == nil {
			l.err = err
		}
		return
	}
	if c.Time.IsZero() {
		c.Time = l.clock()
	}
	var r *box.Rates
	if l.prev != nil && c.Time.After(l.prev.Time) {
		d := box.Delta(*l.prev, c)
		if l.keep {
			l.rates = append(l.rates, d)
		}
		r = &d
	}
	l.prev = &c
	if r != nil && l.each != nil {
		each := l.each
		l.mu.Unlock()
		each(*r)
		l.mu.Lock()
	}
}

// Stop takes a last snapshot (closing the last, partial interval), ends
// the loop and returns every interval. The error is the first read that
// failed, or nil; rates may be complete even with one failed read.
func (l *Loop) Stop() ([]box.Rates, error) {
	close(l.stop)
	<-l.done
	l.take()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keep && len(l.rates) == 0 && l.err == nil {
		l.err = errors.New("no interval was recorded")
	}
	return l.rates, l.err
}

// Func adapts a Reader to the shape the traffic engine asks for: start
// recording every interval, and a function that stops and returns.
func Func(read Reader, every time.Duration) func(each func(box.Rates)) func() ([]box.Rates, error) {
	return func(each func(box.Rates)) func() ([]box.Rates, error) {
		return Start(read, every, each).Stop
	}
}
