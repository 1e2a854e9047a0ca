package traffic

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"linerate/box"
)

// ProtocolVersion is the control protocol's version (docs/bench.md). A
// server refuses a client whose version differs.
const ProtocolVersion = 2

// Message types on the control connection, in the order they usually go.
const (
	msgHello     = "hello"     // client: version, nonce
	msgChallenge = "challenge" // server: nonce, proof (auth.go)
	msgAuth      = "auth"      // client: proof
	msgWelcome   = "welcome"   // server: version, limits
	msgTest      = "test"      // client: Spec
	msgAccept    = "accept"    // server: Accept
	msgStart     = "start"     // client: go
	msgRunning   = "running"   // server: its clock started
	msgInterval  = "interval"  // server, once a second: Interval
	msgStop      = "stop"      // client: its senders are done (Sent)
	msgResult    = "result"    // server: ServerResult
	msgBye       = "bye"       // client: no more tests
	// A third-party flow (relay.go): a controller asks an agent to run a
	// test as the client against other agents.
	msgFlow         = "flow"          // controller: Flow
	msgFlowInterval = "flow-interval" // agent, once a second: IntervalStats
	msgFlowResult   = "flow-result"   // agent: the flow's Result
	msgFlowProgress = "flow-progress" // agent: a search trial's line
	msgSample       = "sample"        // controller: sample your counters until stop
	msgSamples      = "samples"       // agent: the samples
	msgListen       = "listen"        // controller over ssh: listen for other agents too
	msgListening    = "listening"     // agent: where it listens
	msgError        = "error"         // either: Error, then the sender closes
)

// Message is one line of the control protocol: a JSON object ending in a
// newline. Type says which other fields are set.
type Message struct {
	Type     string `json:"type"`
	Version  int    `json:"version,omitempty"`
	Linerate string `json:"linerate,omitempty"`
	// Nonce, Proof and Open belong to the handshake (auth.go); the
	// secret itself never crosses the wire.
	Nonce string `json:"nonce,omitempty"`
	Proof string `json:"proof,omitempty"`
	Open  bool   `json:"open,omitempty"`
	// ServerID is random per serve process: targets with the same one
	// share a machine (its CPU is counted once).
	ServerID string `json:"server_id,omitempty"`
	// Code says what an error message means, for programs (errorCodes);
	// Error says it for people.
	Code     string        `json:"code,omitempty"`
	Error    string        `json:"error,omitempty"`
	Limits   *Limits       `json:"limits,omitempty"`
	Spec     *Spec         `json:"spec,omitempty"`
	Accept   *Accept       `json:"accept,omitempty"`
	Sent     []Count       `json:"sent,omitempty"`
	Interval *Interval     `json:"interval,omitempty"`
	Result   *ServerResult `json:"result,omitempty"`
	// Flow, FlowInterval and FlowResult belong to third-party flows.
	Flow         *Flow          `json:"flow,omitempty"`
	FlowInterval *IntervalStats `json:"flow_interval,omitempty"`
	FlowResult   *Result        `json:"flow_result,omitempty"`
	Progress     string         `json:"progress,omitempty"`
	// Samples answer a sample request.
	Samples []box.Rates `json:"samples,omitempty"`
	// Listen and Listening belong to an agent started over ssh that also
	// listens for the test's other agents.
	Listen    *Listen  `json:"listen,omitempty"`
	Listening []string `json:"listening,omitempty"`
}

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
	// T is seconds since the server's start.
	T float64 `json:"t"`
	// Received and Sent are cumulative since the start, warmup included.
	ReceivedPackets uint64 `json:"received_packets"`
	ReceivedBytes   uint64 `json:"received_bytes"`
	SentPackets     uint64 `json:"sent_packets"`
	SentBytes       uint64 `json:"sent_bytes"`
}

