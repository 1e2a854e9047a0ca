package results

// Count is what one end counted for one stream in the measured window.
type Count struct {
	Stream  int    `json:"stream"`
	Packets uint64 `json:"packets"`
	// Bytes is UDP payload or TCP goodput bytes.
	Bytes uint64 `json:"bytes"`
	// Unique, Dup and Reorder are kept by UDP receivers.
	Unique  uint64 `json:"unique,omitempty"`
	Dup     uint64 `json:"dup,omitempty"`
	Reorder uint64 `json:"reorder,omitempty"`
	// Warmup counts the packets (UDP) or bytes (TCP) of the warmup, not in
	// the figures above.
	Warmup uint64 `json:"warmup_packets,omitempty"`
	// Late counts the TCP bytes a receiver read after the measured window
	// (sent in it or before, delivered after it), not in the figures above.
	Late uint64 `json:"late_bytes,omitempty"`
	// Sizes counts the measured window's datagrams per payload size when
	// the test sends a mix of sizes (UDP).
	Sizes []SizeCount `json:"sizes,omitempty"`
}

// ThreadCPU is how busy one engine thread was: CPU time (user+system, from
// getrusage RUSAGE_THREAD) over its wall time.
type ThreadCPU struct {
	Role    string  `json:"role"` // "udp-send", "udp-recv", "tcp-send", "tcp-recv", ...
	CPU     int     `json:"cpu"`  // pinned CPU, -1 when not pinned
	Seconds float64 `json:"seconds"`
	Busy    float64 `json:"busy"` // 0..1
	// Behind is packets a paced sender gave up on because it was not
	// scheduled (or not fast enough) to send them in time.
	Behind uint64 `json:"behind,omitempty"`
	// Preempted is involuntary context switches: the CPU was taken away.
	Preempted int64 `json:"preempted,omitempty"`
}

// TCPStat is what TCP_INFO says about one connection at the end of a test
// (struct tcp_info of <linux/tcp.h>).
type TCPStat struct {
	Stream int `json:"stream"`
	// Side is which end read it.
	Side        End    `json:"side"`
	RTTMicros   uint32 `json:"rtt_us"`
	RTTVar      uint32 `json:"rttvar_us"`
	Retransmits uint32 `json:"retransmits"`
	SndMSS      uint32 `json:"snd_mss"`
	SndCwnd     uint32 `json:"snd_cwnd"`
	DataSegsOut uint32 `json:"data_segs_out"`
	DataSegsIn  uint32 `json:"data_segs_in"`
	// PacingRate and MaxPacingRate are the kernel's pacing rate and its
	// cap (SO_MAX_PACING_RATE, --fq-rate) in bits per second; no cap is
	// absent.
	PacingRate    uint64 `json:"pacing_rate,omitempty"`
	MaxPacingRate uint64 `json:"max_pacing_rate,omitempty"`
	// The socket's options as read back (getsockopt): the congestion
	// control (TCP_CONGESTION), the buffers (SO_SNDBUF, SO_RCVBUF: the
	// kernel doubles what was set), Nagle off (TCP_NODELAY) and the
	// TOS or traffic class byte it marks with (DSCP << 2).
	Congestion string `json:"congestion,omitempty"`
	SndBuf     int    `json:"sndbuf,omitempty"`
	RcvBuf     int    `json:"rcvbuf,omitempty"`
	NoDelay    bool   `json:"nodelay,omitempty"`
	TOS        int    `json:"tos,omitempty"`
	// OverTime is the sender's TCP_INFO once a second from the start
	// (warmup included).
	OverTime []TCPSample `json:"over_time,omitempty"`
}

// TCPSample is one second's TCP_INFO of a sending stream.
type TCPSample struct {
	// T is seconds since the stream's start.
	T          float64 `json:"t"`
	Cwnd       uint32  `json:"cwnd"`
	RTTMicros  uint32  `json:"rtt_us"`
	Retrans    uint32  `json:"retrans"`     // tcpi_total_retrans so far
	PacingRate uint64  `json:"pacing_rate"` // bits/s
	// Acked is tcpi_bytes_acked so far: the bytes the receiver has, whose
	// change over a second is the stream's goodput in it.
	Acked uint64 `json:"bytes_acked,omitempty"`
}

// End is which end of a TCP stream read its TCP_INFO.
type End string

// The ends of a TCP stream.
const (
	SenderEnd   End = "sender"
	ReceiverEnd End = "receiver"
)

// Of is the stats of stats that end e read, in their order.
func (e End) Of(stats []TCPStat) []TCPStat {
	var out []TCPStat
	for _, s := range stats {
		if s.Side == e {
			out = append(out, s)
		}
	}
	return out
}
