package traffic

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"linerate/internal/usage"
	"linerate/wire"
)

// startServer runs a Server on a loopback port until the test ends.
func startServer(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
	return ln.Addr().String()
}

// rawClient speaks the control protocol by hand.
type rawClient struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return newRawClient(t, c)
}

func newRawClient(t *testing.T, c net.Conn) *rawClient {
	return &rawClient{t: t, c: c, r: bufio.NewReader(c)}
}

func (rc *rawClient) send(s string) {
	rc.t.Helper()
	if _, err := rc.c.Write([]byte(s + "\n")); err != nil {
		rc.t.Fatal(err)
	}
}

// next reads one message; nil at EOF.
func (rc *rawClient) next() *Message {
	rc.t.Helper()
	_ = rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := rc.r.ReadBytes('\n')
	if err != nil {
		return nil
	}
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		rc.t.Fatalf("server sent %q: %v", line, err)
	}
	return &m
}

func (rc *rawClient) closed() bool {
	_ = rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := rc.r.ReadByte()
	return err != nil
}

// handshake says hello and proves it knows secret (any proof when the
// server is open), as a client does, and returns the server's answer to
// its proof: a welcome, or an error.
func (rc *rawClient) handshake(secret string) *Message {
	rc.t.Helper()
	nc := wire.NewNonce()
	rc.send(fmt.Sprintf(`{"type":"hello","version":%d,"nonce":%q}`, wire.ProtocolVersion, nc))
	ch := rc.next()
	if ch == nil || ch.Type != wire.MsgChallenge {
		return ch
	}
	rc.send(fmt.Sprintf(`{"type":"auth","proof":%q}`, wire.Proof(secret, "client", ch.Nonce, nc)))
	return rc.next()
}

// welcome does the handshake and fails the test unless it is welcomed.
func (rc *rawClient) welcome(secret string) {
	rc.t.Helper()
	if m := rc.handshake(secret); m == nil || m.Type != wire.MsgWelcome {
		rc.t.Fatalf("welcome: %+v", m)
	}
}

func TestServerRefusesWrongToken(t *testing.T) {
	now := time.Unix(1e9, 0)
	s := &Server{Token: "s3cret", door: newDoor(func() time.Time { return now })}
	addr := startServer(t, s)
	rc := dialRaw(t, addr)
	m := rc.handshake("guess")
	if m == nil || m.Type != wire.MsgError || m.Code != "wrong-token" || !strings.HasPrefix(m.Error, "wrong token") {
		t.Fatalf("got %+v, want a wrong-token error", m)
	}
	if !rc.closed() {
		t.Fatal("connection left open after a wrong token")
	}
	// The source waits a second before it may try again; the next failure
	// doubles that.
	rc = dialRaw(t, addr)
	if m := rc.next(); m == nil || m.Code != "slow-down" || !strings.Contains(m.Error, "try again in 1s") {
		t.Fatalf("right after a failure: %+v, want slow-down for 1s", m)
	}
	now = now.Add(time.Second)
	if m := dialRaw(t, addr).handshake("guess again"); m == nil || m.Code != "wrong-token" {
		t.Fatalf("second guess: %+v", m)
	}
	now = now.Add(time.Second)
	if m := dialRaw(t, addr).next(); m == nil || m.Code != "slow-down" || !strings.Contains(m.Error, "try again in 1s") {
		t.Fatalf("1 s into a 2 s pause: %+v", m)
	}
	now = now.Add(time.Second)
	dialRaw(t, addr).welcome("s3cret")
	// The right secret forgets the failures.
	if m := dialRaw(t, addr).handshake("wrong"); m == nil || !strings.Contains(m.Error, "must now wait 1s") {
		t.Fatalf("after a success, a failure: %+v, want the first pause again", m)
	}
}

func TestClientWrongTokenIsBadInput(t *testing.T) {
	addr := startServer(t, &Server{Token: "s3cret"})
	_, err := Run(context.Background(), Config{Targets: []string{addr}, Token: "nope",
		Spec: wire.Spec{Proto: "udp", Direction: wire.Forward, Duration: wire.Seconds(time.Second), Streams: 1, Ports: 1, Threads: 1}})
	if !errors.Is(err, wire.ErrWrongToken) || !usage.Is(err) || !strings.Contains(err.Error(), "wrong token") {
		t.Fatalf("err = %v, want a bad-input wrong-token error", err)
	}
}

func TestServerSurvivesGarbage(t *testing.T) {
	addr := startServer(t, &Server{})
	for _, junk := range []struct{ line, code string }{
		{"GET / HTTP/1.1", "protocol"},
		{`{"type":"hello","version":1,"token":"s3cret"}`, "version"},
		{`{"type":"hello","version":2}`, "protocol"},
		{`{"type":"start"}`, "protocol"},
		{`{"version":1}`, "protocol"},
		{strings.Repeat("x", 100000), "protocol"},
	} {
		rc := dialRaw(t, addr)
		rc.send(junk.line)
		m := rc.next()
		if m == nil || m.Type != wire.MsgError || m.Code != junk.code {
			t.Errorf("%.30q: got %+v, want an error message with code %s", junk.line, m, junk.code)
		}
		if !rc.closed() {
			t.Errorf("%.30q: connection left open", junk.line)
		}
	}
	// Garbage after a good hello, and a test the server refuses but
	// survives on the same connection.
	rc := dialRaw(t, addr)
	rc.welcome("")
	rc.send(`{"type":"test","spec":{"proto":"icmp","direction":"forward","duration":1}}`)
	if m := rc.next(); m == nil || m.Type != wire.MsgError || m.Code != "test-refused" || !strings.Contains(m.Error, "test refused: proto") {
		t.Fatalf("bad spec: %+v", m)
	}
	rc.send(`{"type":"test","spec":{"proto":"udp","direction":"forward","duration":1,"payload":18,"streams":1,"ports":1,"threads":1,"rcvbuf":-1}}`)
	if m := rc.next(); m == nil || m.Type != wire.MsgError || !strings.Contains(m.Error, "rcvbuf") {
		t.Fatalf("negative rcvbuf: %+v", m)
	}
	// A value that does not decode breaks the protocol: error, then close.
	rc.send(`{"type":"test","spec":{"proto":"udp","direction":"forward","duration":-4}}`)
	if m := rc.next(); m == nil || m.Type != wire.MsgError {
		t.Fatalf("negative duration: %+v", m)
	}
	if !rc.closed() {
		t.Fatal("connection left open after a broken message")
	}
	// Still serving.
	dialRaw(t, addr).welcome("")
}

