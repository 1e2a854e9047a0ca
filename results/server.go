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
	XDP *XDPStat `json:"xdp,omitempty"`
	// RxQueues is how the packets that reached the receiving interface
	// in the measured window spread over its receive queues.
	RxQueues    *QueueStat `json:"rx_queues,omitempty"`
	SampleError string     `json:"sample_error,omitempty"`
	Errors      []string   `json:"errors,omitempty"`
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

// XDP modes: how an XDP program or an AF_XDP socket meets the driver.
const (
	// XDPNative: in the driver (XDP_DRV; for an AF_XDP socket, zero-copy:
	// the driver sends frames from the UMEM).
	XDPNative = "native"
	// XDPGeneric: in the core, on an skb (XDP_SKB; for an AF_XDP socket,
	// copy mode: each frame is copied into an skb).
	XDPGeneric = "generic"
	// XDPMixed: some AF_XDP sockets of a target one way, some the other.
	XDPMixed = "mixed"
)

// XDPStat is what an XDP counter on the receiving interface counted in the
// measured window: packets that reached the interface, before any socket.
type XDPStat struct {
	Interface string `json:"interface"`
	// Mode is XDPNative or XDPGeneric; NativeError why the driver refused
	// native mode, when it did.
	Mode        string  `json:"mode,omitempty"`
	NativeError string  `json:"native_error,omitempty"`
	Packets     uint64  `json:"packets"`
	Bytes       uint64  `json:"bytes"`
	PPS         float64 `json:"pps"`
	Error       string  `json:"error,omitempty"`
}

// AFXDPStat is how the AF_XDP engine's sockets towards a target were
// bound.
type AFXDPStat struct {
	Interface string `json:"interface"`
	Sockets   int    `json:"sockets"`
	// ZeroCopy is how many sockets the driver took in zero-copy mode.
	ZeroCopy int `json:"zero_copy"`
	// Mode is XDPNative when every socket is zero-copy, XDPGeneric when
	// every one copies, XDPMixed otherwise.
	Mode string `json:"mode"`
	// ZeroCopyError is why the driver refused zero-copy, when it did.
	ZeroCopyError string `json:"zero_copy_error,omitempty"`
}

// QueueStat is how the packets that reached a receiving interface in the
// measured window spread over its receive queues: what a NIC's RSS (or a
// veth's flow hash on the sending side) made of the test's flows.
type QueueStat struct {
	Interface string `json:"interface"`
	// Counter is where the counts come from: CounterQstats or
	// CounterEthtool, the NIC's own per-queue counters (every packet, the
	// control connection's too), CounterLink, the receive counter of an
	// interface with one queue (every packet too), or CounterXDP,
	// linerate's XDP counter by rx_queue_index (IPv4 UDP only).
	Counter string `json:"counter,omitempty"`
	// Packets is per receive queue, queue 0 first.
	Packets []uint64 `json:"packets,omitempty"`
	// Error says why there are no counts.
	Error string `json:"error,omitempty"`
}

// Where a QueueStat's counts come from.
const (
	// CounterQstats: the driver's per-queue statistics over generic
	// netlink (the netdev family's qstats, Linux 6.9 and later).
	CounterQstats = "qstats"
	// CounterEthtool: the driver's per-queue counters in ethtool -S.
	CounterEthtool = "ethtool"
	// CounterLink: the interface's own receive counter (rtnetlink), for
	// an interface with one receive queue.
	CounterLink = "link"
	// CounterXDP: linerate's XDP counter, by the queue it ran on.
	CounterXDP = "xdp"
)

// Total is the packets of every queue.
func (q *QueueStat) Total() uint64 {
	var n uint64
	for _, p := range q.Packets {
		n += p
	}
	return n
}

// Shares is each queue's part of the total, 0 to 1 (all 0 when nothing
// was counted).
func (q *QueueStat) Shares() []float64 {
	out := make([]float64, len(q.Packets))
	if t := q.Total(); t > 0 {
		for i, p := range q.Packets {
			out[i] = float64(p) / float64(t)
		}
	}
	return out
}
