package results

import "linerate/box"

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
	// LinkEvents are the server's test interfaces that were down during
	// the run (at most MaxLinkEvents), times since the server's start;
	// the client sets their Target.
	LinkEvents []LinkEvent `json:"link_events,omitempty"`
	// RR is what the server of a transaction test counted besides the
	// transactions it answered (in Received).
	RR *RRServed `json:"rr,omitempty"`
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
