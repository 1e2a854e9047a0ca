package traffic

import (
	"io"
	"net"
	"testing"
	"time"
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
	d := net.Dialer{Control: tcpDialControl(mss)}
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

func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

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
	setNoDelay(w)
	r := newTCPReceiver([]*net.TCPConn{rd})
	t0 := time.Now()
	const margin = 200 * time.Millisecond
	tm := Timing{Start: t0, Measure: t0.Add(margin + 100*time.Millisecond), End: t0.Add(3*margin + 100*time.Millisecond)}
	done := make(chan struct{})
	go func() { r.run(tm); close(done) }()
	var total uint64
	write := func(n int) {
		t.Helper()
		if _, err := w.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		total += uint64(n)
		for {
			if _, got := r.progress(); got >= total {
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
	r.stop(2 * time.Second)
	<-done
	res := r.collect()
	if res.err != nil {
		t.Fatal(res.err)
	}
	c, stats := res.counts[0], res.tcp
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
	s, err := newTCPSender([]*net.TCPConn{w}, tcpSendConfig{mss: 88, rate: Rate{PPS: 2000}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	tm := Timing{Start: t0, Measure: t0.Add(400 * time.Millisecond), End: t0.Add(800 * time.Millisecond)}
	s.run(tm)
	res := s.collect()
	if res.err != nil {
		t.Fatal(res.err)
	}
	c, st := res.counts[0], res.tcp[0]
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
