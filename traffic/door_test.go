package traffic

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"linerate/wire"
)

// dialFrom connects to addr from the loopback address from (127.0.0.0/8
// is all this host's).
func dialFrom(t *testing.T, from, addr string) *rawClient {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return newRawClient(t, c)
}

// Connections that never speak hold handshake slots of their own, a few
// per address, and are dropped at the handshake's deadline: they cannot
// lock out a client that has the secret.
func TestSilentConnectionsDoNotLockOut(t *testing.T) {
	s := &Server{Token: "s3cret", MaxConns: 2, authTimeout: 400 * time.Millisecond}
	addr := startServer(t, s)
	var silent []*rawClient
	for i := range maxPendingPerSource {
		silent = append(silent, dialFrom(t, "127.0.0.2", addr))
		_ = i
	}
	// The next one from the same address is turned away at once.
	if m := dialFrom(t, "127.0.0.2", addr).next(); m == nil || m.Code != "busy" || !strings.Contains(m.Error, "from 127.0.0.2 are authenticating") {
		t.Fatalf("a fifth silent connection from one address: %+v, want busy", m)
	}
	// Silent ones from elsewhere, more than --max-clients.
	for _, from := range []string{"127.0.0.3", "127.0.0.4", "127.0.0.5"} {
		for range 2 {
			silent = append(silent, dialFrom(t, from, addr))
		}
	}
	// A client with the secret gets in and runs a test, twice at once.
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := dialRaw(t, addr)
			if m := rc.handshake("s3cret"); m == nil || m.Type != wire.MsgWelcome {
				t.Errorf("with 10 silent connections open: %+v, want welcome", m)
			}
		}()
	}
	wg.Wait()
	// Every silent connection is closed by the server at the deadline.
	for i, rc := range silent {
		if !rc.closed() {
			t.Errorf("silent connection %d still open after the handshake deadline", i)
		}
	}
}

// Before the handshake, a line longer than a few KiB ends the connection.
func TestLongLineBeforeHandshake(t *testing.T) {
	addr := startServer(t, &Server{Token: "s3cret"})
	rc := dialRaw(t, addr)
	rc.send(`{"type":"hello","version":2,"nonce":"` + strings.Repeat("a", 8<<10) + `"}`)
	if m := rc.next(); m == nil || m.Code != "protocol" || !strings.Contains(m.Error, "longer than 4096 bytes") {
		t.Fatalf("an 8 KiB hello: %+v, want a protocol error", m)
	}
	if !rc.closed() {
		t.Fatal("connection left open")
	}
}

// recorder is a TCP proxy that keeps every byte it passes.
type recorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

