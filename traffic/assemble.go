package traffic

import (
	"fmt"
	"time"

	"linerate/box"
	"linerate/internal/version"
	"linerate/results"
	"linerate/traffic/rr"
	"linerate/traffic/tcp"
	"linerate/wire"
)

// newResult is the result of a run that started at start, before any
// figure.
func (r *clientRun) newResult(start time.Time) *results.Result {
	res := &results.Result{Schema: results.ResultSchema, Linerate: version.Version, Time: start.UTC(), Spec: r.spec, Engine: r.cfg.Engine}
	if r.spec.Proto == wire.UDP && r.spec.RR == nil {
		res.FrameSize = r.spec.Payload + r.overhead
		res.Spec.ClientPorts = nil
		res.Spec.Punch = false
	}
	return res
}

// assemble puts together, once the session stopped, what both ends
// counted: per target and direction, per stream, the latency, the
// samples, the CPU cost and the verdict.
func (r *clientRun) assemble(res *results.Result) {
	s := r.sess
	samples, _, sampleErr := s.Samples()
	if sampleErr != nil && len(samples) == 0 {
		res.Notes = append(res.Notes, "client samples: "+sampleErr.Error())
	}
	res.Notes = append(res.Notes, r.notes...)
	for _, rt := range samples {
		res.Samples = append(res.Samples, results.Sample{Side: results.SideClient, Target: -1, Rates: rt})
	}
	res.Targets = make([]results.TargetResult, len(r.targets))
	if r.spec.RR != nil {
		r.assembleRR(res, samples)
		return
	}
	for i := range r.targets {
		r.assembleTarget(res, i, r.targetWindow(res, i))
	}
	r.linkEvents(res)
	if n := s.HeldBack(); n > 0 {
		res.Summary.HeldBackLinkDown = n
		res.Notes = append(res.Notes, fmt.Sprintf("%d datagrams held back while the link was down: the rate allowed them, the link did not; not sent, not counted, and not sent late in a burst", n))
	}
	r.latency(res)
	// The client's samples first, then each server's, in time order.
	results.OrderSamples(res.Samples)
	results.Cost(res, samples, r.cfg.Machine)
	r.dropLedger(res)
	results.Verdict(res, s.Threads())
	if r.cfg.RRUL {
		var probes []results.ProbeSample
		for i, t := range r.targets {
			if t.prober != nil {
				probes = append(probes, t.prober.OverTime(s.Timing().Start, i)...)
			}
		}
		res.RRUL = results.NewRRUL(res, probes)
	}
}

// targetWindow is the seconds target i's figures cover. A run a dead
// server stopped early cuts the window at that server's last report (its
// figures, and the run's, end there); a live server counted until the
// client stopped its senders, and so did the client for it: its figures
// cover that longer window, said in a note.
func (r *clientRun) targetWindow(res *results.Result, i int) float64 {
	s := r.sess
	w := s.Seconds()
	if res.StoppedEarly == nil || r.targets[i].dead() {
		return w
	}
	live := s.SendersSeconds()
	if live > w {
		warm := r.spec.Warmup.D().Seconds()
		res.Targets[i].Notes = append(res.Targets[i].Notes, fmt.Sprintf(
			"the run stopped early at %.1f s (another server failed); this server was alive and its figures cover %.2f s, to %.1f s when the senders stopped, not the %.2f s to the cut",
			w+warm, live, live+warm, w))
		return live
	}
	return w
}

