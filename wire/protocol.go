package wire

import "errors"

// ProtocolVersion is the control protocol's version (docs/bench.md). A
// server refuses a client whose version differs.
const ProtocolVersion = 2

// Message types on the control connection, in the order they usually go.
const (
	MsgHello     = "hello"     // client: version, nonce
	MsgChallenge = "challenge" // server: nonce, proof (auth.go)
	MsgAuth      = "auth"      // client: proof
	MsgWelcome   = "welcome"   // server: version, limits
	MsgTest      = "test"      // client: Spec
	MsgAccept    = "accept"    // server: Accept
	MsgStart     = "start"     // client: go
	MsgRunning   = "running"   // server: its clock started
	MsgInterval  = "interval"  // server, once a second: Interval
	MsgStop      = "stop"      // client: its senders are done (Sent)
	MsgResult    = "result"    // server: ServerResult
	MsgBye       = "bye"       // client: no more tests
	// A third-party flow (relay.go): a controller asks an agent to run a
	// test as the client against other agents.
	MsgFlow         = "flow"          // controller: Flow
	MsgFlowInterval = "flow-interval" // agent, once a second: IntervalStats
	MsgFlowResult   = "flow-result"   // agent: the flow's Result
	MsgFlowProgress = "flow-progress" // agent: a search trial's line
	MsgFlowReady    = "flow-ready"    // agent: the flow is set up and held at the start barrier
	MsgSample       = "sample"        // controller: sample your counters until stop
	MsgSamples      = "samples"       // agent: the samples
	MsgListen       = "listen"        // controller over ssh: listen for other agents too
	MsgListening    = "listening"     // agent: where it listens
	MsgError        = "error"         // either: Error, then the sender closes
)

// Features an agent lists in its welcome (Message.Features): what it
// does that an older linerate of the same protocol version does not. A
// controller asks for a feature only of an agent that lists it; an
// agent that does not is run the old way.
const (
	// FeatureStartBarrier: the agent sets a third-party flow up, says
	// flow-ready and holds it until the controller's start (Flow.Barrier).
	FeatureStartBarrier = "start-barrier"
	// FeatureMix: the agent sends a third-party flow's mix of frame sizes
	// (Flow.Mix, bench --size imix --from).
	FeatureMix = "mix"
)

// Limits are what a server caps: a longer or faster test is shortened or
// slowed to them (and the Accept says so).
type Limits struct {
	MaxDuration Seconds `json:"max_duration"`
	// MaxRate caps each direction's rate; zero is no cap.
	MaxRate Rate `json:"max_rate"`
}

// Accept is the server's answer to a test: the Spec it runs and where to
// send data.
type Accept struct {
	Spec Spec `json:"spec"`
	// Cookie is written first on every TCP data connection (16 hex digits).
	Cookie string `json:"cookie"`
	// UDPPorts receive the client's datagrams (forward, bidir).
	UDPPorts []uint16 `json:"udp_ports,omitempty"`
	// TCPPort accepts the client's data connections.
	TCPPort uint16 `json:"tcp_port,omitempty"`
	// ProbePort echoes latency probes.
	ProbePort uint16 `json:"probe_port,omitempty"`
	// Notes tell what the server changed (a capped duration or rate).
	Notes []string `json:"notes,omitempty"`
	// Punch is where a client that punches (Spec.Punch) sends its punches.
	Punch *Punch `json:"punch,omitempty"`
}

// Interval is what the server saw in one second of a test.
type Interval struct {
	// T is seconds since the server's start at which it read the counts
	// below (not when its tick was due).
	T float64 `json:"t"`
	// Received and Sent are cumulative since the start, warmup included.
	ReceivedPackets uint64 `json:"received_packets"`
	ReceivedBytes   uint64 `json:"received_bytes"`
	SentPackets     uint64 `json:"sent_packets"`
	SentBytes       uint64 `json:"sent_bytes"`
}

// Errors a peer reports in an error message, by its code. The client's
// errors wrap them: test with errors.Is.
var (
	// ErrWrongToken: the server wants another token (serve --token).
	ErrWrongToken = errors.New("wrong token")
	// ErrVersion: the ends speak different versions of the protocol.
	ErrVersion = errors.New("protocol version")
	// ErrBusy: the server has as many clients as it takes.
	ErrBusy = errors.New("busy")
	// ErrTestRefused: the server will not run the test asked for (a bad
	// spec, a payload over the path MTU); the connection stays open.
	ErrTestRefused = errors.New("test refused")
	// ErrProtocol marks a peer that broke the protocol.
	ErrProtocol = errors.New("protocol error")
)

// ErrorCodes are the codes of error messages on the wire (docs/bench.md).
var ErrorCodes = []struct {
	Code string
	Err  error
}{
	{"wrong-token", ErrWrongToken},
	{"version", ErrVersion},
	{"busy", ErrBusy},
	{"test-refused", ErrTestRefused},
	{"slow-down", ErrSlowDown},
	{"flow-refused", ErrFlowRefused},
	{"protocol", ErrProtocol},
}

// CodeOf is the code of the first error of errorCodes that err wraps, or
// "".
func CodeOf(err error) string {
	for _, c := range ErrorCodes {
		if errors.Is(err, c.Err) {
			return c.Code
		}
	}
	return ""
}

// PeerError is an error the other end reported (a wrong token, a refused
// test, a busy server). It wraps the error of its code: errors.Is(err,
// ErrWrongToken) tells a wrong token whatever the message says.
type PeerError struct {
	// Code is one of errorCodes, or empty (a peer that sent none).
	Code string
	Msg  string
}

func (e *PeerError) Error() string { return e.Msg }

// Unwrap is the error of the code, or nil.
func (e *PeerError) Unwrap() error {
	for _, c := range ErrorCodes {
		if c.Code == e.Code {
			return c.Err
		}
	}
	return nil
}

// ErrFlowRefused: an agent will not run a third-party flow (no secret to
// trust its controller by, a target outside its --allow, a target it
// cannot resolve).
var ErrFlowRefused = errors.New("flow refused")
