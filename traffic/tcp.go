package traffic

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
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
// pipeful as it stands. 130,320-byte writes (two packets in two pipefuls,
// the second packet's first 376 bytes at the end of the first pipeful)
// left 17,300-19,400 packets per GB on the bench veth pair where the same
// bytes copied left 15,400, and one stream received 19.6 Gb/s (median of 5)
// where 65,160-byte writes received 45.8 (docs/benchmarks.md, "sendfile
// writes one pipeful").
var sendfileRoom = 16 * os.Getpagesize()

// wholePackets is the default write on a connection whose MSS is mss: as
// many whole packets of the size TCP builds (as many whole segments as fit
// in tcpPacketRoom) as fit in room (tcpWrite copying, sendfileRoom with
// sendfile; room itself when the MSS is not known). A write of 128 KiB at
// an MSS of 1448 is two such packets and a third of 752 bytes, sent alone
// (Nagle is off): a third more packets through both ends' stacks for the
// same bytes. Written as 130,320 bytes (two packets), 4 streams copying
// moved 0.94-1.14 of iperf3's bytes where 128 KiB moved 0.76-0.88, in the
// same runs (docs/benchmarks.md, "Whole packets").
func wholePackets(mss, room int) int {
	if mss <= 0 {
		return room
	}
	packet := max(tcpPacketRoom/mss, 1) * mss
	return max(room/packet, 1) * packet
}

// tcpSock is a TCP data connection taken out of Go's network poller: a
// flow's loops read or write it with raw system calls and wait for it in
// poll(2) of their own. Left in the runtime's poller, every segment that
// arrives would also wake the runtime's epoll waiter (there is one while
// any other connection of the process is waited for, as the control
// connection is): tens of thousands of wakeups a second for nothing.
type tcpSock struct {
	mu     sync.RWMutex // held for reading by every call on fd, for writing by close
	fd     int
	closed bool
}

// takeTCP moves c out of the runtime: a duplicate of its descriptor (the
// same socket, still non-blocking) is kept and c is closed, which takes
// it out of the runtime's epoll. On error c is closed all the same.
func takeTCP(c *net.TCPConn) (*tcpSock, error) {
	defer c.Close()
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("dup: %w", derr)
	}
	return &tcpSock{fd: fd}, nil
}

// takeTCPs takes every connection (closing them all on error).
func takeTCPs(conns []*net.TCPConn) ([]*tcpSock, error) {
	socks := make([]*tcpSock, 0, len(conns))
	for i, c := range conns {
		s, err := takeTCP(c)
		if err != nil {
			closeConns(conns[i+1:])
			closeSocks(socks)
			return nil, err
		}
		socks = append(socks, s)
	}
	return socks, nil
}

func closeSocks(socks []*tcpSock) {
	for _, s := range socks {
		s.close()
	}
}

// do runs fn on the descriptor, which stays open meanwhile; net.ErrClosed
// once close ran.
func (s *tcpSock) do(fn func(fd uintptr)) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return net.ErrClosed
	}
	fn(uintptr(s.fd))
	return nil
}

func (s *tcpSock) info() (*unix.TCPInfo, error) {
	var info *unix.TCPInfo
	var ierr error
	if err := s.do(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		return nil, err
	}
	return info, ierr
}

// closeWrite sends the FIN: the stream's end.
func (s *tcpSock) closeWrite() {
	_ = s.do(func(fd uintptr) { _ = unix.Shutdown(int(fd), unix.SHUT_WR) })
}

func (s *tcpSock) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		_ = unix.Close(s.fd)
	}
}

func tcpStat(c *tcpSock, stream int, side string) results.TCPStat {
	st := results.TCPStat{Stream: stream, Side: side}
	if info, err := c.info(); err == nil {
		st.RTTMicros = info.Rtt
		st.RTTVar = info.Rttvar
		st.Retransmits = info.Total_retrans
		st.SndMSS = info.Snd_mss
		st.SndCwnd = info.Snd_cwnd
		st.DataSegsOut = info.Data_segs_out
		st.DataSegsIn = info.Data_segs_in
		st.PacingRate = bitsPerSecond(info.Pacing_rate)
		st.MaxPacingRate = bitsPerSecond(info.Max_pacing_rate)
	}
	_ = c.do(func(fd uintptr) { readOptions(int(fd), &st) })
	return st
}

// bitsPerSecond is a TCP_INFO rate (bytes per second, all ones for none)
// in bits per second, 0 for none.
func bitsPerSecond(bytes uint64) uint64 {
	if bytes == ^uint64(0) || bytes > ^uint64(0)/8 {
		return 0
	}
	return bytes * 8
}

