package traffic

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"time"

	"linerate/wire"
)

// ServeConn speaks the control protocol on one connection that is already
// open (`serve --stdio`: ssh's standard input and output) until the client
// says bye, the connection ends or ctx is done, and returns once its test
// is torn down. The connection's addresses are those the server binds to
// (local) and sends to (remote), as with Serve.
func (s *Server) ServeConn(ctx context.Context, conn net.Conn) error {
	s.init()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	c := newCtl(conn)
	if err := s.serverHandshake(c); err != nil {
		if wire.CodeOf(err) != "" {
			_ = c.write(errorMessage(err))
		}
		return fmt.Errorf("handshake: %w", err)
	}
	if err := s.welcome(c); err != nil {
		return err
	}
	if err := watchPeer(conn, cmp.Or(s.PeerTimeout, peerTimeout)); err != nil {
		s.logf("%s: keepalive: %v", conn.RemoteAddr(), err)
	}
	err := s.handle(ctx, c, conn, true)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Greet runs the client's side of the handshake on c with secret (may be
// empty for a server without one) and returns the server's welcome (its
// version, limits and ID), within d. An error the server sends is a
// *PeerError; an error of the connection itself is returned as it is. The
// server says nothing more until the client speaks, so the connection can
// then be read by others.
func Greet(c net.Conn, secret string, d time.Duration) (*Message, error) {
	_ = c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	return clientHandshake(newCtl(c), secret)
}
