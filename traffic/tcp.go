package traffic

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// tcpWrite is the size of each TCP write when neither --payload nor --mss
// says otherwise.
const tcpWrite = 128 << 10

// TCPStat is what TCP_INFO says about one connection at the end of a test
// (struct tcp_info of <linux/tcp.h>).
type TCPStat struct {
	Stream int `json:"stream"`
	// Side is "sender" or "receiver": which end read it.
	Side        string `json:"side"`
	RTTMicros   uint32 `json:"rtt_us"`
	RTTVar      uint32 `json:"rttvar_us"`
	Retransmits uint32 `json:"retransmits"`
	SndMSS      uint32 `json:"snd_mss"`
	SndCwnd     uint32 `json:"snd_cwnd"`
	DataSegsOut uint32 `json:"data_segs_out"`
	DataSegsIn  uint32 `json:"data_segs_in"`
}

func tcpInfo(c *net.TCPConn) (*unix.TCPInfo, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		return nil, err
	}
	return info, ierr
}

func tcpStat(c *net.TCPConn, stream int, side string) TCPStat {
	st := TCPStat{Stream: stream, Side: side}
	if info, err := tcpInfo(c); err == nil {
		st.RTTMicros = info.Rtt
		st.RTTVar = info.Rttvar
		st.Retransmits = info.Total_retrans
		st.SndMSS = info.Snd_mss
		st.SndCwnd = info.Snd_cwnd
		st.DataSegsOut = info.Data_segs_out
		st.DataSegsIn = info.Data_segs_in
	}
	return st
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
func (s *segMarks) take(c *net.TCPConn, m int, out bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.taken[m] {
		return
	}
	var v uint32
	info, err := tcpInfo(c)
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

// tcpDialControl returns a net.Dialer Control that sets TCP_MAXSEG before
// connect (so the SYN advertises it and both ends send segments no larger)
// and TCP_NODELAY.
func tcpDialControl(mss int) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if mss > 0 {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG, mss)
			}
		})
		if err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("TCP_MAXSEG %d: %w", mss, serr)
		}
		return nil
	}
}

// The first bytes on every TCP data connection, from the client: the
// test's cookie (8 bytes), the stream id (4, big-endian), the direction
// ('f': the client sends, 'r': the server sends) and 3 zero bytes.
const dataHelloLen = 16

func putDataHello(cookie uint64, stream int, dir byte) []byte {
	b := make([]byte, dataHelloLen)
	binary.BigEndian.PutUint64(b, cookie)
	binary.BigEndian.PutUint32(b[8:], uint32(stream))
	b[12] = dir
	return b
}

func parseDataHello(b []byte) (cookie uint64, stream int, dir byte, err error) {
	if len(b) != dataHelloLen || (b[12] != 'f' && b[12] != 'r') || b[13]|b[14]|b[15] != 0 {
		return 0, 0, 0, fmt.Errorf("%w: bad data connection hello", errProtocol)
	}
	return binary.BigEndian.Uint64(b), int(binary.BigEndian.Uint32(b[8:])), b[12], nil
}

func cookieString(c uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], c)
	return hex.EncodeToString(b[:])
}

func parseCookie(s string) (uint64, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 8 {
		return 0, fmt.Errorf("%w: cookie %q", errProtocol, s)
	}
	return binary.BigEndian.Uint64(b), nil
}

// setNoDelay turns Nagle off so that each write of one segment leaves as
// one segment.
func setNoDelay(c *net.TCPConn) { _ = c.SetNoDelay(true) }

// tcpSendConfig says how a tcpSender writes.
type tcpSendConfig struct {
	// mss, when set, makes each write one segment of the connection's MSS.
	mss int
	// payload is the size of each write otherwise (0: tcpWrite).
	payload int
	// rate is shared by the connections (zero: as fast as they take it).
	rate Rate
	// zeroCopy writes with sendfile(2) from a memory file.
	zeroCopy bool
}

// writeSize is the size of each TCP write: the effective MSS with mss (so
// that every write is exactly one segment), else the payload, else
// tcpWrite.
func (cfg *tcpSendConfig) writeSize(c *net.TCPConn) int {
	if cfg.mss > 0 {
		if info, err := tcpInfo(c); err == nil && info.Snd_mss > 0 {
			return int(info.Snd_mss)
		}
		return cfg.mss
	}
	if cfg.payload > 0 {
		return cfg.payload
	}
	return tcpWrite
}

