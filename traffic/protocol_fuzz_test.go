package traffic

import (
	"bytes"
	"encoding/json"
	"linerate/wire"
	"net"
	"testing"
	"time"
)

// fuzzConn is a net.Conn that reads from a fixed input and discards what
// is written.
type fuzzConn struct{ r *bytes.Reader }

func (c fuzzConn) Read(p []byte) (int, error)         { return c.r.Read(p) }
func (c fuzzConn) Write(p []byte) (int, error)        { return len(p), nil }
func (c fuzzConn) Close() error                       { return nil }
func (c fuzzConn) LocalAddr() net.Addr                { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7557} }
func (c fuzzConn) RemoteAddr() net.Addr               { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000} }
func (c fuzzConn) SetDeadline(t time.Time) error      { return nil }
func (c fuzzConn) SetReadDeadline(t time.Time) error  { return nil }
func (c fuzzConn) SetWriteDeadline(t time.Time) error { return nil }

// fuzzSeeds are real control lines, one per message type.
var fuzzSeeds = []string{
	`{"type":"hello","version":2,"linerate":"v1","nonce":"` + string(bytes.Repeat([]byte("ab"), wire.NonceLen)) + `"}`,
	`{"type":"auth","proof":"00"}`,
	`{"type":"test","spec":{"proto":"udp","direction":"bidir","duration":10,"warmup":1,"rate":{"pps":100000},"payload":18,"streams":2,"ports":4,"threads":2,"probe_interval":0.01,"client_ports":[5000,5001,5002,5003]}}`,
	`{"type":"test","spec":{"proto":"tcp","direction":"reverse","duration":1,"mss":88,"streams":1,"ports":1,"threads":1}}`,
	`{"type":"start"}`,
	`{"type":"stop","sent":[{"stream":0,"packets":100,"bytes":1800}]}`,
	`{"type":"bye"}`,
	`{"type":"error","code":"busy","error":"busy: 8 clients"}`,
	`{"type":"result","result":{"received":[{"stream":0,"packets":3}],"seconds":1.5,"foreign":2}}`,
}

// FuzzControlRead: no line a peer sends makes the decoder panic, return a
// message without a type, or read past its limit.
func FuzzControlRead(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s+"\n"), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, authed bool) {
		c := newCtl(fuzzConn{bytes.NewReader(in)})
		if !authed {
			c.limit = authLine
		}
		for range 8 {
			m, err := c.read(time.Second)
			if err != nil {
				return
			}
			if m.Type == "" {
				t.Fatalf("a message without a type from %q", in)
			}
			if b, _ := json.Marshal(m); !authed && len(b) > 2*authLine+1024 {
				t.Fatalf("a %d-byte message before the handshake", len(b))
			}
			if m.Spec != nil {
				_ = m.Spec.Check() // must not panic on any spec
			}
		}
	})
}

// FuzzServerHandshake: whatever a client sends before it is welcomed, the
// server's handshake ends with an error or a welcome, never a panic, and
// never lets a client in without the secret.
func FuzzServerHandshake(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s + "\n" + `{"type":"auth","proof":"x"}` + "\n"))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s := &Server{Token: "s3cret"}
		s.init()
		c := newCtl(fuzzConn{bytes.NewReader(in)})
		if err := s.serverHandshake(c); err == nil {
			t.Fatalf("let in without proving the secret: %q", in)
		}
	})
}
