package tcp

import (
	"io"
	"math"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"linerate/traffic/session"
	"linerate/wire"
)

// tcpPair connects two TCP sockets over loopback: the first dialled (with
// TCP_MAXSEG mss when not 0), the second accepted.
func tcpPair(t *testing.T, mss int) (dialled, accepted *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := net.Dialer{Control: Knobs{mss: mss}.Control(true)}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a, err := ln.AcceptTCP()
	if err != nil {
		t.Fatal(err)
	}
	dialled = c.(*net.TCPConn)
	t.Cleanup(func() { dialled.Close(); a.Close() })
	return dialled, a
}

// closeTo reports whether got is within frac of want.
func closeTo(got, want uint64, frac float64) bool {
	return math.Abs(float64(got)-float64(want)) <= frac*float64(want)
}

func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

// sendFor runs a sender on w with cfg for a warmup and a window, and
// returns what it counted.
func sendFor(t *testing.T, w *net.TCPConn, cfg SendConfig, warmup, window time.Duration) session.Result {
	t.Helper()
	s, err := NewSender([]*net.TCPConn{w}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Now()
	s.Run(session.Timing{Start: t0, Measure: t0.Add(warmup), End: t0.Add(warmup + window)})
	res := s.Collect()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return res
}

// TestTCPReceiverWindow writes one block in the warmup, one in the window
// and one after it, each well away from the edges, and checks that the
// receiver files each under its phase, and that the window's segments are
// the kernel's count between the window's edges (one segment, not the
// connection's three).
func TestTCPReceiverWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	w, rd := tcpPair(t, 0)
	_ = w.SetNoDelay(true)
	r, err := NewReceiver([]*net.TCPConn{rd}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	t0 := time.Now()
	const margin = 200 * time.Millisecond
	tm := session.Timing{Start: t0, Measure: t0.Add(margin + 100*time.Millisecond), End: t0.Add(3*margin + 100*time.Millisecond)}
	done := make(chan struct{})
	go func() { r.Run(tm); close(done) }()
	var total uint64
	write := func(n int) {
		t.Helper()
		if _, err := w.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		total += uint64(n)
		for {
			if _, got := r.Progress(); got >= total {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	write(1000)
	sleepUntil(tm.Measure.Add(margin))
	write(2000)
	sleepUntil(tm.End.Add(margin))
	write(3000)
	if err := w.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	r.Stop(2 * time.Second)
	<-done
	res := r.Collect()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	c, stats := res.Counts[0], res.TCP
	if c.Warmup != 1000 || c.Bytes != 2000 || c.Late != 3000 {
		t.Errorf("warmup %d, window %d, late %d bytes: want 1000, 2000, 3000", c.Warmup, c.Bytes, c.Late)
	}
	if c.Packets != 1 {
		t.Errorf("%d segments in the window, want 1 (the connection received %d)", c.Packets, stats[0].DataSegsIn)
	}
	if stats[0].DataSegsIn < 3 {
		t.Errorf("the kernel counted %d data segments in, want at least 3", stats[0].DataSegsIn)
	}
}

// TestTCPSenderWindowSegments paces one-segment writes (MSS 88) through a
// warmup as long as the window: the window's segments are the kernel's
// count over the window alone, about its bytes over the MSS, and about
// half the connection's.
func TestTCPSenderWindowSegments(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	w, rd := tcpPair(t, 88)
	go func() { _, _ = io.Copy(io.Discard, rd) }()
	res := sendFor(t, w, SendConfig{mss: 88, rate: wire.Rate{PPS: 2000}}, 400*time.Millisecond, 400*time.Millisecond)
	c, st := res.Counts[0], res.TCP[0]
	if st.SndMSS == 0 || st.SndMSS > 88 {
		t.Fatalf("snd_mss %d with TCP_MAXSEG 88", st.SndMSS)
	}
	writes := c.Bytes / uint64(st.SndMSS)
	t.Logf("window: %d bytes = %d segments of %d; kernel: %d segments in the window, %d in all", c.Bytes, writes, st.SndMSS, c.Packets, st.DataSegsOut)
	if writes < 100 {
		t.Fatalf("only %d segments written in the window", writes)
	}
	if !closeTo(c.Packets, writes, 0.05) {
		t.Errorf("%d segments in the window for %d one-segment writes", c.Packets, writes)
	}
	if c.Packets > uint64(st.DataSegsOut)*3/4 {
		t.Errorf("%d segments in the window of %d in all: the warmup's are counted", c.Packets, st.DataSegsOut)
	}
}

func TestLoopCount(t *testing.T) {
	for _, c := range []struct{ streams, threads, cpus, want int }{
		// A loop per stream,
		{1, 1, 64, 1}, {4, 1, 64, 4}, {5, 1, 64, 5}, {16, 1, 64, 16}, {4, 2, 64, 4}, {2, 8, 64, 2}, {128, 1, 64, 64},
		// no more loops than CPUs, unless --threads asks for them.
		{16, 1, 2, 2}, {8, 1, 2, 2}, {128, 1, 4, 4}, {16, 1, 1, 1}, {16, 3, 2, 3}, {4, 1, 2, 2}, {2, 1, 2, 2}, {1, 1, 2, 1},
	} {
		if got := loopCount(c.streams, c.threads, c.cpus); got != c.want {
			t.Errorf("loopCount(%d streams, %d threads, %d CPUs) = %d, want %d", c.streams, c.threads, c.cpus, got, c.want)
		}
	}
}

// tcpPairs is n loopback pairs: the dialled ends and the accepted ends.
func tcpPairs(t *testing.T, n int) (dialled, accepted []*net.TCPConn) {
	for range n {
		d, a := tcpPair(t, 0)
		dialled, accepted = append(dialled, d), append(accepted, a)
	}
	return dialled, accepted
}

// TestSenderBoundsUnsent: every sending socket holds at most
// tcpNotSentLowat unsent bytes before a write would block (the kernel's
// default is no bound: net.ipv4.tcp_notsent_lowat, 4294967295).
func TestSenderBoundsUnsent(t *testing.T) {
	ws, _ := tcpPairs(t, 3)
	s, err := NewSender(ws, SendConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, c := range s.conns {
		var got int
		var gerr error
		c.do(func(fd uintptr) { got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT) })
		if gerr != nil || got != tcpNotSentLowat {
			t.Errorf("stream %d: TCP_NOTSENT_LOWAT %d (%v), want %d", i, got, gerr, tcpNotSentLowat)
		}
	}
}

// TestTCPLoopsCount sends 9 streams through 3 loops on each end (asked
// for as threads, as the machine may have fewer CPUs) and
// checks that every byte each stream's sender wrote is the byte its
// receiver read, stream by stream.
func TestTCPLoopsCount(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	ws, rs := tcpPairs(t, 9)
	s, err := NewSender(ws, SendConfig{rate: wire.Rate{BPS: 200e6}, threads: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := NewReceiver(rs, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(s.loops.loops) != 3 || len(r.loops.loops) != 3 {
		t.Fatalf("%d sending and %d receiving loops for 9 streams, want 3 and 3", len(s.loops.loops), len(r.loops.loops))
	}
	t0 := time.Now()
	tm := session.Timing{Start: t0, Measure: t0.Add(100 * time.Millisecond), End: t0.Add(400 * time.Millisecond)}
	done := make(chan struct{})
	go func() { r.Run(tm); close(done) }()
	s.Run(tm)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the receiver did not end with its peer's streams")
	}
	sent, got := s.Collect(), r.Collect()
	if sent.Err != nil || got.Err != nil {
		t.Fatal(sent.Err, got.Err)
	}
	var all uint64
	for i := range ws {
		a, b := sent.Counts[i], got.Counts[i]
		if a.Warmup+a.Bytes != b.Warmup+b.Bytes+b.Late || a.Bytes == 0 {
			t.Errorf("stream %d: wrote %d+%d bytes, read %d+%d+%d", i, a.Warmup, a.Bytes, b.Warmup, b.Bytes, b.Late)
		}
		all += a.Warmup + a.Bytes
	}
	// 200 Mb/s for 0.4 s is 10 MB, shared by the streams.
	if all < 8e6 || all > 12e6 {
		t.Errorf("%d bytes written at 200 Mb/s in 400 ms, want about 10 MB", all)
	}
	// Each receiving loop read its 3 streams 384 KiB at a time.
	for j, l := range r.loops.loops {
		for k, op := range l.ops {
			if op.size != 3*tcpReadSize || len(op.buf) != op.size {
				t.Errorf("loop %d, stream %d: reads of %d bytes into %d, want %d", j, l.streams[k], op.size, len(op.buf), 3*tcpReadSize)
			}
		}
	}
}

// TestReadSize: a loop reads 128 KiB for each of its streams, up to the
// 4 streams a loop serves (docs/benchmarks.md, "Reads as large as the loop").
func TestReadSize(t *testing.T) {
	for _, c := range []struct{ streams, want int }{
		{0, 128 << 10}, {1, 128 << 10}, {2, 256 << 10}, {3, 384 << 10}, {4, 512 << 10}, {9, 512 << 10},
	} {
		if got := readSize(c.streams); got != c.want {
			t.Errorf("readSize(%d streams) = %d, want %d", c.streams, got, c.want)
		}
	}
}

// TestTCPStops: a sender whose peer does not read is stopped while every
// write would block, and a receiver whose peer never stops sending is
// stopped while it reads: each run returns at once.
func TestTCPStops(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	t.Run("sender", func(t *testing.T) {
		ws, _ := tcpPairs(t, 2)
		s, err := NewSender(ws, SendConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		t0 := time.Now()
		time.AfterFunc(300*time.Millisecond, func() { s.Stop(0) })
		s.Run(session.Timing{Start: t0, Measure: t0, End: t0.Add(20 * time.Second)})
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("the sender ran %v after its stop at 300ms", d)
		}
		if res := s.Collect(); res.Err != nil || res.Counts[0].Bytes == 0 {
			t.Errorf("stopped sender: %v, %d bytes", res.Err, res.Counts[0].Bytes)
		}
	})
	t.Run("receiver", func(t *testing.T) {
		ws, rs := tcpPairs(t, 2)
		for _, w := range ws {
			go func() {
				buf := make([]byte, 64<<10)
				_ = w.SetWriteDeadline(time.Now().Add(10 * time.Second))
				for {
					if _, err := w.Write(buf); err != nil {
						return
					}
				}
			}()
		}
		r, err := NewReceiver(rs, 1)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		time.AfterFunc(300*time.Millisecond, func() { r.Stop(100 * time.Millisecond) })
		r.Run(session.Timing{Start: t0, Measure: t0, End: t0.Add(20 * time.Second)})
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("the receiver ran %v after its stop at 300ms with 100ms grace", d)
		}
		if res := r.Collect(); res.Err != nil || res.Counts[0].Bytes == 0 {
			t.Errorf("stopped receiver: %v, %d bytes", res.Err, res.Counts[0].Bytes)
		}
		r.Close()
		for _, w := range ws {
			w.Close()
		}
	})
}

// TestTCPPacedPartialWrites paces 128 KiB writes at 8 Mb/s into a socket
// whose send buffer holds far less, so that every write is partial: the
// pacer counts the part that went, and the stream still moves 8 Mb/s.
func TestTCPPacedPartialWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	w, rd := tcpPair(t, 0)
	if err := w.SetWriteBuffer(4096); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, rd) }()
	res := sendFor(t, w, SendConfig{rate: wire.Rate{BPS: 8e6}}, 200*time.Millisecond, time.Second)
	// 8 Mb/s for the 1 s window is 1 MB.
	if got := res.Counts[0].Bytes; got < 900e3 || got > 1100e3 {
		t.Errorf("%d bytes in a 1 s window at 8 Mb/s, want about 1,000,000", got)
	}
}

// TestWholePackets: the default write is whole packets of whole segments,
// never a packet of a few hundred bytes at its end; with sendfile, whole
// packets in one pipeful of 16 pages.
func TestWholePackets(t *testing.T) {
	page := os.Getpagesize()
	for _, c := range []struct{ mss, room, want int }{
		{1448, tcpWrite, 130320},  // 2 packets of 45 segments
		{1460, tcpWrite, 128480},  // 2 of 44
		{8948, tcpWrite, 125272},  // 2 of 7 (MTU 9000)
		{536, tcpWrite, 129712},   // 2 of 121
		{65483, tcpWrite, 130966}, // loopback: 2 of one segment
		{0, tcpWrite, tcpWrite},
		{1448, sendfileRoom, 65160}, // sendfile: 1 packet of 45 segments
		{8948, sendfileRoom, 62636},
		{65483, sendfileRoom, 65483},
		{0, sendfileRoom, sendfileRoom},
	} {
		if c.room == sendfileRoom && page != 4096 {
			continue // the figures are for 4 KiB pages
		}
		got := wholePackets(c.mss, c.room)
		if got != c.want {
			t.Errorf("wholePackets(%d, %d) = %d, want %d", c.mss, c.room, got, c.want)
		}
		if c.mss > 0 && got%c.mss != 0 {
			t.Errorf("wholePackets(%d, %d) = %d: not whole segments", c.mss, c.room, got)
		}
		if got > c.room && c.mss > 0 {
			t.Errorf("wholePackets(%d, %d) = %d: more than the room", c.mss, c.room, got)
		}
	}
}

// TestTCPSegmentsAreFull writes as fast as loopback takes it, with the
// default write size, and checks that the segments the kernel sent in the
// window were mostly full: with 128 KiB writes at loopback's MSS of 65,483
// every write ended in a segment of 106 bytes, two thirds of an MSS a
// segment at best (0.67-0.71 in four runs; whole packets: 0.83-0.98, short
// writes when the socket's buffer is full leave short segments too).
func TestTCPSegmentsAreFull(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	for _, zero := range []bool{false, true} {
		want := 0.75
		if zero {
			// sendfile writes one pipeful: 0.996-0.998 of an MSS a
			// segment in three runs, where writes of two packets left
			// 0.81-0.86 (the packet begun at the end of a pipeful was
			// sent as it stood).
			want = 0.93
		}
		// A machine busy elsewhere leaves the socket's buffer full more
		// often and short writes with it: the best of three tries is
		// judged, since what is tested is the writes' shape, not the load.
		var per float64
		var mss uint32
		for try := 0; try < 3 && per < want*float64(mss)+1; try++ {
			w, rd := tcpPair(t, 0)
			if err := w.SetNoDelay(true); err != nil {
				t.Fatal(err)
			}
			go func() { _, _ = io.Copy(io.Discard, rd) }()
			res := sendFor(t, w, SendConfig{zeroCopy: zero}, 100*time.Millisecond, 300*time.Millisecond)
			c, st := res.Counts[0], res.TCP[0]
			if c.Packets == 0 || st.SndMSS == 0 {
				t.Fatalf("sendfile %v: %d bytes in %d segments, MSS %d", zero, c.Bytes, c.Packets, st.SndMSS)
			}
			per, mss = max(per, float64(c.Bytes)/float64(c.Packets)), st.SndMSS
			t.Logf("sendfile %v, try %d: %d bytes in %d segments: %.0f a segment, MSS %d", zero, try+1, c.Bytes, c.Packets, float64(c.Bytes)/float64(c.Packets), st.SndMSS)
		}
		if per < want*float64(mss) {
			t.Errorf("sendfile %v: %.0f bytes a segment at best at an MSS of %d (want %.2f of it): writes end in short segments", zero, per, mss, want)
		}
	}
}