// ServerResult is what the server counted in a test.
type ServerResult struct {
	// Received holds per-stream counts of what the client sent (forward,
	// bidir); Sent what the server sent (reverse, bidir).
	Received []Count     `json:"received,omitempty"`
	Sent     []Count     `json:"sent,omitempty"`
	TCP      []TCPStat   `json:"tcp,omitempty"`
	Threads  []ThreadCPU `json:"threads,omitempty"`
	// Seconds is the measured window as the server's clock saw it.
	Seconds float64 `json:"seconds"`
	// Foreign is test datagrams that came from an address other than the
	// client's: not counted.
	Foreign uint64 `json:"foreign,omitempty"`
	// Samples are the server's counters once a second over the measured
	// window; SampleError says why there are none.
	Samples []box.Rates `json:"samples,omitempty"`
	// XDP is what the XDP counter saw on the receiving interface (with
	// Spec.XDP).
	XDP         *XDPStat `json:"xdp,omitempty"`
	SampleError string   `json:"sample_error,omitempty"`
	Errors      []string `json:"errors,omitempty"`
	// Drops is the server's drop counters over the measured window (when
	// the server reads them: Server.Drops).
	Drops *EndDrops `json:"drops,omitempty"`
	// Machine is the server's kernel's boot id (Server.Machine): servers
	// with the same one share CPUs, counted once.
	Machine string `json:"machine,omitempty"`
}

// XDPStat is what an XDP counter on the receiving interface counted in the
// measured window: packets that reached the interface, before any socket.
type XDPStat struct {
	Interface string  `json:"interface"`
	Mode      string  `json:"mode,omitempty"` // "native" or "generic"
	Packets   uint64  `json:"packets"`
	Bytes     uint64  `json:"bytes"`
	PPS       float64 `json:"pps"`
	Error     string  `json:"error,omitempty"`
}

// maxLine bounds one control message (a result with samples of a big box
// is a few hundred KB).
const maxLine = 64 << 20

// ctl is one end of a control connection.
type ctl struct {
	c  net.Conn
	r  *bufio.Reader
	wt time.Duration
	// limit is the longest message read: short until the handshake is done.
	limit int
}

func newCtl(c net.Conn) *ctl {
	return &ctl{c: c, r: bufio.NewReaderSize(c, 16<<10), wt: 10 * time.Second, limit: maxLine}
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
	// errProtocol marks a peer that broke the protocol.
	errProtocol = errors.New("protocol error")
)

// errorCodes are the codes of error messages on the wire (docs/bench.md).
var errorCodes = []struct {
	code string
	err  error
}{
	{"wrong-token", ErrWrongToken},
	{"version", ErrVersion},
	{"busy", ErrBusy},
	{"test-refused", ErrTestRefused},
	{"slow-down", ErrSlowDown},
	{"flow-refused", ErrFlowRefused},
	{"protocol", errProtocol},
}

// codeOf is the code of the first error of errorCodes that err wraps, or
// "".
func codeOf(err error) string {
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return ""
}

// errorMessage is the error message that tells the peer about err.
func errorMessage(err error) *Message {
	return &Message{Type: msgError, Code: codeOf(err), Error: err.Error()}
}

// read reads one message, waiting at most d.
func (c *ctl) read(d time.Duration) (*Message, error) {
	if err := c.c.SetReadDeadline(time.Now().Add(d)); err != nil {
		return nil, err
	}
	var line []byte
	for {
		part, isPrefix, err := c.r.ReadLine()
		if err != nil {
			return nil, err
		}
		line = append(line, part...)
		if len(line) > c.limit {
			return nil, fmt.Errorf("%w: message longer than %d bytes", errProtocol, c.limit)
		}
		if !isPrefix {
			break
		}
	}
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", errProtocol, err)
	}
	if m.Type == "" {
		return nil, fmt.Errorf("%w: message without a type", errProtocol)
	}
	return &m, nil
}

// expect reads one message of type want; an error message from the peer
// becomes an error.
func (c *ctl) expect(d time.Duration, want string) (*Message, error) {
	m, err := c.read(d)
	if err != nil {
		return nil, err
	}
	if m.Type == msgError {
		return nil, peerError(m)
	}
	if m.Type != want {
		return nil, fmt.Errorf("%w: got %q, want %q", errProtocol, m.Type, want)
	}
	return m, nil
}

func (c *ctl) write(m *Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := c.c.SetWriteDeadline(time.Now().Add(c.wt)); err != nil {
		return err
	}
	_, err = c.c.Write(b)
	return err
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
	for _, c := range errorCodes {
		if c.code == e.Code {
			return c.err
		}
	}
	return nil
}

func peerError(m *Message) *PeerError { return &PeerError{Code: m.Code, Msg: m.Error} }
