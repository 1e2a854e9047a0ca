package traffic

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"linerate/box"
	"linerate/results"
	"linerate/wire"
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
	Code     string                `json:"code,omitempty"`
	Error    string                `json:"error,omitempty"`
	Limits   *wire.Limits          `json:"limits,omitempty"`
	Spec     *wire.Spec            `json:"spec,omitempty"`
	Accept   *wire.Accept          `json:"accept,omitempty"`
	Sent     []results.Count       `json:"sent,omitempty"`
	Interval *wire.Interval        `json:"interval,omitempty"`
	Result   *results.ServerResult `json:"result,omitempty"`
	// Flow, FlowInterval and FlowResult belong to third-party flows.
	Flow         *Flow                  `json:"flow,omitempty"`
	FlowInterval *results.IntervalStats `json:"flow_interval,omitempty"`
	FlowResult   *results.Result        `json:"flow_result,omitempty"`
	Progress     string                 `json:"progress,omitempty"`
	// Samples answer a sample request.
	Samples []box.Rates `json:"samples,omitempty"`
	// Listen and Listening belong to an agent started over ssh that also
	// listens for the test's other agents.
	Listen    *Listen  `json:"listen,omitempty"`
	Listening []string `json:"listening,omitempty"`
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
	// gone, when set, ends every read at once: the door gave this
	// handshake's slot to a newer connection (door.go).
	gone *atomic.Bool
}

func newCtl(c net.Conn) *ctl {
	return &ctl{c: c, r: bufio.NewReaderSize(c, 16<<10), wt: 10 * time.Second, limit: maxLine}
}

// errorMessage is the error message that tells the peer about err.
func errorMessage(err error) *Message {
	return &Message{Type: wire.MsgError, Code: wire.CodeOf(err), Error: err.Error()}
}

// read reads one message, waiting at most d.
func (c *ctl) read(d time.Duration) (*Message, error) {
	if err := c.c.SetReadDeadline(time.Now().Add(d)); err != nil {
		return nil, err
	}
	if c.gone != nil && c.gone.Load() {
		// After the deadline above: the door's cut may have come before it.
		_ = c.c.SetReadDeadline(time.Unix(1, 0))
	}
	var line []byte
	for {
		part, isPrefix, err := c.r.ReadLine()
		if err != nil {
			return nil, err
		}
		line = append(line, part...)
		if len(line) > c.limit {
			return nil, fmt.Errorf("%w: message longer than %d bytes", wire.ErrProtocol, c.limit)
		}
		if !isPrefix {
			break
		}
	}
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", wire.ErrProtocol, err)
	}
	if m.Type == "" {
		return nil, fmt.Errorf("%w: message without a type", wire.ErrProtocol)
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
	if m.Type == wire.MsgError {
		return nil, peerError(m)
	}
	if m.Type != want {
		return nil, fmt.Errorf("%w: got %q, want %q", wire.ErrProtocol, m.Type, want)
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

func peerError(m *Message) *wire.PeerError { return &wire.PeerError{Code: m.Code, Msg: m.Error} }
