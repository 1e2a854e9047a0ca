package results

import (
	"encoding/json"
	"time"

	"linerate/box"
	"linerate/ceiling"
	"linerate/ledger"
	"linerate/wire"
)

// ResultSchema is bumped when a field of Result's JSON form changes meaning
// or disappears (docs/bench.md). Adding fields does not bump it.
const ResultSchema = 1

// Result is everything one `linerate bench` run found out. Its JSON form
// is documented in docs/bench.md.
type Result struct {
	Schema   int       `json:"schema"`
	Linerate string    `json:"linerate_version"`
	Time     time.Time `json:"time"`
	// Spec is the test as run (after the first server's caps).
	Spec wire.Spec `json:"spec"`
	// FrameSize is the UDP Ethernet frame size (FCS included), for the
	// first target's address family.
	FrameSize int    `json:"frame_size,omitempty"`
	Engine    string `json:"engine"`
	// Interrupted is set when the run was stopped early (Ctrl-C): the
	// figures cover the part that ran.
	Interrupted bool `json:"interrupted"`
	// StoppedEarly is set when the run ended before its planned end for
	// another reason than Ctrl-C (a peer died): the figures cover the
	// window up to its At. Interrupted stays false.
	StoppedEarly *StoppedEarly   `json:"stopped_early,omitempty"`
	Summary      Summary         `json:"summary"`
	Targets      []TargetResult  `json:"targets"`
	Streams      []StreamResult  `json:"streams"`
	Intervals    []IntervalStats `json:"intervals"`
	// LinkEvents are the interfaces of the test's path that were down
	// during the run, on either end (docs/bench.md, "Link events").
	LinkEvents []LinkEvent `json:"link_events,omitempty"`
	// Samples are both ends' counters, once a second over the measured
	// window (client first, then each server).
	Samples []Sample `json:"samples"`
	// Soak is the heat of this end, once a second, and its first throttle
	// (bench --soak; soak.go); nil for other runs.
	Soak *Soak `json:"soak,omitempty"`
	// Ledger is where the lost datagrams died (UDP, when the ends read
	// their drop counters: docs/ledger.md).
	Ledger *ledger.Ledger `json:"ledger,omitempty"`
	// Search is the zero-loss search per frame size (bench --search;
	// docs/search.md); the other figures are then empty.
	Search []SizeSearch `json:"search,omitempty"`
	// RR is a transaction test's figures (bench rr; docs/rr.md); the
	// throughput figures are then empty.
	RR *RR `json:"rr,omitempty"`
	// Drops are both ends' drop counters over the measured window and
	// their interfaces on the path (client first, then each server).
	Drops []EndDrops `json:"drops,omitempty"`
	// RRUL is the figures of a Realtime Response Under Load test (bench
	// rrul; docs/rrul.md): latency idle and under load, goodput per
	// direction and per stream with its mark, the probes over time.
	RRUL   *RRUL    `json:"rrul,omitempty"`
	Notes  []string `json:"notes,omitempty"`
	Errors []string `json:"errors,omitempty"`
}

// MarshalJSON leaves the summary out of a zero-loss search's result: a
// search is many trials whose figures are in Search, and a summary of
// none of them would read as a run that moved nothing.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result // without this method
	if len(r.Search) == 0 {
		return json.Marshal(plain(r))
	}
	return json.Marshal(struct {
		plain
		Summary *Summary `json:"summary,omitempty"`
	}{plain: plain(r)})
}

// Totals are the figures of a set of streams in the measured window.
// UDP bits per second count whole Ethernet frames (headers and FCS, as
// --size does); TCP bits per second are goodput (payload only).
type Totals struct {
	Seconds         float64 `json:"seconds"`
	SentPackets     uint64  `json:"sent_packets"`
	ReceivedPackets uint64  `json:"received_packets"`
	// LostPackets is sent minus distinct received (UDP).
	LostPackets uint64  `json:"lost_packets"`
	LossRatio   float64 `json:"loss_ratio"`
	Reordered   uint64  `json:"reordered"`
	Duplicates  uint64  `json:"duplicates"`
	SentBytes   uint64  `json:"sent_bytes"`
	// ReceivedBytes is UDP payload or TCP goodput bytes.
	ReceivedBytes uint64  `json:"received_bytes"`
	SentPPS       float64 `json:"sent_pps"`
	ReceivedPPS   float64 `json:"received_pps"`
	SentBPS       float64 `json:"sent_bps"`
	ReceivedBPS   float64 `json:"received_bps"`
	// Retransmits is TCP segments retransmitted (TCP_INFO).
	Retransmits uint64 `json:"retransmits,omitempty"`
	// Sizes is the datagrams per frame size when the test sends a mix of
	// sizes (UDP), smallest first.
	Sizes []SizeTotals `json:"sizes,omitempty"`
	// LossUnknown says the loss of some of these packets was not counted
	// (LostPackets and LossRatio leave them out): their receiver died
	// mid-run (Totals.LossNotCounted).
	LossUnknown bool `json:"loss_unknown,omitempty"`
	// frameBits are the bits counted for SentBPS/ReceivedBPS.
	sentBits, recvBits float64
	// uncounted are the packets of SentPackets whose loss is not counted
	// (LossUnknown): LossRatio is over the others.
	uncounted uint64
}

