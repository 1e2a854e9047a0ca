package traffic

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"time"

	"linerate/internal/version"
)

// ServeConn speaks the control protocol on one connection that is already
// open (`serve --stdio`: ssh's standard input and output) until the client
// says bye, the connection ends or ctx is done, and returns once its test
// is torn down. The connection's addresses are those the server binds to
// (local) and sends to (remote), as with Serve.
func (s *Server) ServeConn(ctx context.Context, c net.Conn) error {
	s.mu.Lock()
	if s.id == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		s.id = hex.EncodeToString(b[:])
	}
	s.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	defer c.Close()
	if err := watchPeer(c, cmp.Or(s.PeerTimeout, peerTimeout)); err != nil {
		s.logf("%s: keepalive: %v", c.RemoteAddr(), err)
	}
	err := s.handle(ctx, c)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Greet says hello on a control connection and waits at most d for the
// server's welcome, which it returns (the server's version, limits and
// ID). An error the server sends is a *PeerError; an error of the
// connection itself is returned as it is. The server says nothing more
// until the client speaks, so the connection can then be read by others.
func Greet(c net.Conn, token string, d time.Duration) (*Message, error) {
	ctl := newCtl(c)
	if err := ctl.write(&Message{Type: msgHello, Version: ProtocolVersion, Linerate: version.Version, Token: token}); err != nil {
		return nil, err
	}
	return ctl.expect(d, msgWelcome)
}
