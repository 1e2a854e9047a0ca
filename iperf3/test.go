package iperf3

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"linerate/box"
	"linerate/internal/version"
	"linerate/results"
	"linerate/wire"
)

// Sampling records this machine's counters once a second (package
// sample); it has the shape of Sampling in linerate/traffic/session.
type Sampling func(each func(box.Rates)) (stop func() ([]box.Rates, error))

// test is one iperf3 test as either end sees it: its parameters, its
// streams in the order both ends created them, and the clock and counters
// of the measured time.
type test struct {
	p       *Params
	flow    flow
	client  bool // this end is the client
	v4      bool
	streams []*stream

	start, end time.Time
	cpu0       unix.Rusage

	mu        sync.Mutex
	intervals []results.IntervalStats
}

// newTest reads what the parameters ask of the streams.
func newTest(p *Params, client, v4 bool) *test {
	f := flow{udp: p.UDP, wide: p.UDPCounters64 != 0, size: int(p.Len), rate: p.Bandwidth}
	if f.size == 0 {
		f.size = 128 << 10 // DEFAULT_TCP_BLKSIZE
		if f.udp {
			f.size = 1460 // DEFAULT_UDP_BLKSIZE
		}
	}
	if f.udp {
		f.size = max(f.size, headerLen(f.wide))
	}
	return &test{p: p, flow: f, client: client, v4: v4}
}

// streamCount is how many data streams the test has.
func (t *test) streamCount() int {
	n := int(t.p.Parallel)
	if t.p.Bidir {
		n *= 2
	}
	return n
}

// clientSends says whether the client sends on the i-th stream: all of
// them forward, none in reverse, the first half with --bidir (the client
// opens its senders first, the server takes its receivers first).
func (t *test) clientSends(i int) bool {
	switch {
	case t.p.Reverse:
		return false
	case t.p.Bidir:
		return i < int(t.p.Parallel)
	}
	return true
}

// newStream is the i-th stream, sending when this end sends on it.
func (t *test) newStream(i int) *stream {
	s := &stream{id: streamID(i), send: t.clientSends(i) == t.client}
	t.streams = append(t.streams, s)
	return s
}

// dir is the direction of s: forward when the client sends on it.
func (t *test) dir(s *stream) wire.Direction {
	if s.send == t.client {
		return wire.Forward
	}
	return wire.Reverse
}

// begin marks the start of the measured time and starts the streams and
// the interval clock; each gets every second's figures.
func (t *test) begin(each func(results.IntervalStats)) (*running, func()) {
	_ = unix.Getrusage(unix.RUSAGE_SELF, &t.cpu0)
	t.start = time.Now()
	r := t.flow.start(t.streams)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { t.tick(done, each) })
	return r, func() { close(done); wg.Wait() }
}

// tick files one interval a second from this end's own counters: what it
// sent and received. The far end's side of each direction is not known
// until the results (an iperf3 peer reports no intervals).
func (t *test) tick(done <-chan struct{}, each func(results.IntervalStats)) {
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	var last [2][2]uint64 // sent, received × packets, bytes
	var sends, recvs bool
	for _, s := range t.streams {
		sends, recvs = sends || s.send, recvs || !s.send
	}
	for {
		select {
		case <-done:
			return
		case now := <-tk.C:
			var cur [2][2]uint64
			for _, s := range t.streams {
				k := 1
				if s.send {
					k = 0
				}
				cur[k][0] += s.packets.Load()
				cur[k][1] += s.bytes.Load()
			}
			iv := results.IntervalStats{T: now.Sub(t.start).Seconds(), SentUnknown: !sends, ReceivedUnknown: !recvs}
			iv.SentPPS, iv.SentBPS = t.rates(cur[0], last[0])
			iv.ReceivedPPS, iv.ReceivedBPS = t.rates(cur[1], last[1])
			last = cur
			iv.ClearUnknown()
			t.mu.Lock()
			t.intervals = append(t.intervals, iv)
			t.mu.Unlock()
			if each != nil {
				each(iv)
			}
		}
	}
}

// rates are one second's packets and bits per second; UDP bits count
// whole Ethernet frames, as linerate's do.
func (t *test) rates(cur, last [2]uint64) (pps, bps float64) {
	pk, by := float64(cur[0]-last[0]), float64(cur[1]-last[1])
	if t.flow.udp {
		by += pk * float64(wire.UDPOverhead(t.v4))
	}
	return pk, by * 8
}