// Add sums o into t: counts of packets, bytes and retransmits and each
// frame size's add up, Seconds is the longer of the two windows, and the
// rates and the loss ratio are taken again over the sums.
func (t *Totals) Add(o Totals) {
	t.Seconds = max(t.Seconds, o.Seconds)
	t.SentPackets += o.SentPackets
	t.ReceivedPackets += o.ReceivedPackets
	t.LostPackets += o.LostPackets
	t.LossUnknown = t.LossUnknown || o.LossUnknown
	t.uncounted += o.uncounted
	t.Reordered += o.Reordered
	t.Duplicates += o.Duplicates
	t.SentBytes += o.SentBytes
	t.ReceivedBytes += o.ReceivedBytes
	t.Retransmits += o.Retransmits
	t.addSizes(o.Sizes)
	t.sentBits += o.sentBits
	t.recvBits += o.recvBits
	t.rates()
}

func (t *Totals) rates() {
	if t.Seconds > 0 {
		t.SentPPS = float64(t.SentPackets) / t.Seconds
		t.ReceivedPPS = float64(t.ReceivedPackets) / t.Seconds
		t.SentBPS = t.sentBits / t.Seconds
		t.ReceivedBPS = t.recvBits / t.Seconds
	}
	if counted := t.SentPackets - min(t.uncounted, t.SentPackets); counted > 0 {
		t.LossRatio = float64(t.LostPackets) / float64(counted)
	} else if t.uncounted > 0 {
		t.LossRatio = 0
	}
	t.sizeShares()
}

// CPUCost is a CPU cost on each end; nil when that end had no samples.
type CPUCost struct {
	Client *float64 `json:"client"`
	Server *float64 `json:"server"`
}

// Summary is the whole run: every target, both directions.
type Summary struct {
	Totals
	// CPUSeconds is the busy time of every CPU of each end's machine over
	// the measured window (from /proc/stat busy ticks): linerate, the
	// kernel's receive work charged to no process, and whatever else ran
	// there. With MachineCPUBusy it says whether the box was the limit;
	// it is not linerate's cost (ProcessCPUSeconds is).
	CPUSeconds CPUCost `json:"cpu_seconds"`
	// CPUSecondsPerMpkt is the machine's CPUSeconds per million packets
	// the end sent or received; CPUSecondsPerGbit per gigabit.
	CPUSecondsPerMpkt CPUCost `json:"cpu_seconds_per_mpkt"`
	CPUSecondsPerGbit CPUCost `json:"cpu_seconds_per_gbit"`
	// MachineCPUBusy is the machine's CPUSeconds over what all its CPUs
	// could give in the window (0 to 1).
	MachineCPUBusy CPUCost `json:"machine_cpu_busy"`
	// ProcessCPUSeconds is the CPU time of linerate's own process on each
	// end over the measured window (user and system, every thread: its
	// /proc/self/stat): bench on the client, serve or the agent on a
	// server. nil when that end's samples do not carry it.
	ProcessCPUSeconds CPUCost `json:"process_cpu_seconds"`
	// ProcessCPUSecondsPerMpkt is ProcessCPUSeconds per million packets
	// the end sent or received: what linerate's packets cost it;
	// ProcessCPUSecondsPerGbit per gigabit.
	ProcessCPUSecondsPerMpkt CPUCost `json:"process_cpu_seconds_per_mpkt"`
	ProcessCPUSecondsPerGbit CPUCost `json:"process_cpu_seconds_per_gbit"`
	// LimitedBy is what limited the run (a Limit: "link", "sender",
	// "receiver", "dut", "path", "cpu", "asked rate", "round trip"...) or "" when it
	// cannot tell; LimitedWhy says why, and what it could not see.
	LimitedBy  Limit  `json:"limited_by"`
	LimitedWhy string `json:"limited_why,omitempty"`
	// SenderThreadBusy and ReceiverThreadBusy are the busiest sending and
	// receiving thread's share of one CPU (0 to 1) over the run, on either
	// end, as the verdict weighed them; absent when no thread was measured.
	SenderThreadBusy   *float64 `json:"sender_thread_busy,omitempty"`
	ReceiverThreadBusy *float64 `json:"receiver_thread_busy,omitempty"`
	// HeldBackLinkDown is the datagrams a paced sender (ring, AF_XDP) did
	// not send while its link was down: the rate allowed them, and they
	// are dropped rather than sent late in a burst. Not in the figures.
	HeldBackLinkDown uint64 `json:"held_back_link_down,omitempty"`
	// PathCeiling is the slowest part of the path the ends could see (a
	// link's speed or a shaper's rate), in the test's frames.
	PathCeiling *ceiling.PathLimit `json:"path_ceiling,omitempty"`
	// Latency is the round trip of probes, idle (before the load) and
	// under load, over every target.
	LatencyIdle *Latency `json:"latency_idle,omitempty"`
	LatencyLoad *Latency `json:"latency_load,omitempty"`
}

