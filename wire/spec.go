package wire

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"linerate/internal/usage"
)

// DefaultPort is the TCP port `linerate serve` listens on for control
// connections when --listen names none. It is linerate's own (iperf3 uses
// 5201).
const DefaultPort = 7557

// Direction is which way a test's traffic goes, seen from the client. Its
// JSON form is the string of its constant.
type Direction string

// Directions of a test.
const (
	Forward Direction = "forward" // the client sends, the server receives
	Reverse Direction = "reverse" // the server sends, the client receives
	Bidir   Direction = "bidir"   // both at once
)

func (d Direction) String() string { return string(d) }

// Proto is a test's transport. Its JSON form is the string of its constant.
type Proto string

// The transports a test runs over.
const (
	UDP Proto = "udp"
	TCP Proto = "tcp"
)

func (p Proto) String() string { return string(p) }

// ParseProto reads "udp" or "tcp".
func ParseProto(s string) (Proto, error) {
	switch p := Proto(s); p {
	case UDP, TCP:
		return p, nil
	}
	return "", fmt.Errorf("proto %q: want udp or tcp", s)
}

// ParseDirection reads "forward", "reverse" or "bidir".
func ParseDirection(s string) (Direction, error) {
	switch d := Direction(s); d {
	case Forward, Reverse, Bidir:
		return d, nil
	}
	return "", fmt.Errorf("direction %q: want forward, reverse or bidir", s)
}

// Seconds is a duration that reads and writes as seconds in JSON.
type Seconds time.Duration

// D is the duration.
func (s Seconds) D() time.Duration { return time.Duration(s) }

func (s Seconds) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(time.Duration(s).Seconds(), 'f', -1, 64)), nil
}

func (s *Seconds) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("seconds: %w", err)
	}
	if f < 0 || f > 1e6 {
		return fmt.Errorf("seconds %v out of range", f)
	}
	*s = Seconds(f * float64(time.Second))
	return nil
}

// Spec is one test as the client asks for it; the server answers with the
// Spec it will run (capped by its limits). It travels on the control
// connection and is repeated in the Result.
type Spec struct {
	Proto     Proto     `json:"proto"`
	Direction Direction `json:"direction"`
	Duration  Seconds   `json:"duration"`
	// Warmup runs before Duration; what it carries is excluded.
	Warmup Seconds `json:"warmup"`
	// Rate applies to each direction of each target; zero is as fast as
	// possible.
	Rate Rate `json:"rate"`
	// Payload is the UDP payload of each datagram, or the size of each
	// TCP write (0: whole packets up to 128 KiB copying, 64 KiB with sendfile, or one segment with MSS).
	Payload int `json:"payload"`
	// Sizes, when set, is a mix of UDP payloads sent in proportion
	// (--size imix); Payload is then its largest part. A server that does
	// not know the field answers without it, and the client refuses the
	// test (ErrNoMix).
	Sizes []SizePart `json:"sizes,omitempty"`
	// Streams is the number of flows per port (UDP) or TCP connections,
	// per direction.
	Streams int `json:"streams"`
	// Ports is the number of UDP destination ports flows are spread over.
	Ports int `json:"ports"`
	// Threads is the number of sender and receiver threads on each end.
	Threads int `json:"threads"`
	// RecvBuf is SO_RCVBUF of each UDP receiver socket in bytes (0: 4 MiB).
	RecvBuf int `json:"rcvbuf,omitempty"`
	// MSS sets TCP_MAXSEG before connecting; writes are then one segment.
	MSS int `json:"mss,omitempty"`
	// ZeroCopy sends TCP with sendfile(2) from a memory file.
	ZeroCopy bool `json:"zerocopy,omitempty"`
	// XDP asks the server to count the UDP packets reaching its receiving
	// interface with an XDP program too, beside those reaching the sockets.
	XDP bool `json:"xdp,omitempty"`
	// ProbeInterval is the time between latency probes (0: none).
	ProbeInterval Seconds `json:"probe_interval"`
	// ClientPorts are the client's UDP receive ports for Reverse and Bidir,
	// where the server sends (to the control connection's peer address).
	ClientPorts []uint16 `json:"client_ports,omitempty"`
	// DSCP marks what each end sends (IP_TOS, IPV6_TCLASS), UDP and TCP:
	// the code point, 0 to 63 (0: unmarked).
	DSCP int `json:"dscp,omitempty"`
	// StreamDSCP, when set, marks each TCP stream with its own code
	// point, stream i with StreamDSCP[i], in both directions (RRUL's
	// BE, BK, CS5, EF); it has one entry per stream and goes without
	// DSCP. A server that does not know the field answers without it,
	// and the client refuses the test (ErrNoStreamDSCP).
	StreamDSCP []int `json:"stream_dscp,omitempty"`
	// Window is SO_SNDBUF and SO_RCVBUF of every TCP data socket on both
	// ends in bytes, as iperf3's -w (0: the kernel's autotuning).
	Window int `json:"window,omitempty"`
	// Congestion is TCP_CONGESTION of every TCP data socket on both ends
	// ("": the kernel's default).
	Congestion string `json:"congestion,omitempty"`
	// FQRate is SO_MAX_PACING_RATE of every TCP data socket in bits per
	// second (0: none): the kernel paces each connection (fq or TCP's own
	// pacing) to it.
	FQRate uint64 `json:"fq_rate,omitempty"`
	// Nagle leaves Nagle's algorithm on on the TCP data sockets, as the
	// kernel and iperf3 (without -N) do. By default they set TCP_NODELAY:
	// a sender of large blocks gains nothing from Nagle, which holds a
	// short segment back until the previous one is acknowledged (what
	// it cost a sendfile test is in docs/bench.md).
	// With MSS Nagle is always off (a short last write would wait).
	Nagle bool `json:"nagle,omitempty"`
	// Sources are the client's source addresses for UDP forward, besides
	// the control connection's (--src): its flows are spread over them,
	// and the server counts what comes from them as the client's.
	Sources []netip.Addr `json:"sources,omitempty"`
	// Punch says the client punches its NAT for the server's UDP (see
	// nat.go): the server waits for the punches before it sends.
	Punch bool `json:"punch,omitempty"`
	// RR, when set, makes the test a transaction test (bench rr): Streams
	// request/response loops over Proto (rr.go). A server that does not
	// know the field answers without it, and the client refuses the test
	// (ErrNoRR).
	RR *RR `json:"rr,omitempty"`
}