// wrapUp, once the data stopped, stops the sampler (nil: none) and reads
// each sending TCP stream's TCP_INFO.
func (t *test) wrapUp(stopSampling func() ([]box.Rates, error)) (samples []box.Rates, err error) {
	if stopSampling != nil {
		samples, err = stopSampling()
	}
	for _, s := range t.streams {
		if s.send && s.tcp != nil {
			readTCPInfo(s)
		}
	}
	return samples, err
}

// finish marks the end of the measured time.
func (t *test) finish() { t.end = time.Now() }

func (t *test) seconds() float64 { return t.end.Sub(t.start).Seconds() }

// cpuPercent is this process's CPU use over the test, as iperf3 reports
// its own: total, user, system, in percent of one CPU's wall time.
func (t *test) cpuPercent() (total, user, system float64) {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	wall := t.seconds()
	if wall <= 0 {
		return 0, 0, 0
	}
	tv := func(a, b unix.Timeval) float64 {
		return float64(b.Sec-a.Sec) + float64(b.Usec-a.Usec)/1e6
	}
	user = tv(t.cpu0.Utime, ru.Utime) / wall * 100
	system = tv(t.cpu0.Stime, ru.Stime) / wall * 100
	return user + system, user, system
}

// report is this end's results message.
func (t *test) report() *Results {
	r := &Results{SenderHasRetransmits: -1, Streams: []StreamReport{}}
	r.CPUTotal, r.CPUUser, r.CPUSystem = t.cpuPercent()
	for _, s := range t.streams {
		sr := StreamReport{ID: s.id, Bytes: float64(s.bytes.Load()), Retransmits: -1, EndTime: t.seconds()}
		switch {
		case s.send && !t.flow.udp:
			r.SenderHasRetransmits = 0
			if s.tcpInfo != nil {
				r.SenderHasRetransmits = 1
				sr.Retransmits = float64(s.tcpInfo.Total_retrans)
			}
		case s.send:
			r.SenderHasRetransmits = 0
			sr.Packets = float64(s.packets.Load())
		case t.flow.udp:
			sr.Packets, sr.Errors, sr.Jitter = float64(s.rx.maxSeq), float64(s.rx.lost), s.rx.jitter
		}
		r.Streams = append(r.Streams, sr)
	}
	return r
}

// ids are the test's stream ids, in order.
func (t *test) ids() []int {
	ids := make([]int, len(t.streams))
	for i, s := range t.streams {
		ids[i] = s.id
	}
	return ids
}

// spec is the test as linerate describes one.
func (t *test) spec() wire.Spec {
	sp := wire.Spec{Proto: wire.TCP, Direction: wire.Forward, Duration: wire.Seconds(time.Duration(t.p.Time) * time.Second),
		Warmup: wire.Seconds(time.Duration(t.p.Omit) * time.Second), Payload: t.flow.size, Streams: int(t.p.Parallel), Ports: 1, Threads: 1}
	if t.flow.udp {
		sp.Proto = wire.UDP
	}
	switch {
	case t.p.Reverse:
		sp.Direction = wire.Reverse
	case t.p.Bidir:
		sp.Direction = wire.Bidir
	}
	if t.flow.rate > 0 {
		// iperf3's rate is per stream and counts payload; linerate's is
		// per direction and counts frames (UDP).
		bps := t.flow.rate * t.p.Parallel
		if t.flow.udp {
			bps *= float64(t.flow.size+wire.UDPOverhead(t.v4)) / float64(t.flow.size)
		}
		sp.Rate = wire.Rate{BPS: bps}
	}
	return sp
}