// readOptions reads back the options tcpKnobs sets.
func readOptions(fd int, st *results.TCPStat) {
	cc, _ := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	st.Congestion = strings.TrimRight(cc, "\x00")
	st.SndBuf, _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
	st.RcvBuf, _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	nd, _ := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
	st.NoDelay = nd != 0
	if dom, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN); dom == unix.AF_INET6 {
		st.TOS, _ = unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS)
	} else {
		st.TOS, _ = unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS)
	}
}

// segMarks holds one connection's TCP_INFO data-segment counter
// (tcpi_data_segs_out on a sender, tcpi_data_segs_in on a receiver) at the
// two instants that bound the measured window, so that the segments of the
// window are the kernel's own count between them, warmup excluded.
type segMarks struct {
	mu    sync.Mutex
	at    [2]uint32
	taken [2]bool
}

// Marks: the start and the end of the measured window.
const (
	markStart = 0
	markEnd   = 1
)

// take reads the counter into mark m unless it was taken already. Taking
// the end also takes the start (a window that never started is empty).
// When TCP_INFO cannot be read (a closed socket) the last value known
// stands in.
func (s *segMarks) take(c *tcpSock, m int, out bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.taken[m] {
		return
	}
	var v uint32
	info, err := c.info()
	switch {
	case err == nil && out:
		v = info.Data_segs_out
	case err == nil:
		v = info.Data_segs_in
	case m == markEnd && s.taken[markStart]:
		v = s.at[markStart]
	}
	s.at[m], s.taken[m] = v, true
	if m == markEnd && !s.taken[markStart] {
		s.at[markStart], s.taken[markStart] = v, true
	}
}

// segments is the count between the two marks (the counter is 32 bits and
// wraps).
func (s *segMarks) segments() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.taken[markEnd] {
		return 0
	}
	return uint64(s.at[markEnd] - s.at[markStart])
}

// tcpSendConfig says how a tcpSender writes.
type tcpSendConfig struct {
	// mss, when set, makes each write one segment of the connection's MSS.
	mss int
	// payload is the size of each write otherwise (0: wholePackets).
	payload int
	// rate is shared by the connections (zero: as fast as they take it).
	rate wire.Rate
	// zeroCopy writes with sendfile(2) from a memory file.
	zeroCopy bool
	// threads is the least number of loops that write (tcpLoops).
	threads int
}

