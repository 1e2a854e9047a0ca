package xdpcount

import "linerate/source/feature"

// What both builds share: the small build (-tags small) has no eBPF and
// its Attach always fails (xdpcount_small.go).

// ErrUnsupported is wrapped by every error of Attach that comes
// from the kernel refusing the program or the attachment: no BPF
// permission, a kernel without BPF links for XDP, an interface that already
// has an XDP program, a verifier that rejects the program. The message
// after it says why.
// It is a feature.Error: errors.Is(err, feature.ErrNotSupported) holds.
var ErrUnsupported error = &feature.Error{Feature: "xdp counter", Lack: "unavailable"}

// Mode is how an XDP program is attached to an interface.
type Mode string

const (
	// Native runs the program in the driver, before an skb exists.
	Native Mode = "native"
	// Generic runs it after the skb is built: works on any interface,
	// slower.
	Generic Mode = "generic"
)

// MaxQueues is how many receive queues the counter tells apart: a packet
// on a higher queue is counted on the last one.
const MaxQueues = 256

// Count returns the packets counted since the program was attached and
// their bytes, from the Ethernet header to the end of the payload (the
// frame without FCS), summed over CPUs and receive queues.
func (c *Counter) Count() (pkts, bytes uint64, err error) {
	queues, err := c.Queues(MaxQueues)
	for _, q := range queues {
		pkts += q.Packets
		bytes += q.Bytes
	}
	return pkts, bytes, err
}

// QueueCount is what the counter counted on one receive queue.
type QueueCount struct {
	Packets, Bytes uint64
}