// tcpSender writes on a set of connections as fast as they take it (or at
// a paced rate) and counts goodput per stream: a sending flow.
type tcpSender struct {
	conns    []*net.TCPConn
	cfg      tcpSendConfig
	halt     atomic.Bool
	live     []atomic.Uint64
	counts   []Count
	stats    []TCPStat
	marks    []segMarks
	segs     segTotals
	errs     []error
	zerocopy *os.File
}

func newTCPSender(conns []*net.TCPConn, cfg tcpSendConfig) (*tcpSender, error) {
	t := &tcpSender{conns: conns, cfg: cfg, live: make([]atomic.Uint64, len(conns)),
		counts: streamCounts(len(conns)), stats: make([]TCPStat, len(conns)), marks: make([]segMarks, len(conns)),
		errs: make([]error, len(conns))}
	for _, c := range conns {
		setNoDelay(c)
	}
	if cfg.zeroCopy {
		f, err := memFile(max(cfg.writeSize(conns[0]), 1<<20))
		if err != nil {
			return nil, err
		}
		t.zerocopy = f
	}
	return t, nil
}

// streamCounts is n empty counts, numbered.
func streamCounts(n int) []Count {
	c := make([]Count, n)
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

// run writes until the timing ends or stop, then half-closes each
// connection. Per stream it counts the bytes written in the measured
// window and the data segments the kernel sent in it (tcpi_data_segs_out
// at the window's end minus at its start: the warmup's are not counted).
func (t *tcpSender) run(tm Timing) {
	// The start mark is taken by a timer, not by the writers: a writer may
	// be blocked in a write when the window starts.
	startMark := time.AfterFunc(time.Until(tm.Measure), func() {
		for i, c := range t.conns {
			t.marks[i].take(c, markStart, true)
		}
	})
	defer startMark.Stop()
	var wg sync.WaitGroup
	for i, c := range t.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.errs[i] = t.runConn(i, c, tm)
		}()
	}
	wg.Wait()
}

func (t *tcpSender) collect() flowResult {
	return flowResult{counts: t.counts, tcp: t.stats, err: errors.Join(t.errs...)}
}

func (t *tcpSender) runConn(i int, c *net.TCPConn, tm Timing) error {
	size := t.cfg.writeSize(c)
	buf := make([]byte, size)
	var bps float64
	if r := t.cfg.rate; !r.Unlimited() {
		if r.BPS > 0 {
			bps = r.BPS / 8
		} else {
			bps = r.PPS * float64(size)
		}
		bps /= float64(len(t.conns))
	}
	if d := time.Until(tm.Start); d > 0 {
		time.Sleep(d)
	}
	if err := c.SetWriteDeadline(tm.End); err != nil {
		return err
	}
	var p *pacer
	if bps > 0 {
		p = newPacer(bps/float64(size), 1, time.Now())
	}
	var sf *os.File
	if t.zerocopy != nil {
		// Each connection needs its own file offset.
		fd, err := unix.Dup(int(t.zerocopy.Fd()))
		if err != nil {
			return fmt.Errorf("dup memfd: %w", err)
		}
		sf = os.NewFile(uintptr(fd), t.zerocopy.Name())
		defer sf.Close()
	}
	cnt := &t.counts[i]
	var err error
	for !t.halt.Load() {
		now := time.Now()
		if !now.Before(tm.End) {
			break
		}
		if p != nil {
			if n, wait := p.allow(now, 1); n == 0 {
				time.Sleep(min(wait, tm.End.Sub(now)))
				continue
			}
		}
		var n int
		if sf != nil {
			if _, err = sf.Seek(0, io.SeekStart); err != nil {
				break
			}
			var n64 int64
			n64, err = c.ReadFrom(&io.LimitedReader{R: sf, N: int64(size)})
			n = int(n64)
		} else {
			n, err = c.Write(buf)
		}
		if p != nil {
			p.sent(1)
		}
		if n > 0 {
			t.live[i].Add(uint64(n))
			if now.Before(tm.Measure) {
				cnt.Warmup += uint64(n)
			} else {
				cnt.Bytes += uint64(n)
			}
		}
		if err != nil {
			break
		}
	}
	t.marks[i].take(c, markEnd, true)
	t.stats[i] = tcpStat(c, i, "sender")
	cnt.Packets = t.marks[i].segments()
	_ = c.CloseWrite()
	if err != nil && (errors.Is(err, os.ErrDeadlineExceeded) || t.halt.Load()) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("tcp stream %d: %w", i, err)
	}
	return nil
}