// Limits a server puts on what it runs.
const (
	maxStreams = 1024
	maxPorts   = 256
	maxSources = 256
	maxThreads = 256
	maxPayload = 65507 // largest IPv4 UDP payload (RFC 768, 791)
	maxRecvBuf = 1 << 30
	// The window (SO_SNDBUF/SO_RCVBUF) a test may ask for: the kernel's
	// SOCK_MIN_RCVBUF rounded up, to maxRecvBuf.
	minWindow = 4096
	// tcpCANameMax is the kernel's TCP_CA_NAME_MAX, the NUL included.
	tcpCANameMax = 16
)

// The MSS a test may set (TCP_MAXSEG): the kernel's TCP_MIN_MSS
// (include/net/tcp.h) to the largest segment of a 65535-byte IPv4 packet.
const (
	MinMSS = 88
	MaxMSS = 65495
)

// MinUDPPayload is the payload of the smallest IPv4 test datagram: a
// 64-byte frame.
const MinUDPPayload = MinFrameSize - EthOverhead - ipv4Header - udpHeader

// Check reports the first thing wrong with s, as one line; a field's error
// is a *usage.FieldError named by the field's JSON name ("streams", "mss").
func (s *Spec) Check() error {
	if _, err := ParseProto(string(s.Proto)); err != nil {
		return err
	}
	if _, err := ParseDirection(string(s.Direction)); err != nil {
		return err
	}
	switch {
	case s.Duration <= 0:
		return usage.Field("duration", "%s: must be more than 0", s.Duration.D())
	case s.Warmup < 0:
		return usage.Field("warmup", "%s: negative", s.Warmup.D())
	case s.Rate.check() != nil:
		return s.Rate.check()
	case s.Streams < 1 || s.Streams > maxStreams:
		return usage.Field("streams", "%d: want 1 to %d", s.Streams, maxStreams)
	case s.Ports < 1 || s.Ports > maxPorts:
		return usage.Field("ports", "%d: want 1 to %d", s.Ports, maxPorts)
	case s.Ports*s.Streams > 65535:
		return fmt.Errorf("%d ports × %d streams: more than 65535 flows", s.Ports, s.Streams)
	case s.Threads < 1 || s.Threads > maxThreads:
		return usage.Field("threads", "%d: want 1 to %d", s.Threads, maxThreads)
	case s.RecvBuf < 0 || s.RecvBuf > maxRecvBuf:
		return usage.Field("rcvbuf", "%d: want 0 to %d", s.RecvBuf, maxRecvBuf)
	case s.DSCP < 0 || s.DSCP > MaxDSCP:
		return usage.Field("dscp", "%d: want 0 to %d", s.DSCP, MaxDSCP)
	case len(s.StreamDSCP) > 0 && s.DSCP != 0:
		return usage.Field("stream_dscp", "goes without dscp: give one mark for every stream or a mark per stream")
	case len(s.StreamDSCP) > 0 && len(s.StreamDSCP) != s.Streams:
		return usage.Field("stream_dscp", "%d marks for %d streams: want one per stream", len(s.StreamDSCP), s.Streams)
	case len(s.StreamDSCP) > 0 && s.Proto != TCP:
		return usage.Field("stream_dscp", "is for tcp, not %s", s.Proto)
	case s.ProbeInterval < 0:
		return usage.Field("probe_interval", "%s: negative", s.ProbeInterval.D())
	case s.ProbeInterval > 0 && s.ProbeInterval.D() < time.Millisecond:
		return usage.Field("probe_interval", "%s: under 1ms", s.ProbeInterval.D())
	}
	if s.RR != nil {
		if err := s.RR.check(s); err != nil {
			return err
		}
	}
	for i, d := range s.StreamDSCP {
		if d < 0 || d > MaxDSCP {
			return usage.Field("stream_dscp", "stream %d: %d: want 0 to %d", i, d, MaxDSCP)
		}
	}
	if s.Proto == UDP && s.RR == nil {
		if s.Payload < HeaderLen || s.Payload > maxPayload {
			return usage.Field("payload", "%d bytes: want %d to %d for udp", s.Payload, HeaderLen, maxPayload)
		}
		if err := s.checkSizes(); err != nil {
			return err
		}
		if err := s.checkSources(); err != nil {
			return err
		}
		if s.Direction != Forward && len(s.ClientPorts) != s.Ports {
			return fmt.Errorf("%d client ports for %d ports", len(s.ClientPorts), s.Ports)
		}
	} else if s.Proto == TCP {
		if s.Payload < 0 || s.Payload > 16<<20 {
			return usage.Field("write_size", "%d bytes: want 0 to 16 MiB for tcp", s.Payload)
		}
		if s.MSS != 0 && (s.MSS < MinMSS || s.MSS > MaxMSS) {
			return usage.Field("mss", "%d: want %d (the kernel's smallest MSS) to %d", s.MSS, MinMSS, MaxMSS)
		}
		if s.Window != 0 && (s.Window < minWindow || s.Window > maxRecvBuf) {
			return usage.Field("window", "%d bytes: want %d to %d", s.Window, minWindow, maxRecvBuf)
		}
		if !congestionName(s.Congestion) {
			return usage.Field("congestion", "%q: not a congestion control name", s.Congestion)
		}
		return nil
	}
	switch {
	case s.Window != 0:
		return usage.Field("window", "is for tcp, not udp")
	case s.Congestion != "":
		return usage.Field("congestion", "is for tcp, not udp")
	case s.FQRate != 0:
		return usage.Field("fq_rate", "is for tcp, not udp")
	case s.Nagle:
		return usage.Field("nagle", "is for tcp, not udp")
	}
	return nil
}

