// Package iperf3 speaks iperf3's own control protocol, both ways: Run
// drives an unmodified `iperf3 -s` as its client (bench --to iperf3://),
// Server answers unmodified `iperf3 -c` clients (serve --iperf3). Both
// turn what the two ends counted into an ordinary results.Result.
//
// The protocol, as esnet/iperf defines it (src/iperf.h, src/iperf_api.c,
// src/iperf_udp.c; written here from reading it and from watching iperf
// 3.12 talk to itself):
//
//   - The client opens the control connection and writes a 37-byte
//     cookie: 36 characters of [a-z2-7] and a NUL. Every data connection
//     starts with the same cookie (TCP); that is how the server tells a
//     test's streams from a new client.
//   - After that the server drives the test with one signed byte at a
//     time (State): PARAM_EXCHANGE, then the client sends its parameters
//     as JSON behind a 4-byte big-endian length; CREATE_STREAMS, then the
//     client opens the data streams (UDP: a 4-byte hello each, answered by
//     the server); TEST_START and TEST_RUNNING, then the data flows until
//     the client writes TEST_END; EXCHANGE_RESULTS, then the client sends
//     its per-stream results and the server its own (the same JSON
//     framing); DISPLAY_RESULTS, and the client ends with IPERF_DONE.
//   - A UDP datagram starts with the sender's time (seconds and
//     microseconds, 32 bits each) and the packet's number from 1 (32 bits,
//     or 64 with udp_counters_64bit), all big-endian. The receiver counts
//     a gap in the numbers as lost, a number that goes back as out of
//     order (taking one back from the lost), and the jitter of RFC 1889
//     (6.3.1, A.8) from the sender's times against its own.
//
// Every read has a deadline and every message a size limit: a peer that
// stops talking or sends garbage ends the test with an error that says
// which message was wrong.
package iperf3

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// DefaultPort is iperf3's control and data port.
const DefaultPort = 5201

// State is one byte of the control protocol: what the test does next.
type State int8

// The control states (src/iperf_api.h).
const (
	TestStart       State = 1
	TestRunning     State = 2
	TestEnd         State = 4
	ParamExchange   State = 9
	CreateStreams   State = 10
	ServerTerminate State = 11
	ClientTerminate State = 12
	ExchangeResults State = 13
	DisplayResults  State = 14
	IperfDone       State = 16
	AccessDenied    State = -1
	ServerError     State = -2
)

var stateNames = map[State]string{
	TestStart: "TEST_START", TestRunning: "TEST_RUNNING", TestEnd: "TEST_END",
	ParamExchange: "PARAM_EXCHANGE", CreateStreams: "CREATE_STREAMS",
	ServerTerminate: "SERVER_TERMINATE", ClientTerminate: "CLIENT_TERMINATE",
	ExchangeResults: "EXCHANGE_RESULTS", DisplayResults: "DISPLAY_RESULTS",
	IperfDone: "IPERF_DONE", AccessDenied: "ACCESS_DENIED", ServerError: "SERVER_ERROR",
}

func (s State) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("state %d", int8(s))
}

// CookieLen is the length of the cookie, its NUL included.
const CookieLen = 37

// The limits on a JSON message: iperf3 keeps parameters under 8 KiB
// (MAX_PARAMS_JSON_STRING); results carry one object per stream (at most
// 128 per direction) unless the client asked for the server's output,
// which linerate does not ask for and does not send.
const (
	maxParamsJSON  = 8 << 10
	maxResultsJSON = 256 << 10
)

// Errors a caller tests with errors.Is.
var (
	// ErrProtocol is a message that is not what the protocol allows at
	// that point: a wrong state, a bad length, JSON that does not parse.
	ErrProtocol = errors.New("iperf3 protocol error")
	// ErrDenied is ACCESS_DENIED: the server is busy with another test, or
	// does not take this client.
	ErrDenied = errors.New("iperf3: access denied (the server is busy with another test, or refuses this client)")
	// ErrTerminated is the other end ending the test early
	// (SERVER_TERMINATE, CLIENT_TERMINATE).
	ErrTerminated = errors.New("iperf3: the other end terminated the test")
)

// PeerError is SERVER_ERROR: the server's iperf3 error number and errno.
type PeerError struct {
	Code, Errno int32
}

func (e *PeerError) Error() string {
	msg := errorText[e.Code]
	if msg == "" {
		msg = "iperf3 error"
	}
	s := fmt.Sprintf("iperf3 server error %d: %s", e.Code, msg)
	if e.Errno != 0 {
		s += fmt.Sprintf(" (errno %d)", e.Errno)
	}
	return s
}

