package traffic

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/wire"
)

// established counts the TCP sockets in ns that are connected on local
// port (IPv4), accepted or waiting to be.
func established(t *testing.T, ns *testenv.NetNS, port uint16) int {
	t.Helper()
	n := 0
	for _, s := range ns.TCPSockets(t) {
		if s.Local.Port() == port && s.State == testenv.TCPEstablished {
			n++
		}
	}
	return n
}

// A test takes only the data connections it asked for. A client that
// opens 40 more connections for its one stream (with the test's cookie,
// as a copy of itself would) and 40 that never say hello holds at most
// the stream's connection and one waiting for its hello on the server:
// the others are closed while the flood holds its ends open. A bench rr
// test of one stream used to answer every one (6,000: 400 MB more in
// serve), and a stream test held every silent one for 5 s.
func TestTestTakesOnlyItsDataConnections(t *testing.T) {
	l := newLab(t, &Server{})
	for _, tc := range []struct {
		name string
		spec string
	}{
		{"rr", `{"proto":"tcp","direction":"forward","duration":5,"streams":1,"ports":1,"threads":1,"rr":{"request":1,"response":1,"timeout":1}}`},
		{"stream", `{"proto":"tcp","direction":"forward","duration":5,"streams":1,"ports":1,"threads":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c net.Conn
			if err := l.a.Do(func() (err error) {
				c, err = net.DialTimeout("tcp", l.server, 2*time.Second)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			rc := newRawClient(t, c)
			rc.welcome("")
			rc.send(`{"type":"test","spec":` + tc.spec + `}`)
			m := rc.next()
			if m == nil || m.Type != wire.MsgAccept || m.Accept.TCPPort == 0 {
				t.Fatalf("test: %+v", m)
			}
			cookie, err := wire.ParseCookie(m.Accept.Cookie)
			if err != nil {
				t.Fatal(err)
			}
			to := netip.AddrPortFrom(netip.MustParseAddrPort(l.server).Addr(), m.Accept.TCPPort).String()
			dial := func(hello bool) {
				t.Helper()
				var d net.Conn
				if err := l.a.Do(func() (err error) {
					d, err = net.DialTimeout("tcp", to, 2*time.Second)
					return err
				}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { d.Close() })
				if hello {
					if _, err := d.Write(wire.PutDataHello(cookie, 0, 'f')); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i := range 80 {
				dial(i%2 == 0)
			}
			const want = 2 // the stream's, and one waiting for its hello
			// Well within the 5 s a connection has to say hello.
			deadline := time.Now().Add(2 * time.Second)
			n := established(t, l.b, m.Accept.TCPPort)
			for ; n > want && time.Now().Before(deadline); n = established(t, l.b, m.Accept.TCPPort) {
				time.Sleep(50 * time.Millisecond)
			}
			if n > want {
				t.Errorf("the server holds %d data connections of a test of one stream, want at most %d", n, want)
			}
			// The client goes: the server tears the test down.
			c.Close()
		})
	}
}
