package traffic

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"linerate/internal/admit"
	"linerate/traffic/sock"
	"linerate/wire"
)

// Serve accepts control connections on ln until ctx ends, then closes
// every connection and returns once their tests are torn down.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.init()
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		s.closeAll()
	})
	defer stop()
	var err error
	for {
		var c net.Conn
		// Out of descriptors, a handshake under way gives up its slot (the
		// door's victim) and accept tries again after a pause.
		c, err = admit.Accept(ln, ctx.Done(), s.door.slots.Shed, func(err error, pause time.Duration) {
			s.logf("accept on %s: %v; trying again in %s", ln.Addr(), err, pause)
		})
		if err != nil {
			if ctx.Err() != nil {
				err = nil
			}
			break
		}
		s.admit(ctx, c)
	}
	stop()
	ln.Close()
	s.closeAll()
	s.wg.Wait()
	return err
}

func (s *Server) init() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	if s.door == nil {
		s.door = newDoor(nil)
	}
	if s.id == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		s.id = hex.EncodeToString(b[:])
	}
}

func (s *Server) closeAll() {
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
}

// admit takes a new control connection through the door: a handshake slot
// of its own, the handshake, then a client slot (MaxConns).
func (s *Server) admit(ctx context.Context, c net.Conn) {
	peer := sock.AddrOf(c.RemoteAddr())
	s.wg.Add(1)
	t, err := s.door.enter(peer, func() { _ = c.SetReadDeadline(time.Unix(1, 0)) })
	if err == nil && ctx.Err() != nil {
		t.Leave()
		err = fmt.Errorf("%w: the server is stopping", wire.ErrBusy)
	}
	if err != nil {
		s.logf("refused %s: %v", c.RemoteAddr(), err)
		go func() { defer s.wg.Done(); refuse(c, err) }()
		return
	}
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
		if err := s.serveConn(ctx, c, peer, t); err != nil {
			s.logf("%s: %v", c.RemoteAddr(), err)
		}
	}()
}

// serveConn authenticates the client on c, which holds the handshake slot
// t, takes a client slot and speaks the protocol until the client is done.
func (s *Server) serveConn(ctx context.Context, conn net.Conn, peer netip.Addr, t *admit.Slot) error {
	c := newCtl(conn)
	c.gone = t.Gone
	err := serverHandshake(c, s.Token, s.authTimeout)
	// A slot given up, even as the handshake ended, ends the connection:
	// its cut may yet come.
	given := !t.Leave()
	c.gone = nil
	if given && s.door.slots.Len() < maxPending {
		err = fmt.Errorf("%w: the server ran short of descriptors and gave up this handshake's slot", wire.ErrBusy)
	} else if given {
		err = fmt.Errorf("%w: %d connections are authenticating; this one's slot went to a newer one", wire.ErrBusy, maxPending)
	}
	if err != nil {
		if errors.Is(err, wire.ErrWrongToken) {
			wait := s.door.failed(peer)
			err = fmt.Errorf("%w (this address must now wait %s)", err, wait)
		}
		if wire.CodeOf(err) != "" {
			// Not for a connection that failed or went silent.
			_ = c.write(errorMessage(err))
		}
		return fmt.Errorf("handshake: %w", err)
	}
	s.door.passed(peer)
	maxConns := cmp.Or(s.MaxConns, 8)
	s.mu.Lock()
	n := s.clients
	if n >= maxConns || ctx.Err() != nil {
		s.mu.Unlock()
		err := fmt.Errorf("%w: %d clients connected, the server's limit (serve --max-clients)", wire.ErrBusy, n)
		_ = c.write(errorMessage(err))
		return err
	}
	s.clients++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.clients--
		s.mu.Unlock()
	}()
	if err := welcome(c, s.Limits, s.id, !s.featureless); err != nil {
		return err
	}
	if err := watchPeer(conn, cmp.Or(s.PeerTimeout, peerTimeout)); err != nil {
		s.logf("%s: keepalive: %v", conn.RemoteAddr(), err)
	}
	return s.handle(ctx, c, conn, false)
}