func (t *tcpSender) cut(time.Time) {}

// stop ends run early.
func (t *tcpSender) stop(time.Duration) {
	t.halt.Store(true)
	for _, c := range t.conns {
		_ = c.SetWriteDeadline(time.Now())
	}
}

// progress is the live total written.
func (t *tcpSender) progress() (packets, bytes uint64) {
	for i := range t.live {
		bytes += t.live[i].Load()
	}
	return t.segs.now(t.conns, true), bytes
}

// close closes the connections.
func (t *tcpSender) close() error {
	for _, c := range t.conns {
		c.Close()
	}
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
	conns  []*net.TCPConn
	tm     Timing
	end    atomic.Int64 // the window's end, Unix nanoseconds (cut moves it)
	live   []atomic.Uint64
	counts []Count
	stats  []TCPStat
	marks  []segMarks
	segs   segTotals
	timers []*time.Timer
	mu     sync.Mutex
	wg     sync.WaitGroup
	errs   []error
}

func newTCPReceiver(conns []*net.TCPConn) *tcpReceiver {
	return &tcpReceiver{conns: conns, live: make([]atomic.Uint64, len(conns)), counts: streamCounts(len(conns)),
		stats: make([]TCPStat, len(conns)), marks: make([]segMarks, len(conns)), errs: make([]error, len(conns))}
}

// run reads every connection until its end (or stop). Bytes read before
// tm.Measure are the warmup's, those read from tm.End on are late;
// neither is in the window's count.
func (r *tcpReceiver) run(tm Timing) {
	r.tm = tm
	r.end.Store(tm.End.UnixNano())
	r.mu.Lock()
	r.timers = append(r.timers,
		time.AfterFunc(time.Until(tm.Measure), func() { r.markAll(markStart) }),
		time.AfterFunc(time.Until(tm.End), func() { r.markAll(markEnd) }))
	r.mu.Unlock()
	for i, c := range r.conns {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.errs[i] = r.runConn(i, c)
		}()
	}
	r.wg.Wait()
	r.stopTimers()
}

func (r *tcpReceiver) markAll(m int) {
	for i, c := range r.conns {
		r.marks[i].take(c, m, false)
	}
}

// cut ends the measured window at at, if that is before its planned end
// (the run was interrupted): later reads count as late.
func (r *tcpReceiver) cut(at time.Time) {
	if at.UnixNano() >= r.end.Load() {
		return
	}
	r.end.Store(at.UnixNano())
	r.markAll(markEnd)
}

func (r *tcpReceiver) runConn(i int, c *net.TCPConn) error {
	buf := make([]byte, 256<<10)
	cnt := &r.counts[i]
	for {
		n, err := c.Read(buf)
		if n > 0 {
			now := time.Now()
			r.live[i].Add(uint64(n))
			switch {
			case now.Before(r.tm.Measure):
				cnt.Warmup += uint64(n)
			case now.UnixNano() < r.end.Load():
				cnt.Bytes += uint64(n)
			default:
				cnt.Late += uint64(n)
			}
		}
		if err != nil {
			// Nothing more arrives: the window's segments are all in.
			r.marks[i].take(c, markEnd, false)
			r.stats[i] = tcpStat(c, i, "receiver")
			cnt.Packets = r.marks[i].segments()
			if errors.Is(err, io.EOF) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("tcp stream %d: %w", i, err)
		}
	}
}

// progress is the live total read.
func (r *tcpReceiver) progress() (packets, bytes uint64) {
	for i := range r.live {
		bytes += r.live[i].Load()
	}
	return r.segs.now(r.conns, false), bytes
}

// stop lets the peer end its streams for up to grace, then cuts the
// connections.
func (r *tcpReceiver) stop(grace time.Duration) {
	deadline := func() {
		for _, c := range r.conns {
			_ = c.SetReadDeadline(time.Now())
		}
	}
	if grace <= 0 {
		deadline()
		return
	}
	r.mu.Lock()
	r.timers = append(r.timers, time.AfterFunc(grace, deadline))
	r.mu.Unlock()
}

func (r *tcpReceiver) collect() flowResult {
	return flowResult{counts: r.counts, tcp: r.stats, err: errors.Join(r.errs...)}
}

func (r *tcpReceiver) stopTimers() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.timers {
		t.Stop()
	}
}

// close closes the connections.
func (r *tcpReceiver) close() error {
	r.stopTimers()
	for _, c := range r.conns {
		c.Close()
	}
	return nil
}
