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
	"runtime/debug"
	"sync"
	"time"

	"linerate/internal/admit"
	"linerate/traffic/session"
	"linerate/traffic/sock"
	"linerate/wire"
)

// Server is the far end of a test (`linerate serve`). It accepts control
// connections, runs the tests they ask for, and reports what it counted.
// It only ever sends to the address of a control connection's peer.
type Server struct {
	// Token, when set, is the secret every client must prove it knows
	// (auth.go); it never crosses the wire.
	Token string
	// Limits cap what a test may ask for.
	Limits wire.Limits
	// MaxConns bounds the authenticated control connections open at once;
	// more are refused with a reason (0: 8). Connections still
	// authenticating have slots of their own (door.go).
	MaxConns int
	// CPUs pins the server's sender and receiver threads, round robin.
	CPUs []int
	// Sampling records the server's counters during each test (nil: none).
	Sampling session.Sampling
	// Setup runs fn where the server's sockets must be made (inside a
	// network namespace, in tests); nil runs it directly.
	Setup func(fn func() error) error
	// Drops reads the drop counters of the server's namespace, snapshotted
	// around each test's measured window for the drop ledger (nil: none).
	Drops session.DropCounters
	// Machine identifies the server's kernel (its boot id): the client
	// counts the CPU of servers on one machine once.
	Machine string
	// Logf, when set, receives one line per event (a test, a refused
	// client).
	Logf func(format string, args ...any)
	// PeerTimeout is how long a client may stay silent (not acknowledging
	// the server's messages, not answering keepalive probes) before its
	// control connection fails and its test is torn down: a client whose
	// host or network vanished without closing (0: 10s).
	PeerTimeout time.Duration
	// Allow, when set, are the only addresses this agent sends a
	// third-party flow to (serve --allow); without a Token it is also
	// what lets the agent run third-party flows at all (relay.go).
	Allow []netip.Prefix

	id     string
	door   *door
	dropMu sync.Mutex // the tests' turns at Drops
	// authTimeout bounds a handshake (0: authTimeout); tests shorten it.
	authTimeout time.Duration
	// featureless: the welcome lists no features, as an agent's from
	// before them (tests).
	featureless bool
	mu          sync.Mutex
	conns       map[net.Conn]struct{} // every open control connection
	clients     int                   // of them, those past the handshake
	tests       int                   // tests running
	wg          sync.WaitGroup
}

// Timeouts of the control protocol.
const (
	helloTimeout = 10 * time.Second // from connect to hello
	idleTimeout  = 5 * time.Minute  // between tests on one connection
	startTimeout = 30 * time.Second // from accept to start
	stopGrace    = 30 * time.Second // past a test's end for its stop
)

func (s *Server) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

func (s *Server) setup(fn func() error) error {
	if s.Setup == nil {
		return fn()
	}
	return s.Setup(fn)
}

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
	err := s.serverHandshake(c)
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
	if err := s.welcome(c); err != nil {
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

// test runs one test the client asked for; a test the server will not run
// is an ErrTestRefused.
func (s *Server) test(c *ctl, sp *wire.Spec, local, peer netip.Addr) error {
	if sp == nil {
		return fmt.Errorf("%w: test without a spec", wire.ErrProtocol)
	}
	s.mu.Lock()
	s.tests++
	s.mu.Unlock()
	defer s.testEnded()
	t, err := s.newTest(sp, local, peer)
	if err != nil {
		return fmt.Errorf("%w: %w", wire.ErrTestRefused, err)
	}
	defer t.close()
	return t.run(c)
}

// testEnded counts a test out; the last one running returns the memory
// its buffers took to the system at once: the runtime would otherwise
// keep it for minutes, and an agent sits idle between tests.
func (s *Server) testEnded() {
	s.mu.Lock()
	s.tests--
	last := s.tests == 0
	s.mu.Unlock()
	if last {
		debug.FreeOSMemory()
	}
}

// capSpec applies the server's limits, saying what it changed.
func (s *Server) capSpec(sp *wire.Spec) (notes []string) {
	if d := s.Limits.MaxDuration; d > 0 && sp.Warmup+sp.Duration > d {
		total := sp.Warmup + sp.Duration
		if sp.Warmup >= d {
			sp.Warmup = 0
		}
		sp.Duration = d - sp.Warmup
		notes = append(notes, fmt.Sprintf("server caps a test at %s: %s asked", d.D(), total.D()))
	}
	if r := s.Limits.MaxRate; !r.Unlimited() && sp.RR == nil {
		// A transaction test has one transaction in flight per stream:
		// it paces itself.
		frame := sp.Payload + wire.UDPOverhead(true)
		if sp.Proto == wire.TCP {
			frame = max(sp.Payload, 1)
		}
		capPPS := r.PacketsPerSecond(frame)
		asked := sp.Rate.PacketsPerSecond(frame)
		if sp.Rate.Unlimited() || asked > capPPS {
			notes = append(notes, fmt.Sprintf("server caps the rate at %s: %s asked", r, sp.Rate))
			sp.Rate = r
		}
	}
	return notes
}
