// Package tcp moves TCP test streams. A Sender writes, copying or with
// sendfile from memory, as fast as its connections take it or at a paced
// rate; a Receiver counts what arrives in the measured window. Their
// connections leave Go's poller and are moved by loops on locked threads,
// a loop per few streams (loop.go); a window's segments are the kernel's
// own count (TCP_INFO) at its edges. Knobs are the socket options a test
// sets alike on both ends. Sender and Receiver are session flows.
package tcp

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"linerate/results"
	"linerate/traffic/session"
	"linerate/wire"
)

// tcpWrite bounds each copying TCP write when neither --payload nor --mss
// says otherwise (wholePackets), and is the write when the MSS is not known
// (sendfileRoom bounds those that use sendfile).
const tcpWrite = 128 << 10

// tcpPacketRoom is what the kernel builds its TCP packets up to before a
// segmentation offload splits them: 64 KiB less one byte and its header
// room (MAX_TCP_HEADER, 320 bytes on x86-64; net/ipv4/tcp.c,
// tcp_xmit_size_goal). With an MSS of 1448 that is 45 segments, 65,160
// bytes.
const tcpPacketRoom = 64<<10 - 1 - 320

// sendfileRoom bounds each sendfile(2) write: sendfile moves its bytes
// through a pipe of 16 pages (fs/splice.c, splice_direct_to_actor), each
// pipeful a send of its own with the socket unlocked between them, and an
// ACK arriving meanwhile sends the packet begun at the end of the first
// pipeful as it stands. A write of more than a pipeful so leaves short
// packets behind, more of them for the same bytes; a write of whole
// packets that fits one pipeful leaves none (docs/benchmarks.md,
// "sendfile writes one pipeful", has the figures and how they were
// measured).
var sendfileRoom = 16 * os.Getpagesize()

// wholePackets is the default write on a connection whose MSS is mss: as
// many whole packets of the size TCP builds (as many whole segments as fit
// in tcpPacketRoom) as fit in room (tcpWrite copying, sendfileRoom with
// sendfile; room itself when the MSS is not known). A write of 128 KiB at
// an MSS of 1448 is two such packets and a third of 752 bytes, sent alone
// (Nagle is off): a third more packets through both ends' stacks for the
// same bytes, each paying the whole path and, under a paced congestion
// control, the pacing timer (docs/benchmarks.md, "Whole packets", has
// the figures).
func wholePackets(mss, room int) int {
	if mss <= 0 {
		return room
	}
	packet := max(tcpPacketRoom/mss, 1) * mss
	return max(room/packet, 1) * packet
}

// tcpNotSentLowat is each sending socket's TCP_NOTSENT_LOWAT: the most
// bytes it holds that TCP has not sent yet before a write would block.
// What is in flight is not bounded by it (the congestion window is), only
// the queue behind it; left to the send buffer's autotuning (up to 4 MiB a
// socket) that queue made every write land in memory no cache held
// (docs/benchmarks.md, "Unsent bytes bounded, a loop per CPU", has the
// figures and the bounds tried).
const tcpNotSentLowat = 128 << 10

// SendConfig says how a Sender writes.
type SendConfig struct {
	// mss, when set, makes each write one segment of the connection's MSS.
	mss int
	// payload is the size of each write otherwise (0: wholePackets).
	payload int
	// rate is shared by the connections (zero: as fast as they take it).
	rate wire.Rate
	// zeroCopy writes with sendfile(2) from a memory file.
	zeroCopy bool
	// threads is the least number of loops that write (loopCount).
	threads int
}

// writeSize is the size of each TCP write: the effective MSS with mss (so
// that every write is exactly one segment), else the payload, else whole
// packets of the connection's MSS (wholePackets).
func (cfg *SendConfig) writeSize(c *tcpSock) int {
	if cfg.mss == 0 && cfg.payload > 0 {
		return cfg.payload
	}
	mss := 0 // the kernel's, 0 when it cannot be read
	if info, err := c.info(); err == nil {
		mss = int(info.Snd_mss)
	}
	switch {
	case cfg.mss > 0 && mss > 0:
		return mss
	case cfg.mss > 0:
		return cfg.mss
	}
	if cfg.zeroCopy {
		return wholePackets(mss, sendfileRoom)
	}
	return wholePackets(mss, tcpWrite)
}

