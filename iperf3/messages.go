package iperf3

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
)

// Params is the client's parameters message (send_parameters and
// get_parameters in src/iperf_api.c). iperf3 reads a flag by the key's
// presence, so a flag that is off must be left out, never sent false.
type Params struct {
	TCP      bool    `json:"tcp,omitempty"`
	UDP      bool    `json:"udp,omitempty"`
	SCTP     bool    `json:"sctp,omitempty"`
	Omit     float64 `json:"omit"`
	Time     float64 `json:"time"`
	Num      float64 `json:"num"`
	Blocks   float64 `json:"blockcount"`
	MSS      float64 `json:"MSS,omitempty"`
	NoDelay  bool    `json:"nodelay,omitempty"`
	Parallel float64 `json:"parallel"`
	Reverse  bool    `json:"reverse,omitempty"`
	Bidir    bool    `json:"bidirectional,omitempty"`
	Window   float64 `json:"window,omitempty"`
	// Len is the UDP datagram's or TCP write's size in bytes.
	Len float64 `json:"len,omitempty"`
	// Bandwidth is bits per second per stream, of UDP payload or TCP
	// goodput (0: as fast as possible).
	Bandwidth float64 `json:"bandwidth,omitempty"`
	FQRate    float64 `json:"fqrate,omitempty"`
	Pacing    float64 `json:"pacing_timer,omitempty"`
	Burst     float64 `json:"burst,omitempty"`
	TOS       float64 `json:"TOS,omitempty"`
	FlowLabel float64 `json:"flowlabel,omitempty"`
	Title     string  `json:"title,omitempty"`
	ExtraData string  `json:"extra_data,omitempty"`
	// Congestion is the congestion control asked for; CongestionUsed the
	// one the client's sockets got.
	Congestion       string  `json:"congestion,omitempty"`
	CongestionUsed   string  `json:"congestion_used,omitempty"`
	GetServerOutput  float64 `json:"get_server_output,omitempty"`
	UDPCounters64    float64 `json:"udp_counters_64bit,omitempty"`
	RepeatingPayload float64 `json:"repeating_payload,omitempty"`
	ZeroCopy         float64 `json:"zerocopy,omitempty"`
	DontFragment     float64 `json:"dont_fragment,omitempty"`
	AuthToken        string  `json:"authtoken,omitempty"`
	ClientVersion    string  `json:"client_version,omitempty"`
}

// The most a test may ask of this side, whatever the peer says: iperf3's
// own limits (MAX_STREAMS, MAX_UDP_BLOCKSIZE, MAX_TCP_BUFFER, a day).
const (
	maxStreams = 128
	maxLen     = 1 << 20
	maxTime    = 86400
)

// parseParams decodes and checks a parameters message.
func parseParams(b []byte) (*Params, error) {
	var p Params
	if err := strictJSON(b, &p); err != nil {
		return nil, fmt.Errorf("%w: parameters: %v", ErrProtocol, err)
	}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("%w: parameters: %v", ErrProtocol, err)
	}
	return &p, nil
}

func (p *Params) check() error {
	switch {
	case p.TCP == p.UDP || p.SCTP:
		return fmt.Errorf("want exactly one of tcp and udp")
	case !whole(p.Parallel, 1, maxStreams):
		return fmt.Errorf("parallel %v: want 1 to %d", p.Parallel, maxStreams)
	case !whole(p.Time, 0, maxTime) || !whole(p.Omit, 0, maxTime):
		return fmt.Errorf("time %v, omit %v: want 0 to %d seconds", p.Time, p.Omit, maxTime)
	case p.Time == 0:
		return fmt.Errorf("time 0: a test by bytes (-n) or blocks (-k) is not supported here; give -t")
	case p.Num != 0 || p.Blocks != 0:
		return fmt.Errorf("num %v, blockcount %v: a test by bytes (-n) or blocks (-k) is not supported here; give -t", p.Num, p.Blocks)
	case !whole(p.Len, 0, maxLen):
		return fmt.Errorf("len %v: want 0 to %d", p.Len, maxLen)
	case p.UDP && p.Len != 0 && p.Len < 16:
		return fmt.Errorf("len %v: a UDP datagram carries at least 16 bytes of header", p.Len)
	case !(p.Bandwidth >= 0 && p.Bandwidth < 1e13):
		return fmt.Errorf("bandwidth %v bits/s: out of range", p.Bandwidth)
	case p.Reverse && p.Bidir:
		return fmt.Errorf("reverse and bidirectional both set")
	}
	return nil
}