// result puts together what both ends counted: this end's streams, the
// peer's results message (nil when the test ended before it came), this
// end's samples (side says which end this is).
func (t *test) result(peer *Results, peerName string, samples []box.Rates, sampleErr error) *results.Result {
	side := results.SideServer
	if t.client {
		side = results.SideClient
	}
	res := &results.Result{Schema: results.ResultSchema, Linerate: version.Version, Time: t.start.UTC(), Spec: t.spec(), Engine: "iperf3"}
	if t.flow.udp {
		res.FrameSize = t.flow.size + wire.UDPOverhead(t.v4)
	}
	res.Intervals = t.intervals
	res.Targets = []results.TargetResult{{}}
	tr := &res.Targets[0]
	ip := &results.IPerf3{Peer: peerName, Streams: []results.IPerf3Stream{}}
	tr.IPerf3 = ip
	overhead := 0
	if t.flow.udp {
		overhead = wire.UDPOverhead(t.v4)
	}
	for _, dir := range []wire.Direction{wire.Forward, wire.Reverse} {
		var sent, recv []results.Count
		var stats []results.TCPStat
		for _, s := range t.streams {
			if t.dir(s) != dir {
				continue
			}
			i := len(sent)
			local := results.Count{Stream: i, Packets: s.packets.Load(), Bytes: s.bytes.Load()}
			var far results.Count
			var pr *StreamReport
			if peer != nil {
				pr = peer.byID(s.id)
			}
			if pr != nil {
				far = results.Count{Stream: i, Packets: uint64(pr.Packets), Bytes: uint64(pr.Bytes)}
			}
			ip.Streams = append(ip.Streams, t.iperf3Stream(s, dir, pr))
			if st := s.tcpStat(i); st != nil && s.send {
				stats = append(stats, *st)
			} else if pr != nil && !s.send && !t.flow.udp && pr.Retransmits >= 0 {
				stats = append(stats, results.TCPStat{Stream: i, Side: results.SenderEnd, Retransmits: uint32(pr.Retransmits)})
			}
			if s.send {
				if t.flow.udp && pr != nil {
					// iperf3's receiver counts the highest number seen and
					// the gaps; what it received is their difference.
					far.Packets = uint64(max(0, pr.Packets-max(0, pr.Errors)))
					far.Unique = far.Packets
				}
				sent, recv = append(sent, local), append(recv, far)
			} else {
				local.Unique, local.Reorder = local.Packets, s.rx.outOfOrder
				sent, recv = append(sent, far), append(recv, local)
			}
		}
		if len(sent) == 0 {
			continue
		}
		tot, streams := results.Combine(0, dir, res.Spec.Proto, sent, recv, stats, t.seconds(), overhead)
		if dir == wire.Forward {
			tr.Forward = &tot
		} else {
			tr.Reverse = &tot
		}
		tr.Totals.Add(tot)
		res.Streams = append(res.Streams, streams...)
	}
	res.Summary.Totals.Add(tr.Totals)
	for _, s := range samples {
		res.Samples = append(res.Samples, results.Sample{Side: side, Target: 0, Rates: s})
	}
	if sampleErr != nil && len(samples) == 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%s samples: %v", side, sampleErr))
	}
	if peer != nil {
		ip.CPUTotal, ip.CPUUser, ip.CPUSystem = &peer.CPUTotal, &peer.CPUUser, &peer.CPUSystem
	} else {
		res.Errors = append(res.Errors, "the iperf3 "+peerName+" sent no results: its figures are unknown")
	}
	far := "server"
	if !t.client {
		far = "client"
	}
	res.Notes = append(res.Notes, fmt.Sprintf("the far end is a plain iperf3 %s: it reports its counts and its process's CPU use at the end (targets[].iperf3), "+
		"but no samples, no per-CPU use, no drop counters and no intervals; the interval figures are this end's", far))
	if t.client {
		results.Cost(res, samples, "")
	} else {
		results.Cost(res, nil, "")
	}
	results.OrderSamples(res.Samples)
	results.Verdict(res, nil)
	return res
}

// iperf3Stream is stream s as iperf3 figures it, from this end's counts
// and the peer's report.
func (t *test) iperf3Stream(s *stream, dir wire.Direction, pr *StreamReport) results.IPerf3Stream {
	st := results.IPerf3Stream{ID: s.id, Direction: dir, Seconds: t.seconds()}
	if s.send {
		st.SentBytes, st.SentPackets = s.bytes.Load(), s.packets.Load()
		if pr != nil {
			st.ReceivedBytes = uint64(pr.Bytes)
			if t.flow.udp {
				st.LostPackets, st.JitterMS = uint64(max(0, pr.Errors)), pr.Jitter*1000
			}
		}
	} else {
		st.ReceivedBytes = s.bytes.Load()
		if t.flow.udp {
			st.LostPackets, st.JitterMS = s.rx.lost, s.rx.jitter*1000
		}
		if pr != nil {
			st.SentBytes, st.SentPackets = uint64(pr.Bytes), uint64(pr.Packets)
		}
	}
	if t.flow.udp && st.SentPackets > 0 {
		st.LostPercent = float64(st.LostPackets) / float64(st.SentPackets) * 100
	}
	return st
}