// Sender writes on a set of connections as fast as they take it (or at
// a paced rate) and counts goodput per stream: a sending flow.
type Sender struct {
	conns    []*tcpSock
	cfg      SendConfig
	halt     atomic.Bool
	live     []atomic.Uint64
	counts   []results.Count
	stats    []results.TCPStat
	marks    []segMarks
	segs     segTotals
	errs     []error
	zerocopy *os.File
	loops    loopSet
	overMu   sync.Mutex
	over     [][]results.TCPSample
}

// NewSender takes the connections (they are closed on error too).
func NewSender(tcs []*net.TCPConn, cfg SendConfig) (*Sender, error) {
	conns, err := takeTCPs(tcs)
	if err != nil {
		return nil, err
	}
	for _, c := range conns {
		if err := c.setNotSentLowat(tcpNotSentLowat); err != nil {
			closeSocks(conns)
			return nil, fmt.Errorf("TCP_NOTSENT_LOWAT: %w", err)
		}
	}
	t := &Sender{conns: conns, cfg: cfg, live: make([]atomic.Uint64, len(conns)),
		counts: streamCounts(len(conns)), stats: make([]results.TCPStat, len(conns)), marks: make([]segMarks, len(conns)),
		errs: make([]error, len(conns))}
	if cfg.zeroCopy {
		f, err := memFile(max(cfg.writeSize(conns[0]), 1<<20))
		if err != nil {
			closeSocks(conns)
			return nil, err
		}
		t.zerocopy = f
	}
	if err := t.loops.spread(conns, cfg.threads, unix.POLLOUT); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// streamCounts is n empty counts, numbered.
func streamCounts(n int) []results.Count {
	c := make([]results.Count, n)
	for i := range c {
		c[i].Stream = i
	}
	return c
}

// memFile makes an in-memory file of size bytes for sendfile(2).
func memFile(size int) (*os.File, error) {
	fd, err := unix.MemfdCreate("linerate-tcp", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd:linerate-tcp")
	if err := f.Truncate(int64(size)); err != nil {
		f.Close()
		return nil, fmt.Errorf("memfd truncate: %w", err)
	}
	return f, nil
}

// Run writes until the timing ends or stop, then half-closes each
// connection. Per stream it counts the bytes written in the measured
// window and the data segments the kernel sent in it (tcpi_data_segs_out
// at the window's end minus at its start: the warmup's are not counted).
func (t *Sender) Run(tm session.Timing) {
	// The start mark is taken by a timer, not by the writers: a writer may
	// be waiting for room when the window starts.
	startMark := time.AfterFunc(time.Until(tm.Measure), func() {
		for i, c := range t.conns {
			t.marks[i].take(c, markStart, true)
		}
	})
	defer startMark.Stop()
	done := make(chan struct{})
	defer close(done)
	go t.sampleOverTime(tm, done)
	if d := time.Until(tm.Start); d > 0 {
		time.Sleep(d)
	}
	t.loops.each(func(l *tcpLoop) { t.runLoop(l, tm) })
}

// sampleOverTime reads each stream's TCP_INFO once a second from tm.Start
// until tm.End or done.
func (t *Sender) sampleOverTime(tm session.Timing, done <-chan struct{}) {
	select {
	case <-time.After(time.Until(tm.Start)):
	case <-done:
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case now := <-tick.C:
			if now.After(tm.End.Add(500 * time.Millisecond)) {
				return
			}
			t.overMu.Lock()
			if t.over == nil {
				t.over = make([][]results.TCPSample, len(t.conns))
			}
			for i, c := range t.conns {
				if info, err := c.info(); err == nil {
					t.over[i] = append(t.over[i], results.TCPSample{T: now.Sub(tm.Start).Round(time.Millisecond).Seconds(),
						Cwnd: info.Snd_cwnd, RTTMicros: info.Rtt, Retrans: info.Total_retrans, PacingRate: bitsPerSecond(info.Pacing_rate),
						Acked: info.Bytes_acked})
				}
			}
			t.overMu.Unlock()
		case <-done:
			return
		}
	}
}

func (t *Sender) Collect() session.Result {
	t.overMu.Lock()
	for i, s := range t.over {
		t.stats[i].OverTime = s
	}
	t.overMu.Unlock()
	return session.Result{Counts: t.counts, TCP: t.stats, Threads: t.loops.threads(), Err: errors.Join(t.errs...)}
}

// runLoop writes on the loop's streams until the timing ends or stop.
func (t *Sender) runLoop(l *tcpLoop, tm session.Timing) {
	size := make([]int, len(l.streams))
	pacers := make([]*session.Pacer, len(l.streams))
	now := time.Now()
	for k, i := range l.streams {
		size[k] = t.cfg.writeSize(t.conns[i])
		if r := t.cfg.rate; !r.Unlimited() {
			bps := r.PPS * float64(size[k])
			if r.BPS > 0 {
				bps = r.BPS / 8
			}
			pacers[k] = session.NewPacer(bps/float64(len(t.conns))/float64(size[k]), 1, now)
		}
		op := l.ops[k]
		op.size = size[k]
		if t.zerocopy != nil {
			op.trap, op.file = unix.SYS_SENDFILE, int(t.zerocopy.Fd())
		} else {
			op.trap = unix.SYS_WRITE
		}
	}
	buf := make([]byte, slices.Max(size))
	for _, op := range l.ops {
		op.buf = buf
	}
	step := func(k, i int) (stepResult, time.Duration) {
		now := time.Now()
		if t.halt.Load() || !now.Before(tm.End) {
			t.finish(i, nil)
			return stepDone, 0
		}
		p := pacers[k]
		if p != nil {
			if n, wait := p.Allow(now, 1); n == 0 {
				return stepIdle, wait
			}
		}
		n, blocked, err := l.ops[k].call()
		if p != nil && n > 0 {
			p.SentPart(float64(n) / float64(size[k]))
		}
		if n > 0 {
			t.live[i].Add(uint64(n))
			if now.Before(tm.Measure) {
				t.counts[i].Warmup += uint64(n)
			} else {
				t.counts[i].Bytes += uint64(n)
			}
		}
		switch {
		case err != nil:
			t.finish(i, err)
			return stepDone, 0
		case blocked:
			return stepBlocked, 0
		}
		return stepMoved, 0
	}
	l.run("tcp-send", step, func() time.Duration { return time.Until(tm.End) })
}

// finish ends stream i: the window's end mark, TCP_INFO, the half-close.
// An error after Stop is Stop's doing, not the stream's.
func (t *Sender) finish(i int, err error) {
	c := t.conns[i]
	t.marks[i].take(c, markEnd, true)
	t.stats[i] = tcpStat(c, i, SenderEnd)
	t.counts[i].Packets = t.marks[i].segments()
	c.closeWrite()
	if err != nil && !t.halt.Load() && !errors.Is(err, net.ErrClosed) {
		t.errs[i] = fmt.Errorf("tcp stream %d: %w", i, err)
	}
}

func (t *Sender) Cut(time.Time) {}

// Stop ends run early.
func (t *Sender) Stop(time.Duration) {
	t.halt.Store(true)
	t.loops.poke()
}

// Progress is the live total written.
func (t *Sender) Progress() (packets, bytes uint64) {
	for i := range t.live {
		bytes += t.live[i].Load()
	}
	return t.segs.now(t.conns, true), bytes
}

// Close closes the connections.
func (t *Sender) Close() error {
	t.halt.Store(true)
	t.loops.end()
	closeSocks(t.conns)
	if t.zerocopy != nil {
		t.zerocopy.Close()
	}
	return nil
}

// Sender is how this test's TCP senders write.
func SendConfigOf(s *wire.Spec) SendConfig {
	return SendConfig{mss: s.MSS, payload: s.Payload, rate: s.Rate, zeroCopy: s.ZeroCopy, threads: s.Threads}
}
