package results

import (
	"fmt"
	"math/bits"
	"slices"
	"time"

	"linerate/box"
)

// RR is what a transaction test (bench rr) found out: transactions per
// second in total and per stream, the round trip of each transaction as
// percentiles, the transactions that failed, what the server answered,
// and the connection tracker of each device in the middle that was
// sampled (--sample).
type RR struct {
	Seconds float64 `json:"seconds"`
	// Transactions are the transactions that completed (the response
	// arrived whole within the timeout); TPS is their rate.
	Transactions uint64  `json:"transactions"`
	TPS          float64 `json:"tps"`
	// Answered is the transactions the server answered (it read the
	// request and wrote the response); Connections the data connections
	// it accepted. A response that never reached the client is answered
	// but not a transaction.
	Answered    uint64 `json:"server_answered"`
	Connections uint64 `json:"server_connections,omitempty"`
	// Timeouts are transactions whose response did not come within the
	// timeout (lost); ConnectFailures are connections that could not be
	// opened (refused, timed out, no port left); Errors other failures
	// (a reset, a short read).
	Timeouts        uint64 `json:"timeouts"`
	ConnectFailures uint64 `json:"connect_failures"`
	Errors          uint64 `json:"errors"`
	// Latency is the round trip of the completed transactions (connect
	// included with --connect), in microseconds.
	Latency RRLatency  `json:"latency"`
	Streams []RRStream `json:"streams"`
	// Middle is the connection tracker of each sampled device in the
	// middle over the run.
	Middle []ConntrackUse `json:"middle,omitempty"`
}

// LimitRoundTrip: a transaction test keeps one transaction in flight per
// stream, so its rate is the streams over the round trip; what made the
// round trip as long as it was is not measured.
const LimitRoundTrip Limit = "round trip"

// SummarizeRR fills a transaction test's summary from its transactions
// (res.RR), each one a packet: sent are the transactions tried (completed
// or failed), received those completed, lost those that failed; the
// bytes and bits are the requests and responses of the completed ones
// (payload, as TCP goodput is). Then the CPU figures per million
// transactions: those the client completed, those the servers answered
// (none per gigabit: a transaction's bytes are not what it costs), and
// what set the rate.
func SummarizeRR(res *Result, client []box.Rates, machine string) {
	r, sp := res.RR, res.Spec.RR
	if r == nil || sp == nil {
		return
	}
	t := &res.Summary.Totals
	*t = Totals{Seconds: r.Seconds, SentPackets: r.Transactions + r.Lost(), ReceivedPackets: r.Transactions, LostPackets: r.Lost(),
		SentBytes: r.Transactions * uint64(max(sp.Request, 0)), ReceivedBytes: r.Transactions * uint64(max(sp.Response, 0))}
	t.sentBits, t.recvBits = 8*float64(t.SentBytes), 8*float64(t.ReceivedBytes)
	t.rates()
	sum := &res.Summary
	sum.setCost(SideClient, cpuOf(client), float64(r.Transactions), 0)
	sum.setCost(SideServer, serversCPU(res, machine), float64(r.Answered), 0)
	if r.Transactions == 0 {
		sum.LimitedBy, sum.LimitedWhy = LimitUnknown, "no transaction completed"
		return
	}
	sum.LimitedBy = LimitRoundTrip
	sum.LimitedWhy = fmt.Sprintf("one transaction in flight per stream (%d): the rate is the streams over the round trip (mean %.0f µs)",
		res.Spec.Streams, r.Latency.Mean)
}

// Lost is the transactions that failed: timed out, not connected, or
// another error.
func (r *RR) Lost() uint64 { return r.Timeouts + r.ConnectFailures + r.Errors }

// RRStream is one transaction loop's figures.
type RRStream struct {
	Stream       int     `json:"stream"`
	Transactions uint64  `json:"transactions"`
	TPS          float64 `json:"tps"`
	Timeouts     uint64  `json:"timeouts"`
	Failures     uint64  `json:"failures"`
	P50          float64 `json:"p50_us"`
	P99          float64 `json:"p99_us"`
}

// RRLatency is percentiles of transaction round trips in microseconds,
// from a histogram whose buckets are within 1/64 of their value.
type RRLatency struct {
	Min  float64 `json:"min_us"`
	Mean float64 `json:"mean_us"`
	P50  float64 `json:"p50_us"`
	P90  float64 `json:"p90_us"`
	P99  float64 `json:"p99_us"`
	P999 float64 `json:"p99_9_us"`
	Max  float64 `json:"max_us"`
}

// RRServed is what the server of a transaction test counted: per stream
// (TCP) or per client port (UDP), the transactions it answered, in
// Received; the connections it accepted here.
type RRServed struct {
	Connections uint64 `json:"connections"`
}

