package traffic

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
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
	// Features are what the agent does beyond the protocol version
	// (wire.FeatureStartBarrier), in its welcome.
	Features []string `json:"features,omitempty"`
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

// maxLine bounds one control message of any type (wire.Sizes has each
// type's own, smaller bound).
const maxLine = wire.MaxMessage

// ctl is one end of a control connection.
type ctl struct {
	c  net.Conn
	r  *bufio.Reader
	wt time.Duration
	// limit is the longest message read: short until the handshake is done.
	limit int
	// gone, when set, ends every read at once: the door gave this
	// handshake's slot to a newer connection (door.go).
	gone func() bool
	// peer is the role of the other end: it sends only its own types
	// (wire.Sizes). Set by the handshake, or by the first message written.
	peer wire.Role
	// asked is when this end last asked for something that grows with
	// time (a test, a flow, samples); flows is that test's flows. They
	// bound the answer (wire.Size.Limit).
	asked time.Time
	flows int
}

func newCtl(c net.Conn) *ctl {
	return &ctl{c: c, r: bufio.NewReaderSize(c, 16<<10), wt: 10 * time.Second, limit: maxLine}
}

// errorMessage is the error message that tells the peer about err.
func errorMessage(err error) *Message {
	return &Message{Type: wire.MsgError, Code: wire.CodeOf(err), Error: err.Error()}
}

// askSlack is how long past what it waited a reader allows for: the
// samples and intervals of the second under way, and the peer's lead.
const askSlack = 10

// bounds is how many bytes and values a message of size z may have now.
func (c *ctl) bounds(z wire.Size) (bytes, values int) {
	seconds := 0
	if !c.asked.IsZero() {
		seconds = int(time.Since(c.asked)/time.Second) + askSlack
	}
	return z.Limit(seconds, c.flows)
}

// longest is the longest line the peer may send now: the largest bound of
// the types it sends.
func (c *ctl) longest() int {
	n := 0
	for _, z := range wire.Sizes {
		if z.From == "" || c.peer == "" || z.From == c.peer {
			b, _ := c.bounds(z)
			n = max(n, b)
		}
	}
	return min(n, c.limit)
}

// read reads one message, waiting at most d. It reads the line up to the
// longest the peer may send, takes its type, checks the line against that
// type's size (bytes, values, nesting), and only then decodes the fields
// the type carries (wire.Sizes).
func (c *ctl) read(d time.Duration) (*Message, error) {
	if err := c.c.SetReadDeadline(time.Now().Add(d)); err != nil {
		return nil, err
	}
	if c.gone != nil && c.gone() {
		// After the deadline above: the door's cut may have come before it.
		_ = c.c.SetReadDeadline(time.Unix(1, 0))
	}
	limit := c.longest()
	var line []byte
	for {
		part, isPrefix, err := c.r.ReadLine()
		if err != nil {
			return nil, err
		}
		if len(line)+len(part) > cap(line) {
			// Double: append's growth of large slices (1.25×) would
			// allocate five times a long line on the way.
			line = slices.Grow(line, max(len(part), cap(line)))
		}
		line = append(line, part...)
		if len(line) > limit {
			return nil, fmt.Errorf("%w: message longer than %d bytes", wire.ErrProtocol, limit)
		}
		if !isPrefix {
			break
		}
	}
	return c.decode(line)
}

// decode checks line against its type's size and decodes it.
func (c *ctl) decode(line []byte) (*Message, error) {
	values, depth := jsonShape(line)
	if depth > wire.MaxDepth {
		return nil, fmt.Errorf("%w: message nested %d deep, at most %d", wire.ErrProtocol, depth, wire.MaxDepth)
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return nil, fmt.Errorf("%w: %v", wire.ErrProtocol, err)
	}
	if head.Type == "" {
		return nil, fmt.Errorf("%w: message without a type", wire.ErrProtocol)
	}
	z, ok := wire.Sizes[head.Type]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: unknown message type %.40q", wire.ErrProtocol, head.Type)
	case z.From != "" && c.peer != "" && z.From != c.peer:
		return nil, fmt.Errorf("%w: unexpected %q from the %s", wire.ErrProtocol, head.Type, c.peer)
	}
	maxBytes, maxValues := c.bounds(z)
	if len(line) > maxBytes || values > maxValues {
		return nil, fmt.Errorf("%w: a %q message of %d bytes and %d objects or arrays, at most %d and %d",
			wire.ErrProtocol, head.Type, len(line), values, maxBytes, maxValues)
	}
	body := reflect.New(bodyType(head.Type))
	if err := json.Unmarshal(line, body.Interface()); err != nil {
		return nil, fmt.Errorf("%w: %v", wire.ErrProtocol, err)
	}
	m := &Message{Type: head.Type}
	mv := reflect.ValueOf(m).Elem()
	for i, f := range reflect.VisibleFields(body.Elem().Type()) {
		mv.FieldByName(f.Name).Set(body.Elem().Field(i))
	}
	c.note(m, false)
	return m, nil
}

// jsonShape counts the JSON objects and arrays in line and how deep they nest,
// without decoding or allocating.
func jsonShape(line []byte) (values, depth int) {
	d, inString, escaped := 0, false, false
	for _, b := range line {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			values++
			d++
			depth = max(depth, d)
		case b == '}' || b == ']':
			d--
		}
	}
	return values, depth
}

// bodies are, per message type, a struct of the Message fields it carries
// (wire.Sizes), made once.
var (
	bodiesMu sync.Mutex
	bodies   = map[string]reflect.Type{}
)

func bodyType(typ string) reflect.Type {
	bodiesMu.Lock()
	defer bodiesMu.Unlock()
	if t, ok := bodies[typ]; ok {
		return t
	}
	mt := reflect.TypeFor[Message]()
	var fields []reflect.StructField
	for _, name := range wire.Sizes[typ].Fields {
		for i := range mt.NumField() {
			if f := mt.Field(i); strings.Split(f.Tag.Get("json"), ",")[0] == name {
				f.Index, f.Offset = nil, 0
				fields = append(fields, f)
			}
		}
	}
	t := reflect.StructOf(fields)
	bodies[typ] = t
	return t
}

// note keeps, from a message this end reads or writes (wrote), what bounds
// the answers to come: when a test, flow or samples were asked for, and
// the test's flows; and, from the first message it writes, which end the
// peer is.
func (c *ctl) note(m *Message, wrote bool) {
	if wrote && c.peer == "" {
		switch wire.Sizes[m.Type].From {
		case wire.RoleClient:
			c.peer = wire.RoleServer
		case wire.RoleServer:
			c.peer = wire.RoleClient
		}
	}
	switch {
	case m.Spec != nil:
		c.asked, c.flows = time.Now(), m.Spec.Flows()
	case m.Accept != nil:
		c.asked, c.flows = time.Now(), m.Accept.Spec.Flows()
	case m.Flow != nil:
		c.asked, c.flows = time.Now(), m.Flow.Spec.Flows()*max(len(m.Flow.Targets), 1)
	case m.Type == wire.MsgSample:
		c.asked = time.Now()
	}
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
	c.note(m, true)
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
