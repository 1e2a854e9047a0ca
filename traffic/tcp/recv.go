package tcp

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"linerate/results"
	"linerate/traffic/session"
)

// Receiver reads connections to their end and counts goodput in the
// measured window: the bytes read between the window's start and end by
// this end's clock (not the bytes the sender wrote in its window, which
// may arrive later), and the data segments the kernel received between the
// same two instants (tcpi_data_segs_in). It is a receiving flow.
type Receiver struct {
	conns  []*tcpSock
	tm     session.Timing
	end    atomic.Int64 // the window's end, Unix nanoseconds (cut moves it)
	quit   atomic.Int64 // when stop ends the reads, Unix nanoseconds (0: not yet)
	live   []atomic.Uint64
	counts []results.Count
	stats  []results.TCPStat
	marks  []segMarks
	segs   segTotals
	timers []*time.Timer
	mu     sync.Mutex
	errs   []error
	loops  loopSet
}

// NewReceiver takes the connections (they are closed on error too).
func NewReceiver(tcs []*net.TCPConn, threads int) (*Receiver, error) {
	conns, err := takeTCPs(tcs)
	if err != nil {
		return nil, err
	}
	r := &Receiver{conns: conns, live: make([]atomic.Uint64, len(conns)), counts: streamCounts(len(conns)),
		stats: make([]results.TCPStat, len(conns)), marks: make([]segMarks, len(conns)), errs: make([]error, len(conns))}
	if err := r.loops.spread(conns, threads, unix.POLLIN); err != nil {
		closeSocks(conns)
		return nil, err
	}
	return r, nil
}

// tcpReadSize is what the receiver reads at once for each stream its loop
// serves (readSize).
const tcpReadSize = 128 << 10

// readSize is the size of a loop's reads: tcpReadSize for each of its
// streams, up to tcpStreamsPerLoop. The socket stays locked for the
// whole copy of a read, and what arrives meanwhile waits in its backlog:
// a loop serving several streams has the others' data to take while one
// copies, and gains from larger reads; one stream alone only waits
// longer (docs/benchmarks.md, "Reads as large as the loop", has the
// figures).
func readSize(streams int) int {
	return tcpReadSize * max(1, min(streams, tcpStreamsPerLoop))
}

// Run reads every connection until its end (or stop). Bytes read before
// tm.Measure are the warmup's, those read from tm.End on are late;
// neither is in the window's count.
func (r *Receiver) Run(tm session.Timing) {
	r.tm = tm
	r.end.Store(tm.End.UnixNano())
	r.mu.Lock()
	r.timers = append(r.timers,
		time.AfterFunc(time.Until(tm.Measure), func() { r.markAll(markStart) }),
		time.AfterFunc(time.Until(tm.End), func() { r.markAll(markEnd) }))
	r.mu.Unlock()
	r.loops.each(r.runLoop)
	r.stopTimers()
}

func (r *Receiver) markAll(m int) {
	for i, c := range r.conns {
		r.marks[i].take(c, m, false)
	}
}

// Cut ends the measured window at at, if that is before its planned end
// (the run was interrupted): later reads count as late.
func (r *Receiver) Cut(at time.Time) {
	if at.UnixNano() >= r.end.Load() {
		return
	}
	r.end.Store(at.UnixNano())
	r.markAll(markEnd)
}

// runLoop reads the loop's streams until each ends or stop's time comes.
func (r *Receiver) runLoop(l *tcpLoop) {
	buf := make([]byte, readSize(len(l.streams)))
	for _, op := range l.ops {
		op.trap, op.buf, op.size = unix.SYS_READ, buf, len(buf)
	}

	step := func(k, i int) (stepResult, time.Duration) {
		var n int
		var blocked bool
		var err error
		if q := r.quit.Load(); q == 0 || time.Now().UnixNano() < q {
			n, blocked, err = l.ops[k].call()
		}
		if n > 0 {
			now := time.Now()
			r.live[i].Add(uint64(n))
			cnt := &r.counts[i]
			switch {
			case now.Before(r.tm.Measure):
				cnt.Warmup += uint64(n)
			case now.UnixNano() < r.end.Load():
				cnt.Bytes += uint64(n)
			default:
				cnt.Late += uint64(n)
			}
			return stepMoved, 0
		}
		if blocked {
			return stepBlocked, 0
		}
		// The end of the stream (n == 0 from the read), an error, or
		// stop's time (no read):
		// nothing more arrives, the window's segments are all in.
		c := r.conns[i]
		r.marks[i].take(c, markEnd, false)
		r.stats[i] = tcpStat(c, i, ReceiverEnd)
		r.counts[i].Packets = r.marks[i].segments()
		if err != nil && !errors.Is(err, net.ErrClosed) {
			r.errs[i] = fmt.Errorf("tcp stream %d: %w", i, err)
		}
		return stepDone, 0
	}
	l.run("tcp-recv", step, r.untilQuit)
}

// untilQuit bounds a loop's wait: the time left until stop's, or a second
// while there is none (the wait is woken by Stop anyway).
func (r *Receiver) untilQuit() time.Duration {
	if q := r.quit.Load(); q != 0 {
		return max(time.Until(time.Unix(0, q)), time.Millisecond)
	}
	return time.Second
}

// Progress is the live total read.
func (r *Receiver) Progress() (packets, bytes uint64) {
	for i := range r.live {
		bytes += r.live[i].Load()
	}
	return r.segs.now(r.conns, false), bytes
}

// Stop lets the peer end its streams for up to grace, then cuts the
// connections.
func (r *Receiver) Stop(grace time.Duration) {
	r.quit.Store(time.Now().Add(max(grace, 0)).UnixNano())
	r.loops.poke()
}

func (r *Receiver) Collect() session.Result {
	return session.Result{Counts: r.counts, TCP: r.stats, Threads: r.loops.threads(), Err: errors.Join(r.errs...)}
}

func (r *Receiver) stopTimers() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.timers {
		t.Stop()
	}
}

// Close closes the connections.
func (r *Receiver) Close() error {
	if r.quit.Load() == 0 {
		r.quit.Store(time.Now().UnixNano())
	}
	r.loops.end()
	r.stopTimers()
	closeSocks(r.conns)
	return nil
}
