package results

import "linerate/box"

// EndDrops is what one end's drop counters counted over the measured
// window: from just before it (when the warmup ended) to after the
// receivers stopped and drained.
type EndDrops struct {
	// Side is the client or a server; Target the target's index for a server
	// (-1 for the client).
	Side   Side `json:"side"`
	Target int  `json:"target"`
	// Ifaces are the end's interfaces on the test's path: those holding
	// its addresses.
	Ifaces []string `json:"ifaces,omitempty"`
	// Path is their link speed and shapers (netnsread.Reader.Path).
	Path []box.PathIface `json:"path,omitempty"`
	// Refused is the datagrams whose send this end's kernel refused (a send
	// call failed): not counted as sent, yet seen by the counters.
	Refused uint64 `json:"refused,omitempty"`
	// Delta is the counters over the window (box.DropDelta); nil when they
	// could not be read, and Error then says why.
	Delta *box.Drops `json:"delta,omitempty"`
	Error string     `json:"error,omitempty"`
}