// checkSources checks Sources: forward only, at most maxSources unicast
// addresses, no more than the flows that would use them.
func (s *Spec) checkSources() error {
	switch {
	case len(s.Sources) == 0:
		return nil
	case s.Direction != Forward:
		return usage.Field("sources", "is what the client sends from: forward only, not %s", s.Direction)
	case len(s.Sources) > maxSources:
		return usage.Field("sources", "%d addresses: at most %d", len(s.Sources), maxSources)
	case len(s.Sources) > s.Flows():
		return usage.Field("sources", "%d addresses for %d flows: each address needs a flow", len(s.Sources), s.Flows())
	}
	for _, a := range s.Sources {
		if !a.IsValid() || a.IsUnspecified() || a.IsMulticast() {
			return usage.Field("sources", "%s: not a unicast address", a)
		}
	}
	return nil
}

// congestionName says whether s could name a congestion control algorithm
// (empty is the default): shorter than the kernel's TCP_CA_NAME_MAX, of
// letters, digits, '_' and '-'.
func congestionName(s string) bool {
	if len(s) >= tcpCANameMax {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// DSCPOf is the code point stream i is marked with (0: unmarked).
func (s *Spec) DSCPOf(stream int) int {
	if stream >= 0 && stream < len(s.StreamDSCP) {
		return s.StreamDSCP[stream]
	}
	return s.DSCP
}

// ClientSends reports whether the client sends in this test (forward or
// both ways).
func (s *Spec) ClientSends() bool { return s.Direction != Reverse }

// ServerSends reports whether the server sends in this test (reverse or
// both ways).
func (s *Spec) ServerSends() bool { return s.Direction != Forward }

// Flows is the number of UDP flows (or TCP connections) per direction.
func (s *Spec) Flows() int {
	if s.Proto == TCP {
		return s.Streams
	}
	return s.Ports * s.Streams
}