// whole says v is a whole number from lo to hi.
func whole(v float64, lo, hi int) bool {
	return v == math.Trunc(v) && v >= float64(lo) && v <= float64(hi)
}

// strictJSON decodes one JSON object and nothing after it.
func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("data after the JSON object")
	}
	return nil
}

// Results is one end's results message (send_results, get_results).
type Results struct {
	CPUTotal  float64 `json:"cpu_util_total"`
	CPUUser   float64 `json:"cpu_util_user"`
	CPUSystem float64 `json:"cpu_util_system"`
	// SenderHasRetransmits is 1 when the end sent TCP and read its
	// retransmits, 0 when it could not, -1 when it only received.
	SenderHasRetransmits float64        `json:"sender_has_retransmits"`
	CongestionUsed       string         `json:"congestion_used,omitempty"`
	Streams              []StreamReport `json:"streams"`
	// ServerOutputText and ServerOutputJSON come only when the client
	// asked for the server's output (--get-server-output).
	ServerOutputText string          `json:"server_output_text,omitempty"`
	ServerOutputJSON json.RawMessage `json:"server_output_json,omitempty"`
}

// StreamReport is one stream in a results message: a sender's bytes and
// packets sent, or a receiver's bytes received, highest packet number,
// lost packets (errors) and jitter in seconds.
type StreamReport struct {
	ID          int     `json:"id"`
	Bytes       float64 `json:"bytes"`
	Retransmits float64 `json:"retransmits"`
	Jitter      float64 `json:"jitter"`
	Errors      float64 `json:"errors"`
	Packets     float64 `json:"packets"`
	StartTime   float64 `json:"start_time"`
	EndTime     float64 `json:"end_time"`
}

// parseResults decodes and checks a results message with every field
// iperf3's get_results requires, for streams numbered as in ids.
func parseResults(b []byte, ids []int) (*Results, error) {
	var raw struct {
		CPUTotal, CPUUser, CPUSystem, SenderHasRetransmits *float64
		Streams                                            []map[string]json.RawMessage
	}
	var r Results
	err := strictJSON(b, &r)
	if err == nil {
		err = json.Unmarshal(b, &struct {
			CPUTotal  **float64                     `json:"cpu_util_total"`
			CPUUser   **float64                     `json:"cpu_util_user"`
			CPUSystem **float64                     `json:"cpu_util_system"`
			Retrans   **float64                     `json:"sender_has_retransmits"`
			Streams   *[]map[string]json.RawMessage `json:"streams"`
		}{&raw.CPUTotal, &raw.CPUUser, &raw.CPUSystem, &raw.SenderHasRetransmits, &raw.Streams})
	}
	if err == nil && (raw.CPUTotal == nil || raw.CPUUser == nil || raw.CPUSystem == nil || raw.SenderHasRetransmits == nil || raw.Streams == nil) {
		err = fmt.Errorf("missing cpu_util_total, cpu_util_user, cpu_util_system, sender_has_retransmits or streams")
	}
	for i := 0; err == nil && i < len(raw.Streams); i++ {
		for _, k := range []string{"id", "bytes", "retransmits", "jitter", "errors", "packets"} {
			if _, ok := raw.Streams[i][k]; !ok {
				err = fmt.Errorf("stream %d: no %q", i, k)
				break
			}
		}
	}
	if err == nil {
		err = r.check(ids)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: results: %v", ErrProtocol, err)
	}
	return &r, nil
}