// ConntrackUse is one sampled host's connection tracker over a run: the
// entries when sampling started, at their highest and at the end, the
// table's size, and what it dropped meanwhile (net/stat/nf_conntrack).
type ConntrackUse struct {
	Host         string `json:"host"`
	Start        uint64 `json:"start"`
	Peak         uint64 `json:"peak"`
	End          uint64 `json:"end"`
	Max          uint64 `json:"max"`
	Drop         uint64 `json:"drop"`
	InsertFailed uint64 `json:"insert_failed"`
	EarlyDrop    uint64 `json:"early_drop"`
}

// Full says whether the table filled or the tracker dropped: the count
// reached its max, the tracker evicted entries to make room (early_drop:
// only a table at its max does), or drop or insert_failed grew.
func (c ConntrackUse) Full() bool {
	return c.Max > 0 && c.Peak >= c.Max || c.EarlyDrop > 0 || c.Drop > 0 || c.InsertFailed > 0
}

// Conntrack is the connection tracker of host over samples (in time
// order); ok is false when no sample carried it.
func Conntrack(host string, samples []box.Rates) (use ConntrackUse, ok bool) {
	use.Host = host
	for _, s := range samples {
		ct := s.Conntrack
		if ct == nil {
			continue
		}
		if !ok {
			use.Start, ok = ct.Start, true
		}
		use.Peak = max(use.Peak, ct.Start, ct.Entries)
		use.End, use.Max = ct.Entries, max(use.Max, ct.Max)
		use.Drop += ct.Drop
		use.InsertFailed += ct.InsertFailed
		use.EarlyDrop += ct.EarlyDrop
	}
	return use, ok
}

// Histogram counts durations in buckets within 1/64 of their value, in
// fixed memory however many it counts: the latency of millions of
// transactions.
type Histogram struct {
	counts   [64 * histSub]uint64
	n        uint64
	sum      time.Duration
	min, max time.Duration
}

// histSub is the buckets per power of two.
const histSub = 64

// bucket is the bucket of d ns: the power of two above it and which
// 1/histSub of that power.
func bucket(d time.Duration) int {
	v := uint64(max(d, 0))
	if v < histSub {
		return int(v)
	}
	e := bits.Len64(v) - 7 // v >> e is in [histSub, 2*histSub)
	return (e+1)*histSub + int(v>>e) - histSub
}

// bucketValue is the middle of bucket i.
func bucketValue(i int) time.Duration {
	if i < histSub {
		return time.Duration(i)
	}
	e := i/histSub - 1
	lo := uint64(i%histSub+histSub) << e
	return time.Duration(lo + (uint64(1)<<e)/2)
}

// Add counts one duration.
func (h *Histogram) Add(d time.Duration) {
	if h.n == 0 || d < h.min {
		h.min = d
	}
	h.max = max(h.max, d)
	h.n++
	h.sum += d
	h.counts[bucket(d)]++
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
	for i, c := range o.counts {
		h.counts[i] += c
	}
}

// Count is how many durations were added.
func (h *Histogram) Count() uint64 { return h.n }

// Quantile is the duration below which q (0 to 1) of those counted lie
// (nearest rank), within its bucket's precision; the min and max are
// exact.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		if seen += c; seen >= rank {
			return min(max(bucketValue(i), h.min), h.max)
		}
	}
	return h.max
}

// Latency is h's figures in microseconds.
func (h *Histogram) Latency() RRLatency {
	if h.n == 0 {
		return RRLatency{}
	}
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	return RRLatency{Min: us(h.min), Mean: us(h.sum / time.Duration(h.n)), P50: us(h.Quantile(0.5)), P90: us(h.Quantile(0.9)),
		P99: us(h.Quantile(0.99)), P999: us(h.Quantile(0.999)), Max: us(h.max)}
}

// AddConntrack gives each transaction flow of the set the connection
// tracker of every host sampled in the middle (Samples with a Host), as
// bench rr --sample does for its one flow: the flows ran at once through
// the same tables.
func (fs *FlowSet) AddConntrack() {
	var hosts []string
	for _, s := range fs.Samples {
		if s.Host != "" && !slices.Contains(hosts, s.Host) {
			hosts = append(hosts, s.Host)
		}
	}
	for _, h := range hosts {
		var rates []box.Rates
		for _, s := range fs.Samples {
			if s.Host == h {
				rates = append(rates, s.Rates)
			}
		}
		use, ok := Conntrack(h, rates)
		if !ok {
			continue
		}
		for _, f := range fs.Flows {
			if f.Result != nil && f.Result.RR != nil {
				f.Result.RR.Middle = append(f.Result.RR.Middle, use)
			}
		}
	}
}