// iperf3's error numbers that linerate sends or often receives
// (src/iperf_api.h).
const (
	ieTotalRate  = 27  // IETOTALRATE
	ieDuration   = 37  // IEMAXSERVERTESTDURATIONEXCEEDED (iperf 3.17; 3.12 prints "int_errno=37")
	ieParams     = 114 // IERECVPARAMS
	ieServerTerm = 120 // IESERVERTERM
	ieAccess     = 121 // IEACCESSDENIED
	ieNoMessage  = 144 // IENOMSG: idle too long
	ieStreamID   = 208 // IESTREAMID
)

var errorText = map[int32]string{
	ieTotalRate:  "total required bandwidth is larger than the server's limit",
	ieParams:     "unable to receive parameters from client",
	ieStreamID:   "stream has an invalid id",
	ieNoMessage:  "no message received for too long",
	ieDuration:   "the test is longer than the server allows",
	ieServerTerm: "the server has terminated",
	ieAccess:     "the server is busy running a test",
}

// newCookie makes a cookie as iperf3 does: 36 characters of [a-z2-7] and
// a NUL.
func newCookie() [CookieLen]byte {
	const chars = "abcdefghijklmnopqrstuvwxyz234567"
	var c [CookieLen]byte
	_, _ = rand.Read(c[:])
	for i := range CookieLen - 1 {
		c[i] = chars[int(c[i])%len(chars)]
	}
	c[CookieLen-1] = 0
	return c
}

// ctrl is a control connection: every read and write has a deadline.
type ctrl struct {
	net.Conn
}

func (c ctrl) readFull(b []byte, wait time.Duration, what string) error {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	if _, err := io.ReadFull(c, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: %s: the connection closed after %d bytes", ErrProtocol, what, len(b))
		}
		return fmt.Errorf("read %s: %w", what, err)
	}
	return nil
}

func (c ctrl) write(b []byte, what string) error {
	_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := c.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	return nil
}

// writeTimeout bounds every write on a control connection.
const writeTimeout = 10 * time.Second

func (c ctrl) writeState(s State) error { return c.write([]byte{stateByte(s)}, s.String()) }

// readState reads the next state byte, waiting at most wait.
func (c ctrl) readState(wait time.Duration) (State, error) {
	var b [1]byte
	if err := c.readFull(b[:], wait, "the next control state"); err != nil {
		return 0, err
	}
	return State(int8(b[0])), nil
}

// writeJSON sends v as iperf3 does: its length as 4 bytes big-endian, then
// the JSON.
func (c ctrl) writeJSON(v any, what string) error {
	js, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(js)), uint32(len(js)))
	return c.write(append(b, js...), what)
}

// readJSON reads one length-prefixed JSON message of at most limit bytes.
func (c ctrl) readJSON(limit int, wait time.Duration, what string) ([]byte, error) {
	var h [4]byte
	if err := c.readFull(h[:], wait, what+" length"); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n == 0 || n > uint32(limit) {
		return nil, fmt.Errorf("%w: %s: length %d, want 1 to %d bytes", ErrProtocol, what, n, limit)
	}
	b := make([]byte, n)
	if err := c.readFull(b, wait, what); err != nil {
		return nil, err
	}
	return b, nil
}

// readPeerError reads what follows SERVER_ERROR: iperf3's error number
// and errno, each 4 bytes big-endian.
func (c ctrl) readPeerError() error {
	var b [8]byte
	if err := c.readFull(b[:], stepTimeout, "SERVER_ERROR's codes"); err != nil {
		return err
	}
	return &PeerError{Code: int32(binary.BigEndian.Uint32(b[:4])), Errno: int32(binary.BigEndian.Uint32(b[4:]))}
}

// writeError ends a test as an iperf3 server does on an error:
// SERVER_ERROR, the error number, errno 0.
func (c ctrl) writeError(code int32) error {
	b := []byte{stateByte(ServerError)}
	b = binary.BigEndian.AppendUint32(b, uint32(code))
	b = binary.BigEndian.AppendUint32(b, 0)
	return c.write(b, "SERVER_ERROR")
}

// unexpected is the error for state s arriving when want was due.
func unexpected(s State, want State, c ctrl) error {
	switch s {
	case AccessDenied:
		return ErrDenied
	case ServerError:
		return c.readPeerError()
	case ServerTerminate, ClientTerminate:
		return fmt.Errorf("%w (%s)", ErrTerminated, s)
	}
	return fmt.Errorf("%w: got %s, want %s", ErrProtocol, s, want)
}

// expect reads the next state and fails unless it is want.
func (c ctrl) expect(want State, wait time.Duration) error {
	s, err := c.readState(wait)
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", want, err)
	}
	if s != want {
		return unexpected(s, want, c)
	}
	return nil
}

// stateByte is s as it travels: a signed char.
func stateByte(s State) byte { return byte(s) }