// assembleTarget matches what the client and target i's server counted,
// stream by stream, in each direction; window is the client's measured
// window in seconds.
func (r *clientRun) assembleTarget(res *results.Result, i int, window float64) {
	t := r.targets[i]
	proto := r.spec.Proto
	tr := &res.Targets[i]
	tr.Target, tr.Address, tr.Local, tr.ServerID = t.name, t.addr.String(), t.local.String(), t.serverID
	sr, errs, died := t.serverResult()
	tr.Errors = append(append(tr.Errors, errs...), sr.Errors...)
	if died {
		r.assembleDead(res, i, window)
		return
	}
	tr.Threads, tr.Machine = sr.Threads, sr.Machine
	tr.XDP = sr.XDP
	tr.RxQueues = sr.RxQueues
	tr.AFXDP = t.afxdp
	tr.ForeignPackets = sr.Foreign
	for _, sh := range t.rev {
		tr.ForeignPackets += sh.e.Result().Foreign
	}
	if tr.ForeignPackets > 0 {
		tr.Notes = append(tr.Notes, fmt.Sprintf("%d test datagrams came from addresses other than the two ends' and were not counted", tr.ForeignPackets))
	}
	if t.spec.ClientSends() {
		var stats []results.TCPStat
		if proto == wire.TCP {
			stats = gatherTCP(t.fwd)
		}
		tot, streams := results.Combine(i, wire.Forward, proto, t.sent, sr.Received, stats, window, r.overhead)
		tr.Forward = &tot
		res.Streams = append(res.Streams, streams...)
	}
	if t.spec.ServerSends() {
		stats := tcp.SenderEnd.Of(sr.TCP)
		w := sr.Seconds
		if w == 0 {
			w = window
		}
		tot, streams := results.Combine(i, wire.Reverse, proto, sr.Sent, gather(t.rev), stats, w, r.overhead)
		tr.Reverse = &tot
		res.Streams = append(res.Streams, streams...)
	}
	addUp(res, tr)
	r.doubt(tr, r.doubtServer(t, sr, window))
	for _, e := range sr.LinkEvents {
		e.Side, e.Target = results.SideServer, i
		res.LinkEvents = append(res.LinkEvents, e)
	}
	for _, s := range sr.Samples {
		res.Samples = append(res.Samples, results.Sample{Side: results.SideServer, Target: i, Rates: s})
	}
	if sr.SampleError != "" {
		tr.Notes = append(tr.Notes, "server samples: "+sr.SampleError)
	}
}

// assembleDead puts together the figures of target i whose server died
// mid-run. Both ends' figures end at the server's last report: the
// server's are that report's, the client's its own counts at the same
// moment of the run (read from the session's trail), over the same span
// from the report that opened the window; what the client sent or read
// after the server stopped counting is in no figure. The reports carry
// totals, so the target has no per-stream figures. The loss is not
// counted: what was on the path or in a socket buffer at the last report
// cannot be told from what was lost.
func (r *clientRun) assembleDead(res *results.Result, i int, window float64) {
	t := r.targets[i]
	tr := &res.Targets[i]
	proto := r.spec.Proto
	srvSent, srvRecv := t.reported()
	from, to := t.reportSpan(r.sess.Timing().Start)
	var d results.Doubts
	apart := func(a, b uint64) int64 { return int64(a) - int64(b) }
	var gap int64
	if t.spec.ClientSends() {
		sent := r.countedBetween(t.fwd, from, to)
		tot, _ := results.Combine(i, wire.Forward, proto, []results.Count{sent}, []results.Count{srvRecv}, nil, window, r.overhead)
		tot.LossNotCounted()
		tr.Forward = &tot
		doubtCounts(&d, proto, []results.Count{sent}, []results.Count{srvRecv}, false)
		gap += apart(sent.Packets, srvRecv.Packets)
	}
	if t.spec.ServerSends() {
		recv := r.countedBetween(t.rev, from, to)
		tot, _ := results.Combine(i, wire.Reverse, proto, []results.Count{srvSent}, []results.Count{recv}, nil, window, r.overhead)
		tot.LossNotCounted()
		tr.Reverse = &tot
		doubtCounts(&d, proto, []results.Count{srvSent}, []results.Count{recv}, true)
		doubtRate(&d, proto, []results.Count{srvSent}, window)
		gap += apart(srvSent.Packets, recv.Packets)
	}
	note := fmt.Sprintf("the server failed mid-run: both ends' figures end at its last report, at %.1f s (the client's read at the same moment of the run); no per-stream figures; the loss is not counted: what was on the path or in a socket buffer then cannot be told from what was lost", window+r.spec.Warmup.D().Seconds())
	if proto == wire.UDP {
		note += fmt.Sprintf(" (the sender counted %+d datagrams more than the receiver)", gap)
	}
	tr.Notes = append(tr.Notes, note)
	addUp(res, tr)
	r.doubt(tr, d)
}