func (r *Results) check(ids []int) error {
	if len(r.Streams) != len(ids) {
		return fmt.Errorf("%d streams, want %d", len(r.Streams), len(ids))
	}
	seen := map[int]bool{}
	for _, id := range ids {
		seen[id] = false
	}
	for _, s := range r.Streams {
		done, ok := seen[s.ID]
		switch {
		case !ok || done:
			return fmt.Errorf("stream id %d: not one of this test's, or twice", s.ID)
		case !(s.Bytes >= 0 && s.Bytes < 1<<62) || !(s.Packets >= 0 && s.Packets < 1<<62) || !(s.Errors >= -1 && s.Errors < 1<<62):
			return fmt.Errorf("stream %d: bytes %v, packets %v, errors %v out of range", s.ID, s.Bytes, s.Packets, s.Errors)
		case !(s.Jitter >= 0 && s.Jitter < 3600):
			return fmt.Errorf("stream %d: jitter %v s out of range", s.ID, s.Jitter)
		}
		seen[s.ID] = true
	}
	return nil
}

// byID finds stream id in r.
func (r *Results) byID(id int) *StreamReport {
	for i := range r.Streams {
		if r.Streams[i].ID == id {
			return &r.Streams[i]
		}
	}
	return nil
}

// streamID is the id iperf3 gives the i-th stream it creates (from 0):
// 1, then 3, 4, 5, ... (iperf_add_stream starts counting the second at 3,
// and every version since keeps it so that they agree).
func streamID(i int) int {
	if i == 0 {
		return 1
	}
	return i + 2
}

// The UDP hello: the client's datagram to the server's port and the
// server's answer, 4 bytes each. iperf 3.12 writes the integers
// 0x36373839 and 0x39383736 in the host's byte order (on a little-endian
// host, the text "9876" and "6789"); versions before it wrote 123456789
// and 987654321, which servers and clients still take.
var (
	udpHello       = [4]byte{'9', '8', '7', '6'}
	udpReply       = [4]byte{'6', '7', '8', '9'}
	legacyUDPHello = le32(123456789)
	legacyUDPReply = le32(987654321)
)

func le32(v uint32) (b [4]byte) {
	binary.LittleEndian.PutUint32(b[:], v)
	return b
}

// isHello says b is a client's UDP hello; legacy, that it is the old one.
func isHello(b []byte) (ok, legacy bool) {
	if len(b) != 4 {
		return false, false
	}
	switch [4]byte(b) {
	case udpHello, udpReply: // 3.12 on a big-endian host writes the integer the other way
		return true, false
	case legacyUDPHello, be32(123456789):
		return true, true
	}
	return false, false
}

// isReply says b is the server's UDP answer.
func isReply(b []byte) bool {
	if len(b) != 4 {
		return false
	}
	switch [4]byte(b) {
	case udpReply, legacyUDPReply, be32(987654321), udpHello:
		return true
	}
	return false
}

func be32(v uint32) (b [4]byte) {
	binary.BigEndian.PutUint32(b[:], v)
	return b
}

// headerLen is the UDP datagram header's length: 12 bytes with 32-bit
// packet numbers, 16 with 64-bit ones.
func headerLen(wide bool) int {
	if wide {
		return 16
	}
	return 12
}

// putHeader writes a datagram's header: the send time and packet number.
func putHeader(b []byte, sec, usec uint32, n uint64, wide bool) {
	binary.BigEndian.PutUint32(b, sec)
	binary.BigEndian.PutUint32(b[4:], usec)
	if wide {
		binary.BigEndian.PutUint64(b[8:], n)
	} else {
		binary.BigEndian.PutUint32(b[8:], uint32(n))
	}
}

// parseHeader reads a datagram's header; ok is false when b is too short
// to hold one.
func parseHeader(b []byte, wide bool) (sec, usec uint32, n uint64, ok bool) {
	if len(b) < headerLen(wide) {
		return 0, 0, 0, false
	}
	sec, usec = binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
	if wide {
		n = binary.BigEndian.Uint64(b[8:])
	} else {
		n = uint64(binary.BigEndian.Uint32(b[8:]))
	}
	return sec, usec, n, true
}