// TargetResult is one --to target.
type TargetResult struct {
	Target   string `json:"target"`
	Address  string `json:"address"`
	Local    string `json:"local"`
	ServerID string `json:"server_id,omitempty"`
	// Machine is the server's kernel's boot id: targets with the same one
	// run on one machine, whose CPU is counted once.
	Machine string `json:"machine,omitempty"`
	Totals
	// Forward is client → server, Reverse server → client.
	Forward     *Totals     `json:"forward,omitempty"`
	Reverse     *Totals     `json:"reverse,omitempty"`
	LatencyIdle *Latency    `json:"latency_idle,omitempty"`
	LatencyLoad *Latency    `json:"latency_load,omitempty"`
	Threads     []ThreadCPU `json:"server_threads,omitempty"`
	// IPerf3 is the test as a plain iperf3 peer figured it (docs/iperf3.md).
	IPerf3 *IPerf3 `json:"iperf3,omitempty"`
	// XDP is what reached the server's interface (with --xdp).
	XDP *XDPStat `json:"xdp,omitempty"`
	// AFXDP is how the AF_XDP engine's sockets to this target were bound
	// (with --engine xdp).
	AFXDP *AFXDPStat `json:"afxdp,omitempty"`
	// RxQueues is how what reached the server's receiving interface
	// spread over its receive queues.
	RxQueues *QueueStat `json:"rx_queues,omitempty"`
	// ForeignPackets is test datagrams either end received from an
	// address other than the other end's: not counted in the figures.
	ForeignPackets uint64 `json:"foreign_packets,omitempty"`
	// NotCredible says why the figures the far end reported (what it
	// received or sent, its CPU use, its window) are not believed: they
	// disagree with what this end counted or with what a host can do
	// (Doubts). They are kept as reported, and the run failed.
	NotCredible []string `json:"not_credible,omitempty"`
	Notes       []string `json:"notes,omitempty"`
	Errors      []string `json:"errors,omitempty"`
}

// StreamResult is one flow in one direction.
type StreamResult struct {
	Target    int            `json:"target"`
	Stream    int            `json:"stream"`
	Direction wire.Direction `json:"direction"`
	Totals
	// TCP is the sending end's TCP_INFO.
	TCP *TCPStat `json:"tcp,omitempty"`
}

// IntervalStats is one second of a run, as the client saw it (the
// receiving figures of the forward direction come from the server's
// interval reports).
type IntervalStats struct {
	// T is the end of the interval in seconds since the start.
	T           float64 `json:"t"`
	Warmup      bool    `json:"warmup"`
	SentPPS     float64 `json:"sent_pps"`
	SentBPS     float64 `json:"sent_bps"`
	ReceivedPPS float64 `json:"received_pps"`
	ReceivedBPS float64 `json:"received_bps"`
	// SentUnknown and ReceivedUnknown say that a side's figures were not
	// measured in the interval: a server that sends or receives in it
	// filed no report of that second (it died, the link was down). The
	// rates are then 0 here and null in the JSON. A result written before
	// these fields existed has neither: every figure in it was known.
	SentUnknown     bool `json:"sent_unknown,omitempty"`
	ReceivedUnknown bool `json:"received_unknown,omitempty"`
	// CPU is the client's per-CPU use in the interval, when sampled.
	CPU []box.CPUUse `json:"cpu,omitempty"`
	// TPS is the transactions the client completed per second (bench rr);
	// SentPPS is then the same and ReceivedPPS the server's answers.
	TPS float64 `json:"tps,omitempty"`
}

// ClearUnknown zeroes the rates of the sides that are unknown.
func (iv *IntervalStats) ClearUnknown() {
	if iv.SentUnknown {
		iv.SentPPS, iv.SentBPS = 0, 0
	}
	if iv.ReceivedUnknown {
		iv.ReceivedPPS, iv.ReceivedBPS = 0, 0
	}
}

// MarshalJSON writes the rates of a side that is unknown as null, so that
// no reader takes them for a measured zero.
func (iv IntervalStats) MarshalJSON() ([]byte, error) {
	type plain IntervalStats // without this method
	known := func(v float64, ok bool) *float64 {
		if !ok {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		plain
		SentPPS     *float64 `json:"sent_pps"`
		SentBPS     *float64 `json:"sent_bps"`
		ReceivedPPS *float64 `json:"received_pps"`
		ReceivedBPS *float64 `json:"received_bps"`
	}{plain(iv),
		known(iv.SentPPS, !iv.SentUnknown), known(iv.SentBPS, !iv.SentUnknown),
		known(iv.ReceivedPPS, !iv.ReceivedUnknown), known(iv.ReceivedBPS, !iv.ReceivedUnknown)})
}

// Sample is one end's counters over one second.
type Sample struct {
	// Side is the client or a server; Target the target index for a server.
	Side   Side `json:"side"`
	Target int  `json:"target"`
	// Host names a host sampled at a controller's request (bench
	// --sample, a plan's sample:), side "dut".
	Host string `json:"host,omitempty"`
	box.Rates
}
