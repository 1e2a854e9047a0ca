package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"linerate/internal/usage"
)

// RR is a transaction test (bench rr): each stream sends a request of
// Request bytes and waits for the response of Response bytes before the
// next, as netperf's TCP_RR and UDP_RR do; with Connect each transaction
// opens a connection of its own (TCP_CRR). It travels in Spec.RR.
type RR struct {
	Request  int `json:"request"`
	Response int `json:"response"`
	// Connect opens a new TCP connection per transaction: connect, request,
	// response, close (the server closes first, so the client keeps no
	// TIME_WAIT and its ports last).
	Connect bool `json:"connect,omitempty"`
	// Timeout bounds one transaction (connect included): one that takes
	// longer counts as lost, and its stream moves on.
	Timeout Seconds `json:"timeout"`
}

// MaxRRSize is the largest request or response: one IPv4 UDP datagram.
const MaxRRSize = maxPayload

// ParseRRSize reads the sizes of a transaction as REQ[,RESP] (bench rr's
// --size, a plan's rr: size:): one number is both.
func ParseRRSize(s string) (req, resp int, err error) {
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return 0, 0, fmt.Errorf("%q: want REQ or REQ,RESP", s)
	}
	var n [2]int
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 1 || v > MaxRRSize {
			return 0, 0, fmt.Errorf("%q: %q is not a size of 1 to %d bytes", s, p, MaxRRSize)
		}
		n[i] = v
	}
	if len(parts) == 1 {
		n[1] = n[0]
	}
	return n[0], n[1], nil
}

// Transaction timeouts a test may ask for, and the one it gets when it
// names none (bench rr's --timeout, a plan's rr: timeout): past a lost
// SYN's first retransmission (1 s).
const (
	minRRTimeout     = time.Millisecond
	maxRRTimeout     = time.Minute
	DefaultRRTimeout = 2 * time.Second
)

// ErrNoRR: the server answered a transaction test without its rr part:
// it predates bench rr.
var ErrNoRR = errors.New("the server does not run transaction tests (bench rr): upgrade its linerate")

// check reports the first thing wrong with an rr test of proto.
func (r *RR) check(s *Spec) error {
	switch {
	case r.Request < 1 || r.Request > MaxRRSize:
		return usage.Field("request", "%d bytes: want 1 to %d", r.Request, MaxRRSize)
	case r.Response < 1 || r.Response > MaxRRSize:
		return usage.Field("response", "%d bytes: want 1 to %d", r.Response, MaxRRSize)
	case r.Timeout.D() < minRRTimeout || r.Timeout.D() > maxRRTimeout:
		return usage.Field("timeout", "%s: want %s to %s", r.Timeout.D(), minRRTimeout, maxRRTimeout)
	case r.Connect && s.Proto != TCP:
		return usage.Field("connect", "a connection per transaction is for tcp, not udp")
	case s.Direction != Forward:
		return usage.Field("direction", "%s: a transaction goes both ways already", s.Direction)
	case s.Warmup != 0:
		return usage.Field("warmup", "%s: a transaction test counts from its start", s.Warmup.D())
	case s.ProbeInterval != 0:
		return usage.Field("probe_interval", "a transaction test measures its own round trips")
	case s.Ports != 1:
		return usage.Field("ports", "%d: a transaction test uses one server port", s.Ports)
	case !s.Rate.Unlimited():
		return usage.Field("rate", "%s: a transaction test runs its streams back to back", s.Rate)
	}
	return nil
}