// writeSize is the size of each TCP write: the effective MSS with mss (so
// that every write is exactly one segment), else the payload, else whole
// packets of the connection's MSS (wholePackets).
func (cfg *tcpSendConfig) writeSize(c *tcpSock) int {
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

// tcpSender writes on a set of connections as fast as they take it (or at
// a paced rate) and counts goodput per stream: a sending flow.
type tcpSender struct {
	conns    []*tcpSock
	cfg      tcpSendConfig
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

// newTCPSender takes the connections (they are closed on error too).
func newTCPSender(tcs []*net.TCPConn, cfg tcpSendConfig) (*tcpSender, error) {
	conns, err := takeTCPs(tcs)
	if err != nil {
		return nil, err
	}
	t := &tcpSender{conns: conns, cfg: cfg, live: make([]atomic.Uint64, len(conns)),
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
func (t *tcpSender) Run(tm session.Timing) {
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
func (t *tcpSender) sampleOverTime(tm session.Timing, done <-chan struct{}) {
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

func (t *tcpSender) Collect() session.Result {
	t.overMu.Lock()
	for i, s := range t.over {
		t.stats[i].OverTime = s
	}
	t.overMu.Unlock()
	return session.Result{Counts: t.counts, TCP: t.stats, Threads: t.loops.threads(), Err: errors.Join(t.errs...)}
}

// runLoop writes on the loop's streams until the timing ends or stop.
func (t *tcpSender) runLoop(l *tcpLoop, tm session.Timing) {
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
// An error after stop is the stop's doing, not the stream's.
func (t *tcpSender) finish(i int, err error) {
	c := t.conns[i]
	t.marks[i].take(c, markEnd, true)
	t.stats[i] = tcpStat(c, i, "sender")
	t.counts[i].Packets = t.marks[i].segments()
	c.closeWrite()
	if err != nil && !t.halt.Load() && !errors.Is(err, net.ErrClosed) {
		t.errs[i] = fmt.Errorf("tcp stream %d: %w", i, err)
	}
}

func (t *tcpSender) Cut(time.Time) {}

// Stop ends run early.
func (t *tcpSender) Stop(time.Duration) {
	t.halt.Store(true)
	t.loops.poke()
}

// Progress is the live total written.
func (t *tcpSender) Progress() (packets, bytes uint64) {
	for i := range t.live {
		bytes += t.live[i].Load()
	}
	return t.segs.now(t.conns, true), bytes
}

// Close closes the connections.
func (t *tcpSender) Close() error {
	t.halt.Store(true)
	t.loops.end()
	closeSocks(t.conns)
	if t.zerocopy != nil {
		t.zerocopy.Close()
	}
	return nil
}

// tcpReceiver reads connections to their end and counts goodput in the
// measured window: the bytes read between the window's start and end by
// this end's clock (not the bytes the sender wrote in its window, which
// may arrive later), and the data segments the kernel received between the
// same two instants (tcpi_data_segs_in). It is a receiving flow.
type tcpReceiver struct {
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

// newTCPReceiver takes the connections (they are closed on error too).
func newTCPReceiver(tcs []*net.TCPConn, threads int) (*tcpReceiver, error) {
	conns, err := takeTCPs(tcs)
	if err != nil {
		return nil, err
	}
	r := &tcpReceiver{conns: conns, live: make([]atomic.Uint64, len(conns)), counts: streamCounts(len(conns)),
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
// streams, up to tcpStreamsPerLoop. A loop serving several streams moved
// more with larger reads (against 128 KiB reads, median of the per-round
// ratios of short runs: 1.22 and 1.17 at 8 streams, 1.08 and 1.04 at 4
// with 0.87 in a third run, 1.07 at 3); one stream reads 128 KiB, as
// 512 KiB reads moved 0.77-0.80 there: the socket stays locked for the
// whole copy, and what arrives meanwhile waits in its backlog
// (docs/benchmarks.md, "Reads as large as the loop").
func readSize(streams int) int {
	return tcpReadSize * max(1, min(streams, tcpStreamsPerLoop))
}

// Run reads every connection until its end (or stop). Bytes read before
// tm.Measure are the warmup's, those read from tm.End on are late;
// neither is in the window's count.
func (r *tcpReceiver) Run(tm session.Timing) {
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

func (r *tcpReceiver) markAll(m int) {
	for i, c := range r.conns {
		r.marks[i].take(c, m, false)
	}
}

// Cut ends the measured window at at, if that is before its planned end
// (the run was interrupted): later reads count as late.
func (r *tcpReceiver) Cut(at time.Time) {
	if at.UnixNano() >= r.end.Load() {
		return
	}
	r.end.Store(at.UnixNano())
	r.markAll(markEnd)
}

// runLoop reads the loop's streams until each ends or stop's time comes.
func (r *tcpReceiver) runLoop(l *tcpLoop) {
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
		r.stats[i] = tcpStat(c, i, "receiver")
		r.counts[i].Packets = r.marks[i].segments()
		if err != nil && !errors.Is(err, net.ErrClosed) {
			r.errs[i] = fmt.Errorf("tcp stream %d: %w", i, err)
		}
		return stepDone, 0
	}
	l.run("tcp-recv", step, r.untilQuit)
}

// untilQuit bounds a loop's wait: the time left until stop's, or a second
// while there is none (the wait is woken by stop anyway).
func (r *tcpReceiver) untilQuit() time.Duration {
	if q := r.quit.Load(); q != 0 {
		return max(time.Until(time.Unix(0, q)), time.Millisecond)
	}
	return time.Second
}

// Progress is the live total read.
func (r *tcpReceiver) Progress() (packets, bytes uint64) {
	for i := range r.live {
		bytes += r.live[i].Load()
	}
	return r.segs.now(r.conns, false), bytes
}

// Stop lets the peer end its streams for up to grace, then cuts the
// connections.
func (r *tcpReceiver) Stop(grace time.Duration) {
	r.quit.Store(time.Now().Add(max(grace, 0)).UnixNano())
	r.loops.poke()
}

func (r *tcpReceiver) Collect() session.Result {
	return session.Result{Counts: r.counts, TCP: r.stats, Threads: r.loops.threads(), Err: errors.Join(r.errs...)}
}

func (r *tcpReceiver) stopTimers() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.timers {
		t.Stop()
	}
}

// Close closes the connections.
func (r *tcpReceiver) Close() error {
	if r.quit.Load() == 0 {
		r.quit.Store(time.Now().UnixNano())
	}
	r.loops.end()
	r.stopTimers()
	closeSocks(r.conns)
	return nil
}
