package traffic

import (
	"fmt"
	"time"

	"linerate/internal/version"
)

// newResult is the result of a run that started at start, before any
// figure.
func (r *clientRun) newResult(start time.Time) *Result {
	res := &Result{Schema: ResultSchema, Linerate: version.Version, Time: start.UTC(), Spec: r.spec, Engine: r.cfg.Engine}
	if r.spec.Proto == "udp" {
		res.FrameSize = r.spec.Payload + r.overhead
		res.Spec.ClientPorts = nil
		res.Spec.Punch = false
	}
	return res
}

// assemble puts together, once the session stopped, what both ends
// counted: per target and direction, per stream, the latency, the
// samples, the CPU cost and the verdict.
func (r *clientRun) assemble(res *Result) {
	s := r.sess
	if s.sampleErr != nil && len(s.samples) == 0 {
		res.Notes = append(res.Notes, "client samples: "+s.sampleErr.Error())
	}
	res.Notes = append(res.Notes, r.notes...)
	for _, rt := range s.samples {
		res.Samples = append(res.Samples, Sample{Side: "client", Target: -1, Rates: rt})
	}
	res.Targets = make([]TargetResult, len(r.targets))
	for i := range r.targets {
		r.assembleTarget(res, i, s.seconds())
	}
	r.latency(res)
	// The client's samples first, then each server's, in time order.
	orderSamples(res.Samples)
	r.cost(res, s.samples)
	r.dropLedger(res)
	verdict(res, s.threads())
}

// assembleTarget matches what the client and target i's server counted,
// stream by stream, in each direction; window is the client's measured
// window in seconds.
func (r *clientRun) assembleTarget(res *Result, i int, window float64) {
	t := r.targets[i]
	proto := r.spec.Proto
	tr := &res.Targets[i]
	tr.Target, tr.Address, tr.Local, tr.ServerID = t.name, t.addr.String(), t.local.String(), t.serverID
	sr, errs := t.serverResult()
	tr.Errors = append(append(tr.Errors, errs...), sr.Errors...)
	tr.Threads, tr.Machine = sr.Threads, sr.Machine
	tr.XDP = sr.XDP
	tr.ForeignPackets = sr.Foreign
	for _, sh := range t.rev {
		tr.ForeignPackets += sh.e.res.foreign
	}
	if tr.ForeignPackets > 0 {
		tr.Notes = append(tr.Notes, fmt.Sprintf("%d test datagrams came from addresses other than the two ends' and were not counted", tr.ForeignPackets))
	}
	if t.spec.clientSends() {
		var stats []TCPStat
		if proto == "tcp" {
			stats = gatherTCP(t.fwd)
		}
		tot, streams := combine(i, Forward, proto, t.sent, sr.Received, stats, window, r.overhead)
		tr.Forward = &tot
		res.Streams = append(res.Streams, streams...)
	}
	if t.spec.serverSends() {
		var stats []TCPStat
		for _, s := range sr.TCP {
			if s.Side == "sender" {
				stats = append(stats, s)
			}
		}
		w := sr.Seconds
		if w == 0 {
			w = window
		}
		tot, streams := combine(i, Reverse, proto, sr.Sent, gather(t.rev), stats, w, r.overhead)
		tr.Reverse = &tot
		res.Streams = append(res.Streams, streams...)
	}
	for _, d := range []*Totals{tr.Forward, tr.Reverse} {
		if d != nil {
			tr.Totals.add(*d)
		}
	}
	res.Summary.Totals.add(tr.Totals)
	for _, s := range sr.Samples {
		res.Samples = append(res.Samples, Sample{Side: "server", Target: i, Rates: s})
	}
	if sr.SampleError != "" {
		tr.Notes = append(tr.Notes, "server samples: "+sr.SampleError)
	}
}

// latency summarizes the probes' round trips, per target and over all.
func (r *clientRun) latency(res *Result) {
	var all [2][]time.Duration
	var sent [2]int
	for i, t := range r.targets {
		p := t.prober
		if p == nil {
			continue
		}
		tr := &res.Targets[i]
		tr.LatencyIdle, tr.LatencyLoad = p.latency()
		for ph := range all {
			all[ph] = append(all[ph], p.rtts[ph]...)
			sent[ph] += p.sent[ph]
		}
	}
	if sent[phaseIdle] > 0 {
		res.Summary.LatencyIdle = summarize(all[phaseIdle], sent[phaseIdle])
	}
	if sent[phaseLoad] > 0 {
		res.Summary.LatencyLoad = summarize(all[phaseLoad], sent[phaseLoad])
	}
}

// combine matches a direction's sender and receiver counts stream by
// stream.
func combine(target int, dir, proto string, sent, recv []Count, stats []TCPStat, seconds float64, overhead int) (Totals, []StreamResult) {
	n := max(len(sent), len(recv))
	var tot Totals
	tot.Seconds = seconds
	var out []StreamResult
	for i := range n {
		var s, r Count
		if i < len(sent) {
			s = sent[i]
		}
		if i < len(recv) {
			r = recv[i]
		}
		st := StreamResult{Target: target, Stream: i, Direction: dir}
		t := &st.Totals
		t.Seconds = seconds
		t.SentPackets, t.SentBytes = s.Packets, s.Bytes
		t.ReceivedPackets, t.ReceivedBytes = r.Packets, r.Bytes
		if proto == "udp" {
			t.Reordered, t.Duplicates = r.Reorder, r.Dup
			if s.Packets > r.Unique {
				t.LostPackets = s.Packets - r.Unique
			}
			t.sentBits = float64(s.Bytes+s.Packets*uint64(overhead)) * 8
			t.recvBits = float64(r.Bytes+r.Packets*uint64(overhead)) * 8
		} else {
			// A byte stream: each end counts what it wrote or read between
			// the start and the end of the window by its own clock. The
			// bytes in flight at either edge are in one count and not the
			// other, so the two differ by at most what was queued
			// (written, not yet read) at the window's start or end.
			t.sentBits = float64(s.Bytes) * 8
			t.recvBits = float64(r.Bytes) * 8
			for j := range stats {
				if stats[j].Stream == i {
					st.TCP = &stats[j]
					t.Retransmits = uint64(stats[j].Retransmits)
				}
			}
		}
		t.rates()
		tot.add(*t)
		out = append(out, st)
	}
	tot.rates()
	return tot, out
}