func proxy(t *testing.T, to string, rec *recorder) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				return
			}
			go func() { _, _ = io.Copy(io.MultiWriter(s, rec), c); s.Close() }()
			go func() { _, _ = io.Copy(io.MultiWriter(c, rec), s); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// The secret never crosses the wire, either way.
func TestSecretNeverOnTheWire(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	const secret = "correct horse battery staple"
	var rec recorder
	addr := proxy(t, startServer(t, &Server{Token: secret}), &rec)
	res, err := Run(context.Background(), Config{Targets: []string{addr}, Token: secret, FrameSize: 64,
		Spec: wire.Spec{Proto: "udp", Direction: wire.Forward, Duration: wire.Seconds(200 * time.Millisecond), Rate: wire.Rate{PPS: 1000}, Streams: 1, Ports: 1, Threads: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.SentPackets == 0 {
		t.Fatal("the test did not run")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.buf.Len() == 0 || !bytes.Contains(rec.buf.Bytes(), []byte(`"type":"challenge"`)) {
		t.Fatalf("the proxy saw no handshake (%d bytes)", rec.buf.Len())
	}
	if bytes.Contains(rec.buf.Bytes(), []byte(secret)) {
		t.Fatal("the secret crossed the wire")
	}
}

// A server that does not know the secret cannot pass for one that does.
func TestClientChecksServerProof(t *testing.T) {
	addr := startServer(t, &Server{Token: "another secret"})
	_, err := Run(context.Background(), Config{Targets: []string{addr}, Token: "s3cret",
		Spec: wire.Spec{Proto: "udp", Direction: wire.Forward, Duration: wire.Seconds(time.Second), Streams: 1, Ports: 1, Threads: 1}})
	if err == nil || !strings.Contains(err.Error(), "does not know this secret") {
		t.Fatalf("err = %v, want the server's proof refused", err)
	}
	addr = startServer(t, &Server{Token: "s3cret"})
	_, err = Run(context.Background(), Config{Targets: []string{addr},
		Spec: wire.Spec{Proto: "udp", Direction: wire.Forward, Duration: wire.Seconds(time.Second), Streams: 1, Ports: 1, Threads: 1}})
	if err == nil || !strings.Contains(err.Error(), "requires a secret") {
		t.Fatalf("no secret given: err = %v", err)
	}
}

// Test datagrams count only from the control connection's peer; those
// from anywhere else are reported as foreign.
func TestForeignDatagramsNotCounted(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	addr := startServer(t, &Server{})
	rc := dialRaw(t, addr)
	rc.welcome("")
	rc.send(`{"type":"test","spec":{"proto":"udp","direction":"forward","duration":30,"payload":18,"streams":1,"ports":1,"threads":1}}`)
	acc := rc.next()
	if acc == nil || acc.Type != wire.MsgAccept || len(acc.Accept.UDPPorts) != 1 {
		t.Fatalf("accept: %+v", acc)
	}
	rc.send(`{"type":"start"}`)
	if m := rc.next(); m == nil || m.Type != wire.MsgRunning {
		t.Fatalf("running: %+v", m)
	}
	to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(acc.Accept.UDPPorts[0])}
	send := func(from string, n int) {
		c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP(from)}, to)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		b := make([]byte, 18)
		for i := range n {
			wire.PutHeader(b, wire.Header{Seq: uint32(i), Sent: time.Now().UnixNano()})
			if _, err := c.Write(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	send("127.0.0.1", 100)
	send("127.0.0.9", 70)
	// Wait for the server's count to show the peer's hundred.
	for {
		m := rc.next()
		if m == nil || m.Type != wire.MsgInterval {
			t.Fatalf("interval: %+v", m)
		}
		if m.Interval.ReceivedPackets >= 100 {
			if m.Interval.ReceivedPackets != 100 {
				t.Errorf("the server's live count is %d, want the peer's 100", m.Interval.ReceivedPackets)
			}
			break
		}
	}
	rc.send(`{"type":"stop","sent":[{"stream":0,"packets":100,"bytes":1800}]}`)
	for {
		m := rc.next()
		if m == nil {
			t.Fatal("no result")
		}
		if m.Type != wire.MsgResult {
			continue
		}
		r := m.Result
		var got uint64
		for _, c := range r.Received {
			got += c.Packets
		}
		if got != 100 || r.Foreign != 70 {
			t.Errorf("received %d and %d foreign, want 100 and 70", got, r.Foreign)
		}
		return
	}
}

// threads is this process's thread count.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads: line in /proc/self/status")
	return 0
}

// Every thread of an ended test is released, on both ends.
func TestTestThreadsReleased(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	addr := startServer(t, &Server{})
	run := func(n int) {
		_, err := Run(context.Background(), Config{Targets: []string{addr}, FrameSize: 64,
			Spec: wire.Spec{Proto: "udp", Direction: wire.Bidir, Duration: wire.Seconds(300 * time.Millisecond), Rate: wire.Rate{PPS: 2000}, Streams: 1, Ports: n, Threads: n}})
		if err != nil {
			t.Fatal(err)
		}
	}
	run(2) // the runtime's own threads, started once
	before := threads(t)
	run(64)
	deadline := time.Now().Add(10 * time.Second)
	for {
		after := threads(t)
		if after <= before+4 {
			t.Logf("threads: %d before, %d after a 64-thread bidir test", before, after)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads: %d before, still %d after a 64-thread bidir test", before, after)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
