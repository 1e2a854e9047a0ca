package traffic

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"linerate/results"
	"linerate/wire"
)

func rrSpec(proto wire.Proto, streams int, connect bool) wire.Spec {
	return wire.Spec{Proto: proto, Direction: wire.Forward, Duration: wire.Seconds(time.Second), Streams: streams, Ports: 1, Threads: 1,
		RR: &wire.RR{Request: 1, Response: 1, Connect: connect}}
}

// TestRRCounts runs transaction tests over a veth pair: what the client
// completed is what the server answered, one for one, nothing failed, and
// the percentiles are in order.
func TestRRCounts(t *testing.T) {
	l := newLab(t, &Server{})
	for _, tc := range []struct {
		name    string
		spec    wire.Spec
		request int
	}{
		{"tcp", rrSpec(wire.TCP, 2, false), 1},
		{"udp", rrSpec(wire.UDP, 2, false), 1},
		{"connect", rrSpec(wire.TCP, 2, true), 1},
		{"sizes", func() wire.Spec { s := rrSpec(wire.TCP, 1, false); s.RR.Request, s.RR.Response = 200, 3000; return s }(), 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(context.Background(), l.config(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			rr := res.RR
			if rr == nil {
				t.Fatal("no rr figures in the result")
			}
			t.Logf("%d transactions, %.0f/s, p50 %.0f µs p99 %.0f µs, %d connections, %d timeouts, %d failed connects, %d errors",
				rr.Transactions, rr.TPS, rr.Latency.P50, rr.Latency.P99, rr.Connections, rr.Timeouts, rr.ConnectFailures, rr.Errors)
			if rr.Transactions == 0 {
				t.Fatal("no transaction completed")
			}
			if rr.Answered != rr.Transactions {
				t.Errorf("the server answered %d, the client completed %d", rr.Answered, rr.Transactions)
			}
			if rr.Timeouts+rr.ConnectFailures+rr.Errors != 0 {
				t.Errorf("failures on a clean pair: %+v", rr)
			}
			if len(rr.Streams) != tc.spec.Streams {
				t.Errorf("%d streams, want %d", len(rr.Streams), tc.spec.Streams)
			}
			var sum uint64
			for _, s := range rr.Streams {
				sum += s.Transactions
				if s.Transactions == 0 {
					t.Errorf("stream %d completed nothing", s.Stream)
				}
			}
			if sum != rr.Transactions {
				t.Errorf("streams add to %d, total %d", sum, rr.Transactions)
			}
			lt := rr.Latency
			if !(0 < lt.Min && lt.Min <= lt.P50 && lt.P50 <= lt.P90 && lt.P90 <= lt.P99 && lt.P99 <= lt.P999 && lt.P999 <= lt.Max) {
				t.Errorf("percentiles out of order: %+v", lt)
			}
			switch {
			case tc.spec.RR.Connect && rr.Connections != rr.Transactions:
				t.Errorf("%d connections for %d transactions, want one each", rr.Connections, rr.Transactions)
			case tc.spec.Proto == wire.TCP && !tc.spec.RR.Connect && rr.Connections != uint64(tc.spec.Streams):
				t.Errorf("%d connections for %d streams", rr.Connections, tc.spec.Streams)
			}
			if len(res.Intervals) == 0 || res.Intervals[0].TPS <= 0 {
				t.Errorf("no transactions in the intervals: %+v", res.Intervals)
			}
			rrSummary(t, res)
		})
	}
}

// rrSummary checks that a transaction test's summary, as its JSON says it,
// holds the transactions (each one a packet), the CPU of both ends and
// what set the rate: no zeros beside the figures under rr.
func rrSummary(t *testing.T, res *results.Result) {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary struct {
			Seconds           float64         `json:"seconds"`
			Sent              uint64          `json:"sent_packets"`
			Received          uint64          `json:"received_packets"`
			ReceivedPPS       float64         `json:"received_pps"`
			ReceivedBytes     uint64          `json:"received_bytes"`
			LimitedBy         string          `json:"limited_by"`
			ProcessCPUSeconds results.CPUCost `json:"process_cpu_seconds"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	s, rr := doc.Summary, res.RR
	if s.Seconds != rr.Seconds || s.Seconds == 0 || s.Received != rr.Transactions || s.Sent != rr.Transactions+rr.Lost() ||
		s.ReceivedPPS != rr.TPS || s.ReceivedBytes != rr.Transactions*uint64(res.Spec.RR.Response) {
		t.Errorf("summary %+v, want the transactions' (%d in %.2f s, %.0f tps)", s, rr.Transactions, rr.Seconds, rr.TPS)
	}
	if s.LimitedBy != string(results.LimitRoundTrip) {
		t.Errorf("limited_by %q, want %q", s.LimitedBy, results.LimitRoundTrip)
	}
	if s.ProcessCPUSeconds.Client == nil || s.ProcessCPUSeconds.Server == nil {
		t.Fatalf("process CPU %+v, want both ends", s.ProcessCPUSeconds)
	}
	// The cost is per million transactions completed.
	if p, want := res.Summary.ProcessCPUSecondsPerMpkt.Client, *s.ProcessCPUSeconds.Client/float64(rr.Transactions)*1e6; p == nil || !near(*p, want) {
		t.Errorf("client process per M transactions %v, want %.3f", p, want)
	}
}
