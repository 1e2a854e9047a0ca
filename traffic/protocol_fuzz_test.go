package traffic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"linerate/wire"
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
// message without a type, read past its limit, or carry a field its type
// does not (wire.Sizes).
func FuzzControlRead(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s+"\n"), true, uint8(0), uint16(0), uint16(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, authed bool, peer uint8, seconds, flows uint16) {
		c := newCtl(fuzzConn{bytes.NewReader(in)})
		if !authed {
			c.limit = authLine
		}
		c.peer = []wire.Role{"", wire.RoleClient, wire.RoleServer}[peer%3]
		if seconds > 0 {
			c.asked = time.Now().Add(-time.Duration(seconds) * time.Second)
		}
		c.flows = int(flows)
		for range 8 {
			m, err := c.read(time.Second)
			if err != nil {
				return
			}
			checkMessage(t, c, m, authed)
		}
	})
}

// checkMessage fails t if m, read on c, breaks what its type allows.
func checkMessage(t *testing.T, c *ctl, m *Message, authed bool) {
	t.Helper()
	if m.Type == "" {
		t.Fatalf("a message without a type")
	}
	z := wire.Sizes[m.Type]
	if c.peer != "" && z.From != "" && z.From != c.peer {
		t.Fatalf("a %q from the %s", m.Type, c.peer)
	}
	b, _ := json.Marshal(m)
	if !authed && len(b) > 2*authLine+1024 {
		t.Fatalf("a %d-byte message before the handshake", len(b))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	for k := range fields {
		if k != "type" && !slices.Contains(z.Fields, k) {
			t.Fatalf("a %q carries %q", m.Type, k)
		}
	}
	if m.Spec != nil {
		_ = m.Spec.Check() // must not panic on any spec
	}
}

// FuzzControlSizes: a message of any type holding n copies of an element
// nested depth deep in any field is refused or decoded within its type's
// bounds, with memory in proportion to them.
func FuzzControlSizes(f *testing.F) {
	f.Add("bye", "samples", "{}", uint32(100000), uint8(1))
	f.Add("result", "result", `{"samples":[{}]}`, uint32(5000), uint8(1))
	f.Add("samples", "samples", `{"cpu":[{}],"netdev":{"a":{}}}`, uint32(1000), uint8(1))
	f.Add("accept", "accept", `{"notes":[""]}`, uint32(1000), uint8(3))
	f.Add("stop", "sent", `{"stream":1}`, uint32(70000), uint8(1))
	f.Add("test", "spec", "[", uint32(1), uint8(40))
	f.Fuzz(func(t *testing.T, typ, field, elem string, n uint32, depth uint8) {
		n %= 1 << 20
		if len(elem)*int(n) > 8<<20 {
			return
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"type":%q,%q:`, typ, field)
		b.WriteString(strings.Repeat("[", int(depth)))
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(elem)
		}
		b.WriteString(strings.Repeat("]", int(depth)))
		b.WriteString("}\n")
		for _, peer := range []wire.Role{wire.RoleClient, wire.RoleServer} {
			c := newCtl(fuzzConn{bytes.NewReader(b.Bytes())})
			c.peer, c.asked, c.flows = peer, time.Now().Add(-time.Minute), 1024
			var m *Message
			var err error
			got := allocated(func() { m, err = c.read(time.Second) })
			if err != nil {
				continue
			}
			checkMessage(t, c, m, true)
			maxBytes, maxValues := c.bounds(wire.Sizes[m.Type])
			if values, d := jsonShape(b.Bytes()); b.Len() > maxBytes+1 || values > maxValues || d > wire.MaxDepth {
				t.Fatalf("a %q of %d bytes, %d values, %d deep taken", m.Type, b.Len(), values, d)
			}
			if limit := uint64(8*b.Len() + maxValues<<12 + 1<<20); got > limit {
				t.Fatalf("a %d-byte %q took %d bytes to decode, at most %d", b.Len(), m.Type, got, limit)
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
		c := newCtl(fuzzConn{bytes.NewReader(in)})
		if err := serverHandshake(c, "s3cret", 0); err == nil {
			t.Fatalf("let in without proving the secret: %q", in)
		}
	})
}