// doubt marks a target whose server's figures are not credible, and
// keeps the error for the run's.
func (r *clientRun) doubt(tr *results.TargetResult, d results.Doubts) {
	if err := d.Mark(tr); err != nil {
		r.notCredible = append(r.notCredible, fmt.Errorf("%s: %w", tr.Target, err))
	}
}

// doubtServer checks what a server reported against what the client
// counted and against what a host can do (results.Doubts): what it
// received of each stream the client sent, what it sent of each stream
// the client received, the window it measured its sending over, and its
// threads' and CPUs' use. window is the client's.
func (r *clientRun) doubtServer(t *target, sr *results.ServerResult, window float64) results.Doubts {
	var d results.Doubts
	proto := r.spec.Proto
	if t.spec.ClientSends() {
		doubtCounts(&d, proto, t.sent, sr.Received, false)
	}
	if t.spec.ServerSends() {
		doubtCounts(&d, proto, sr.Sent, gather(t.rev), true)
		w := window
		if sr.Seconds != 0 {
			d.Seconds("the server's window", sr.Seconds, window)
			w = sr.Seconds
		}
		doubtRate(&d, proto, sr.Sent, w)
	}
	for _, th := range sr.Threads {
		// A thread's CPU time over its wall time, each read by its own
		// clock: a tenth beyond one is let through.
		d.Percent(fmt.Sprintf("the server's %s thread's busy share", th.Role), th.Busy, 1.1)
	}
	for _, rt := range sr.Samples {
		for _, c := range rt.CPU {
			for _, f := range []struct {
				name string
				v    float64
			}{{"usr", c.User}, {"sys", c.System}, {"irq", c.IRQ}, {"softirq", c.SoftIRQ}, {"idle", c.Idle}, {"iowait", c.IOWait}, {"steal", c.Steal}, {"busy", c.Busy}} {
				d.Percent(fmt.Sprintf("the server's CPU %d %s percent", c.ID, f.name), f.v, 100)
			}
		}
	}
	return d
}

// doubtCounts checks a direction's receiver counts against its sender's,
// stream by stream as results.Combine pairs them; peerSends says the
// server sent (its figures are the senders') or received. A TCP receiver
// may read in the window what was sent in the warmup; a UDP receiver
// tells warmup datagrams apart by their flag.
func doubtCounts(d *results.Doubts, proto wire.Proto, sent, recv []results.Count, peerSends bool) {
	for i := range max(len(sent), len(recv)) {
		var s, c results.Count
		if i < len(sent) {
			s = sent[i]
		}
		if i < len(recv) {
			c = recv[i]
		}
		who := fmt.Sprintf("the server's stream %d", i)
		warm := s.Warmup
		if proto == wire.UDP {
			warm = 0
		}
		if peerSends {
			d.Sent(who, "bytes", s.Bytes, warm, c.Bytes)
			if proto == wire.UDP {
				d.Sent(who, "datagrams", s.Packets, 0, c.Unique)
			}
			continue
		}
		d.Received(who, "bytes", c.Bytes, s.Bytes, warm)
		if proto == wire.UDP {
			d.Received(who, "datagrams", c.Packets, s.Packets, 0)
			if c.Unique > c.Packets || c.Dup > c.Packets || c.Reorder > c.Packets {
				d.Addf("%s: %d distinct, %d duplicate and %d reordered of %d datagrams received", who, c.Unique, c.Dup, c.Reorder, c.Packets)
			}
		}
	}
}

// doubtRate checks what a server says it sent in seconds against what a
// host can move.
func doubtRate(d *results.Doubts, proto wire.Proto, sent []results.Count, seconds float64) {
	all := sum(sent)
	if proto != wire.UDP {
		all.Packets = 0 // a TCP sender counts no packets
	}
	d.Rate("the server sent", all.Bytes, all.Packets, seconds)
}

