package traffic

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"linerate/traffic/session"
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
	// what lets the agent run third-party flows at all (agent.go).
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