// refuse tells a client why it is turned away and closes the connection.
func refuse(c net.Conn, why error) {
	defer c.Close()
	ctl := newCtl(c)
	ctl.wt = 2 * time.Second
	_ = ctl.write(errorMessage(why))
}

// handle speaks the protocol on one authenticated control connection;
// channel says it is an ssh channel (serve --stdio), whose controller ssh
// authenticated.
func (s *Server) handle(ctx context.Context, c *ctl, conn net.Conn, channel bool) error {
	local, peer := sock.AddrOf(conn.LocalAddr()), sock.AddrOf(conn.RemoteAddr())
	idle := idleTimeout
	ctx, stopListening := context.WithCancel(ctx)
	defer stopListening()
	for {
		m, err := c.read(idle)
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, wire.ErrProtocol) {
				_ = c.write(errorMessage(err))
			}
			return err
		}
		switch m.Type {
		case wire.MsgBye:
			return nil
		case wire.MsgListen:
			if !channel {
				err = c.write(errorMessage(fmt.Errorf("%w: listen is for an agent reached over ssh", wire.ErrTestRefused)))
				break
			}
			addrs, lerr := s.listen(ctx, m.Listen)
			if lerr != nil {
				err = c.write(errorMessage(lerr))
				break
			}
			idle = channelIdle
			err = c.write(&Message{Type: wire.MsgListening, Listening: addrs})
		case wire.MsgSample:
			// Sampling, like a flow, is the last thing on its connection.
			return s.sampleFor(ctx, c)
		case wire.MsgFlow:
			err = s.flow(ctx, c, m.Flow, channel)
			if errors.Is(err, wire.ErrFlowRefused) {
				s.logf("%s: %v", peer, err)
				_ = c.write(errorMessage(err))
			} else if err != nil {
				_ = c.write(errorMessage(err))
			}
			// A flow is the last thing on its connection.
			return err
		case wire.MsgTest:
			err = s.test(c, m.Spec, local, peer)
			if errors.Is(err, wire.ErrTestRefused) {
				// The connection stays open for another test.
				s.logf("%s: %v", peer, err)
				err = c.write(errorMessage(err))
			} else if err != nil {
				_ = c.write(errorMessage(err))
			}
		default:
			err = fmt.Errorf("%w: unexpected %q", wire.ErrProtocol, m.Type)
			_ = c.write(errorMessage(err))
		}
		if err != nil {
			return err
		}
	}
}

// listen starts listeners for l on this agent until ctx ends, and returns
// their addresses.
func (s *Server) listen(ctx context.Context, l *Listen) ([]string, error) {
	if l == nil || len(l.Addresses) == 0 {
		return nil, fmt.Errorf("%w: listen without an address", wire.ErrTestRefused)
	}
	srv := &Server{Token: cmp.Or(l.Secret, s.Token), Limits: s.Limits, MaxConns: s.MaxConns, CPUs: s.CPUs,
		Sampling: s.Sampling, Setup: s.Setup, Drops: s.Drops, Machine: s.Machine, Logf: s.Logf,
		PeerTimeout: s.PeerTimeout, Allow: s.Allow}
	var lns []net.Listener
	fail := func(err error) ([]string, error) {
		for _, ln := range lns {
			ln.Close()
		}
		return nil, err
	}
	var out []string
	for _, a := range l.Addresses {
		if _, _, err := net.SplitHostPort(a); err != nil {
			a = net.JoinHostPort(a, "0")
		}
		var ln net.Listener
		err := s.setup(func() (err error) {
			ln, err = net.Listen("tcp", a)
			return err
		})
		if err != nil {
			return fail(fmt.Errorf("%w: listen on %s: %v", wire.ErrTestRefused, a, err))
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		go func() { _ = srv.Serve(ctx, ln) }()
	}
	s.logf("listening for the test's agents on %v while the channel is open", out)
	return out, nil
}

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
	if err := serverHandshake(c, s.Token, s.authTimeout); err != nil {
		if wire.CodeOf(err) != "" {
			_ = c.write(errorMessage(err))
		}
		return fmt.Errorf("handshake: %w", err)
	}
	if err := welcome(c, s.Limits, s.id, !s.featureless); err != nil {
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