func TestServerBoundsConnections(t *testing.T) {
	addr := startServer(t, &Server{MaxConns: 2})
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	for _, rc := range []*rawClient{a, b} {
		rc.welcome("")
	}
	c := dialRaw(t, addr)
	m := c.handshake("")
	if m == nil || m.Type != wire.MsgError || m.Code != "busy" || !strings.HasPrefix(m.Error, "busy: ") {
		t.Fatalf("third connection: %+v, want busy", m)
	}
	a.c.Close()
	// The slot frees once the server sees the close.
	deadline := time.Now().Add(5 * time.Second)
	for {
		m := dialRaw(t, addr).handshake("")
		if m != nil && m.Type == wire.MsgWelcome {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot not freed: %+v", m)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestServerSurvivesVanishedClient(t *testing.T) {
	if testing.Short() {
		t.Skip("sends traffic on loopback")
	}
	addr := startServer(t, &Server{})
	// A client that asks for a reverse test, starts it and vanishes.
	rc := dialRaw(t, addr)
	rc.welcome("")
	sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	port := sink.LocalAddr().(*net.UDPAddr).Port
	rc.send(`{"type":"test","spec":{"proto":"udp","direction":"reverse","duration":20,"rate":{"pps":1000},"payload":18,"streams":1,"ports":1,"threads":1,"client_ports":[` + itoa(port) + `]}}`)
	if m := rc.next(); m == nil || m.Type != wire.MsgAccept {
		t.Fatalf("accept: %+v", m)
	}
	rc.send(`{"type":"start"}`)
	if m := rc.next(); m == nil || m.Type != wire.MsgRunning {
		t.Fatalf("running: %+v", m)
	}
	buf := make([]byte, 100)
	_ = sink.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := sink.Read(buf); err != nil {
		t.Fatalf("the server sent nothing: %v", err)
	}
	rc.c.Close()
	// The server stops sending soon after.
	time.Sleep(500 * time.Millisecond)
	for {
		_ = sink.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := sink.Read(buf); err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatal(err)
			}
			break
		}
	}
	// And serves the next client.
	res, err := Run(context.Background(), Config{Targets: []string{addr}, FrameSize: 64,
		Spec: wire.Spec{Proto: "udp", Direction: wire.Forward, Duration: wire.Seconds(300 * time.Millisecond), Rate: wire.Rate{PPS: 2000}, Streams: 1, Ports: 1, Threads: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.ReceivedPackets == 0 {
		t.Fatal("next test received nothing")
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestServerDataHelloWrongDirection: a data connection for a direction the
// test does not have (here 'f' in a reverse test) is closed, and the
// server goes on.
func TestServerDataHelloWrongDirection(t *testing.T) {
	addr := startServer(t, &Server{})
	rc := dialRaw(t, addr)
	rc.welcome("")
	rc.send(`{"type":"test","spec":{"proto":"tcp","direction":"reverse","duration":1,"streams":1,"ports":1,"threads":1}}`)
	m := rc.next()
	if m == nil || m.Type != wire.MsgAccept {
		t.Fatalf("accept: %+v", m)
	}
	host, _, _ := net.SplitHostPort(addr)
	dc, err := net.Dial("tcp", net.JoinHostPort(host, itoa(int(m.Accept.TCPPort))))
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	cookie, err := wire.ParseCookie(m.Accept.Cookie)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dc.Write(wire.PutDataHello(cookie, 0, 'f')); err != nil {
		t.Fatal(err)
	}
	_ = dc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := dc.Read(make([]byte, 1)); err == nil {
		t.Fatal("a data connection for the wrong direction was kept")
	}
	// Still serving.
	dialRaw(t, addr).welcome("")
}

// TestPeerErrorCodes: an error message's code is what the client tests
// with errors.Is, whatever its text; a code the client does not know (or
// none, from an older server) matches nothing.
func TestPeerErrorCodes(t *testing.T) {
	for _, c := range wire.ErrorCodes {
		err := fmt.Errorf("target: %w", peerError(errorMessage(fmt.Errorf("%w: why", c.Err))))
		if !errors.Is(err, c.Err) {
			t.Errorf("code %s: %v does not match its error", c.Code, err)
		}
		for _, o := range wire.ErrorCodes {
			if o.Code != c.Code && errors.Is(err, o.Err) {
				t.Errorf("code %s matches %s too", c.Code, o.Code)
			}
		}
		if got := wire.CodeOf(err); got != c.Code {
			t.Errorf("code %s comes back as %q", c.Code, got)
		}
	}
	for _, m := range []*Message{{Type: wire.MsgError, Error: "wrong token: no code"}, {Type: wire.MsgError, Code: "new-code", Error: "busy"}} {
		err := peerError(m)
		for _, c := range wire.ErrorCodes {
			if errors.Is(err, c.Err) {
				t.Errorf("%+v matches %s", m, c.Code)
			}
		}
	}
}
