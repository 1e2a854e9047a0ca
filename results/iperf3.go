package results

import "linerate/wire"

// IPerf3 is a test run against a plain iperf3 peer (bench --to iperf3://,
// or an iperf3 client of serve --iperf3), as iperf3 itself figures it:
// its receiver counts gaps in the packet numbers as lost and the jitter
// of RFC 1889; the peer's CPU use is its process's, not its machine's.
type IPerf3 struct {
	// Peer is "server" or "client": which end ran iperf3.
	Peer string `json:"peer"`
	// Version is the iperf3 client's version, when it said.
	Version string `json:"version,omitempty"`
	// CPUTotal, CPUUser and CPUSystem are the peer's process CPU use in
	// percent, as its results message said; absent when it sent none.
	CPUTotal  *float64       `json:"peer_cpu_total_percent,omitempty"`
	CPUUser   *float64       `json:"peer_cpu_user_percent,omitempty"`
	CPUSystem *float64       `json:"peer_cpu_system_percent,omitempty"`
	Streams   []IPerf3Stream `json:"streams"`
}

// IPerf3Stream is one iperf3 stream: what its sender sent, what its
// receiver got, lost and saw as jitter.
type IPerf3Stream struct {
	ID            int            `json:"id"`
	Direction     wire.Direction `json:"direction"`
	Seconds       float64        `json:"seconds"`
	SentBytes     uint64         `json:"sent_bytes"`
	SentPackets   uint64         `json:"sent_packets,omitempty"`
	ReceivedBytes uint64         `json:"received_bytes"`
	LostPackets   uint64         `json:"lost_packets,omitempty"`
	LostPercent   float64        `json:"lost_percent,omitempty"`
	JitterMS      float64        `json:"jitter_ms,omitempty"`
}
