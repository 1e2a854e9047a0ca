package results

import (
	"fmt"
	"time"

	"linerate/wire"
)

// FlowSet is the result of third-party flows run at once (bench --from):
// each flow's own result as its agent measured it, their total, and the
// controller's own counters when it was neither end (side "dut": the
// device the traffic crossed).
type FlowSet struct {
	Schema   int       `json:"schema"`
	Linerate string    `json:"linerate_version"`
	Time     time.Time `json:"time"`
	Spec     wire.Spec `json:"spec"`
	Flows    []FlowRun `json:"flows"`
	// Total adds up every flow's measured window (the longest window; the
	// flows start within a control round trip of each other).
	Total Totals `json:"total"`
	// StartSpreadMS is how far apart, in milliseconds, the flows' measured
	// windows opened: the latest window start less the earliest, each by
	// its sender's clock (hosts' clocks differ by their NTP error). Absent
	// with fewer than two flows that measured.
	StartSpreadMS *float64 `json:"start_spread_ms,omitempty"`
	// Barrier is how the flows were started: set up first, every one, and
	// then let go at once. Absent when no barrier was tried (a search,
	// a linerate from before it).
	Barrier *Barrier `json:"barrier,omitempty"`
	// Samples are the controller's counters once a second while the flows
	// ran (side "dut"), and those of hosts added with --sample.
	Samples     []Sample `json:"samples,omitempty"`
	Interrupted bool     `json:"interrupted"`
	Notes       []string `json:"notes,omitempty"`
}

// Barrier is a FlowSet's start barrier: each flow's agent set its flow up
// (control connections, the targets' accept, sockets, engines), said it
// was ready and held it; once every flow was ready, the controller let
// them all go.
type Barrier struct {
	// Used: every flow was held until the go. False when an agent has no
	// barrier (Without).
	Used bool `json:"used"`
	// Go is when the controller let the flows go, by its clock.
	Go time.Time `json:"go"`
	// SetupMS is how long, in milliseconds, the slowest flow took from
	// the controller's request to its agent's ready.
	SetupMS float64 `json:"setup_ms"`
	// Without are the flows (by sender) whose agents have no barrier (an
	// older linerate): each was sent at the go and started once set up.
	Without []string `json:"without,omitempty"`
}

// FlowRun is one flow of a FlowSet: From is the agent that sent (as the
// controller reached it), To the targets as that agent reached them.
type FlowRun struct {
	From   string   `json:"from"`
	To     []string `json:"to"`
	Result *Result  `json:"result,omitempty"`
	Error  string   `json:"error,omitempty"`
}

// StartLines say how the set's flows started together: how far apart
// their measured windows opened, and the start barrier when every flow
// was held at it (a note says which were not).
func (fs *FlowSet) StartLines() []string {
	var out []string
	if s := fs.StartSpreadMS; s != nil {
		out = append(out, fmt.Sprintf("the %d flows' measured windows opened within %.1f ms of each other", len(fs.Flows), *s))
	}
	if b := fs.Barrier; b != nil && b.Used {
		out = append(out, fmt.Sprintf("start barrier: every flow was set up (the slowest in %.0f ms), then all were let go at once", b.SetupMS))
	}
	return out
}

// Sum fills Total from the flows' summaries. A transaction flow's
// summary counts transactions, not packets: it is left out of the total
// (its transactions are the set's transactions/s).
func (fs *FlowSet) Sum() {
	fs.Total = Totals{}
	for _, f := range fs.Flows {
		if f.Result == nil {
			continue
		}
		fs.Interrupted = fs.Interrupted || f.Result.Interrupted
		if f.Result.RR != nil {
			continue
		}
		t := f.Result.Summary.Totals
		// The unexported bit counts do not cross the wire: rebuild them
		// from the rates.
		t.sentBits, t.recvBits = t.SentBPS*t.Seconds, t.ReceivedBPS*t.Seconds
		fs.Total.Add(t)
	}
}
