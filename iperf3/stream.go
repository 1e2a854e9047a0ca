package iperf3

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"linerate/results"
)

// stream is one data stream of a test, on either end.
type stream struct {
	id   int
	send bool
	// tcp is the stream's connection (TCP); for UDP, write sends one
	// datagram to the peer and recv, on the client, reads one.
	tcp   net.Conn
	write func([]byte) (int, error)
	recv  net.Conn
	peer  netip.AddrPort // UDP, on the server

	bytes, packets atomic.Uint64
	// rx is what a UDP receiver counted, as iperf3 counts it; only the
	// goroutine that reads the stream's datagrams touches it until the
	// test stops.
	rx      udpRx
	tcpInfo *unix.TCPInfo
	err     error
}

// udpRx is iperf3's accounting of received datagrams (iperf_udp_recv):
// maxSeq is the highest packet number seen, lost the gaps in the numbers
// less the packets that arrived late to fill them, jitter RFC 1889's.
type udpRx struct {
	maxSeq, lost, outOfOrder uint64
	jitter, prevTransit      float64
	started                  bool
}

// add counts a datagram numbered seq, sent at sent and received at
// arrival (seconds, each by its own end's clock).
func (r *udpRx) add(seq uint64, sent, arrival float64) {
	if seq > r.maxSeq {
		r.lost += seq - 1 - r.maxSeq
		r.maxSeq = seq
	} else {
		r.outOfOrder++
		if r.lost > 0 {
			r.lost--
		}
	}
	transit := arrival - sent
	if !r.started {
		r.prevTransit, r.started = transit, true
	}
	d := transit - r.prevTransit
	if d < 0 {
		d = -d
	}
	r.prevTransit = transit
	r.jitter += (d - r.jitter) / 16
}

// epoch is where this process's datagram clock starts.
var epoch = time.Now()

// monotonic is a monotonic time, as iperf3 stamps its datagrams with
// CLOCK_MONOTONIC: only differences between two of an end's times count,
// so any start will do. time.Since reads the monotonic clock through the
// vDSO; unix.ClockGettime is a system call, once per datagram.
func monotonic() (sec, usec uint32, f float64) {
	d := time.Since(epoch)
	return uint32(d / time.Second), uint32(d % time.Second / time.Microsecond), d.Seconds()
}

// flow is how one test's streams move data: datagram or byte stream, the
// size of each, the pace of each stream's sender.
type flow struct {
	udp  bool
	wide bool    // 64-bit packet numbers
	size int     // bytes per datagram or write
	rate float64 // bits per second per stream (0: as fast as possible)
}

// sendLoop sends until stopped, paced at f.rate as iperf3 paces: never
// ahead of the rate averaged from the start.
func (f flow) sendLoop(s *stream, stopped *atomic.Bool) {
	buf := make([]byte, f.size)
	for i := range buf {
		buf[i] = byte(i)
	}
	start := time.Now()
	for !stopped.Load() {
		if f.rate > 0 {
			due := time.Duration(float64(s.bytes.Load()) * 8 / f.rate * 1e9)
			if ahead := due - time.Since(start); ahead > 0 {
				time.Sleep(min(ahead, 10*time.Millisecond))
				continue
			}
		}
		if f.udp {
			sec, usec, _ := monotonic()
			putHeader(buf, sec, usec, s.packets.Load()+1, f.wide)
		}
		n, err := s.write(buf)
		if !f.udp {
			s.bytes.Add(uint64(n))
		}
		if err != nil {
			if f.udp && (errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ECONNREFUSED)) {
				continue // as iperf3: a full queue or an ICMP error loses that datagram only
			}
			if !stopped.Load() {
				s.err = err
			}
			return
		}
		if f.udp {
			s.bytes.Add(uint64(n))
			s.packets.Add(1)
		}
	}
}

// tcpRecvLoop reads a TCP stream until it closes.
func tcpRecvLoop(s *stream) {
	buf := make([]byte, 128<<10)
	for {
		n, err := s.tcp.Read(buf)
		s.bytes.Add(uint64(n))
		if err != nil {
			return
		}
	}
}

// datagram counts one received datagram of a UDP stream.
func (f flow) datagram(s *stream, b []byte) {
	sec, usec, seq, ok := parseHeader(b, f.wide)
	if !ok {
		return
	}
	_, _, now := monotonic()
	s.bytes.Add(uint64(len(b)))
	s.packets.Add(1)
	s.rx.add(seq, float64(sec)+float64(usec)/1e6, now)
}

// udpRecvLoop reads a connected UDP stream (the client's) until it is
// closed.
func (f flow) udpRecvLoop(s *stream) {
	buf := make([]byte, max(f.size, 64<<10))
	for {
		n, err := s.recv.Read(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue // an ICMP error for an earlier datagram
		}
		f.datagram(s, buf[:n])
	}
}

// readTCPInfo keeps the connection's TCP_INFO.
func readTCPInfo(s *stream) {
	sc, ok := s.tcp.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		if ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			s.tcpInfo = ti
		}
	})
}

// tcpStat is the stream's TCP_INFO as linerate keeps it.
func (s *stream) tcpStat(index int) *results.TCPStat {
	ti := s.tcpInfo
	if ti == nil {
		return nil
	}
	side := results.ReceiverEnd
	if s.send {
		side = results.SenderEnd
	}
	return &results.TCPStat{Stream: index, Side: side, RTTMicros: ti.Rtt, RTTVar: ti.Rttvar, Retransmits: ti.Total_retrans,
		SndMSS: ti.Snd_mss, SndCwnd: ti.Snd_cwnd, DataSegsOut: ti.Data_segs_out, DataSegsIn: ti.Data_segs_in}
}

// run moves the data of a test's streams until stop, then waits for every
// sender and receiver it started (the caller closes what unblocks them).
type running struct {
	stopped atomic.Bool
	wg      sync.WaitGroup
}

func (f flow) start(streams []*stream) *running {
	r := &running{}
	for _, s := range streams {
		switch {
		case s.send:
			r.wg.Go(func() { f.sendLoop(s, &r.stopped) })
		case !f.udp:
			r.wg.Go(func() { tcpRecvLoop(s) })
		case s.recv != nil:
			r.wg.Go(func() { f.udpRecvLoop(s) })
		}
	}
	return r
}

// stopSending stops every sender and waits for them.
func (r *running) stopSending(streams []*stream) {
	r.stopped.Store(true)
	for _, s := range streams {
		if s.send && s.tcp != nil {
			_ = s.tcp.SetWriteDeadline(time.Now())
		}
	}
}