// linkEvents puts the client's link events before the servers' (added
// per target), and notes why the client's watch saw nothing.
func (r *clientRun) linkEvents(res *results.Result) {
	evs, err := r.sess.LinkEvents()
	if err != nil {
		res.Notes = append(res.Notes, "client "+err.Error())
	}
	res.LinkEvents = append(evs, res.LinkEvents...)
}

// addUp adds a target's directions into its totals and the summary's.
func addUp(res *results.Result, tr *results.TargetResult) {
	for _, d := range []*results.Totals{tr.Forward, tr.Reverse} {
		if d != nil {
			tr.Totals.Add(*d)
		}
	}
	res.Summary.Totals.Add(tr.Totals)
}

// latency summarizes the probes' round trips, per target and over all.
func (r *clientRun) latency(res *results.Result) {
	var all [2][]time.Duration
	var sent [2]int
	for i, t := range r.targets {
		p := t.prober
		if p == nil {
			continue
		}
		tr := &res.Targets[i]
		tr.LatencyIdle, tr.LatencyLoad = p.Latency()
		for ph := range all {
			rtts, n := p.Phase(ph)
			all[ph] = append(all[ph], rtts...)
			sent[ph] += n
		}
	}
	if sent[rr.PhaseIdle] > 0 {
		res.Summary.LatencyIdle = results.Summarize(all[rr.PhaseIdle], sent[rr.PhaseIdle])
	}
	if sent[rr.PhaseLoad] > 0 {
		res.Summary.LatencyLoad = results.Summarize(all[rr.PhaseLoad], sent[rr.PhaseLoad])
	}
}

// dropLedger gathers both ends' drop counters into the result and, for a
// UDP test, builds the drop ledger: where the lost datagrams died.
func (r *clientRun) dropLedger(res *results.Result) {
	client := r.sess.Drops.Result(r.sess.Refused())
	if client != nil {
		res.Drops = append(res.Drops, *client)
	}
	for i, t := range r.targets {
		sr, _, _ := t.serverResult()
		if sr.Drops != nil {
			d := *sr.Drops
			d.Target = i
			res.Drops = append(res.Drops, d)
		}
	}
	res.BuildLedger(len(r.targets) > 1, true)
}

// assembleRR puts together a transaction test: per target what the
// server answered and its samples, then the transactions, their latency
// and failures over every target's streams; the summary counts the
// transactions, and the CPU figures the client's samples and the servers'.
func (r *clientRun) assembleRR(res *results.Result, samples []box.Rates) {
	rr := &results.RR{Seconds: r.sess.Seconds()}
	var all results.Histogram
	for i, t := range r.targets {
		tr := &res.Targets[i]
		tr.Target, tr.Address, tr.Local, tr.ServerID = t.name, t.addr.String(), t.local.String(), t.serverID
		sr, errs, _ := t.serverResult()
		tr.Errors = append(append(tr.Errors, errs...), sr.Errors...)
		tr.Machine = sr.Machine
		for _, c := range sr.Received {
			rr.Answered += c.Packets
		}
		if sr.RR != nil {
			rr.Connections += sr.RR.Connections
		}
		for _, s := range sr.Samples {
			res.Samples = append(res.Samples, results.Sample{Side: results.SideServer, Target: i, Rates: s})
		}
		if sr.SampleError != "" {
			tr.Notes = append(tr.Notes, "server samples: "+sr.SampleError)
		}
		if t.rr != nil {
			t.rr.Tally(rr, &all)
		}
	}
	if rr.Seconds > 0 {
		rr.TPS = float64(rr.Transactions) / rr.Seconds
	}
	rr.Latency = all.Latency()
	res.RR = rr
	r.linkEvents(res)
	results.OrderSamples(res.Samples)
	results.SummarizeRR(res, samples, r.cfg.Machine)
}
