package traffic

import (
	"context"
	"math"
	"testing"
	"time"

	"linerate/results"
	"linerate/traffic/session"
	"linerate/traffic/session/sessiontest"
	"linerate/wire"
)

// fakeRun is a client run over fake flows on a fake clock: no sockets, no
// servers (their reports and results are filed by hand).
func fakeRun(t *testing.T, sp wire.Spec, targets int) (*clientRun, *sessiontest.Clock, *sessiontest.Log) {
	t.Helper()
	clk, log := sessiontest.NewClock(), &sessiontest.Log{}
	r := newClientRun(&Config{Engine: "socket"}, clk)
	r.spec = sp
	r.overhead = wire.UDPOverhead(true)
	for i := range targets {
		r.targets = append(r.targets, &target{idx: i, name: string(rune('a' + i)), spec: sp, filed: make(chan struct{}, 1)})
	}
	t.Cleanup(func() { _ = r.sess.Close() })
	return r, clk, log
}

// TestClientIntervals: each tick is one interval line: the client's own
// counts over the last second of the fake clock plus what the servers
// reported over their last second, in frames on the wire; the lines that
// hold any of the warmup say so.
func TestClientIntervals(t *testing.T) {
	sp := wire.Spec{Proto: "udp", Direction: wire.Forward, Payload: 18, Streams: 1, Ports: 1, Threads: 1}
	r, clk, log := fakeRun(t, sp, 1)
	lines := make(chan results.IntervalStats, 10)
	r.cfg.OnInterval = func(iv results.IntervalStats) { lines <- iv }
	snd := sessiontest.NewFlow("send", true, log, clk)
	r.targets[0].fwd = []share{{e: r.sess.Add(session.Sending, "a", snd)}}
	tm := r.sess.Start(1500*time.Millisecond, time.Second)
	res := r.newResult(tm.Start)
	prev := r.sess.Progress(tm.Start)
	done := make(chan bool)
	go func() {
		done <- r.sess.Run(context.Background(), r.sess.Over(), func(now time.Time) { r.interval(res, now, &prev) })
	}()
	sessiontest.WaitFor(t, "the ticker", func() bool { _, n := clk.Pending(); return n > 0 })
	sessiontest.WaitFor(t, "the sender", func() bool { return log.At("run:send") >= 0 })
	report := func(t float64, pk uint64) {
		r.targets[0].file(&wire.Interval{T: t, ReceivedPackets: pk, ReceivedBytes: pk * 18})
	}
	snd.Pk.Store(1000)
	snd.By.Store(18000)
	report(1, 990)
	clk.Advance(time.Second)
	iv := <-lines
	wire := float64(18 + r.overhead)
	if iv.T != 1 || !iv.Warmup || iv.SentPPS != 1000 || iv.ReceivedPPS != 990 || iv.SentBPS != 1000*wire*8 || iv.ReceivedBPS != 990*wire*8 {
		t.Errorf("first line %+v: want t 1, warmup, 1000 pps sent, 990 received, %.0f and %.0f bit/s", iv, 1000*wire*8, 990*wire*8)
	}
	snd.Pk.Store(3000)
	snd.By.Store(54000)
	report(2, 2970)
	clk.Advance(time.Second)
	iv = <-lines
	if iv.T != 2 || !iv.Warmup || iv.SentPPS != 2000 || iv.ReceivedPPS != 1980 {
		t.Errorf("second line %+v: want t 2, warmup (its first half is), 2000 pps sent, 1980 received", iv)
	}
	clk.Advance(500 * time.Millisecond)
	if <-done {
		t.Fatal("interrupted")
	}
	if len(res.Intervals) != 2 {
		t.Errorf("%d intervals in the result, want 2", len(res.Intervals))
	}
}

// TestClientAssembles: one sender shared by two targets (as the socket
// engine's is) and a ring-like sender that numbers its stream 2: each
// target gets its own streams' counts, told to its server at between, and
// matched with what the server received.
func TestClientAssembles(t *testing.T) {
	sp := wire.Spec{Proto: "udp", Direction: wire.Forward, Payload: 18, Streams: 2, Ports: 1, Threads: 1}
	r, clk, log := fakeRun(t, sp, 2)
	r.sess.Settle = 0
	shared := sessiontest.NewFlow("shared", true, log, clk)
	shared.Res = session.Result{Counts: []results.Count{{Stream: 0, Packets: 100}, {Stream: 1, Packets: 50}, {Stream: 0, Packets: 70}, {Stream: 1, Packets: 30}}}
	e := r.sess.Add(session.Sending, "", shared)
	a, b := r.targets[0], r.targets[1]
	a.fwd = []share{{e: e, from: 0, n: 2}}
	b.fwd = []share{{e: e, from: 2, n: 2}}
	ring := sessiontest.NewFlow("ring", true, log, clk)
	ring.Res = session.Result{Counts: []results.Count{{Stream: 3, Packets: 5}}}
	b.fwd = append(b.fwd, share{e: r.sess.Add(session.Sending, "b", ring)})
	a.result = &results.ServerResult{Seconds: 1, Received: []results.Count{{Stream: 0, Packets: 100, Unique: 100}, {Stream: 1, Packets: 45, Unique: 45}}}
	b.result = &results.ServerResult{Seconds: 1, Received: []results.Count{{Stream: 0, Packets: 70, Unique: 70}, {Stream: 1, Packets: 30, Unique: 30}, {}, {Stream: 3, Packets: 5, Unique: 5}}}
	tm := r.sess.Start(0, time.Second)
	res := r.newResult(tm.Start)
	sessiontest.WaitFor(t, "the senders", func() bool { return log.At("run:shared") >= 0 && log.At("run:ring") >= 0 })
	clk.Advance(time.Second)
	r.sess.Stop(false, func() {
		for _, t := range r.targets {
			t.sent = gather(t.fwd)
		}
	})
	r.assemble(res)
	if len(b.sent) != 4 || b.sent[0].Packets != 70 || b.sent[1].Packets != 30 || b.sent[2].Packets != 0 || b.sent[3].Packets != 5 || b.sent[2].Stream != 2 {
		t.Errorf("b was told %+v, want streams 0-3 with 70, 30, 0, 5 packets", b.sent)
	}
	fa, fb := res.Targets[0].Forward, res.Targets[1].Forward
	if fa == nil || fb == nil {
		t.Fatalf("forward figures %+v %+v", fa, fb)
	}
	if fa.SentPackets != 150 || fa.LostPackets != 5 || fb.SentPackets != 105 || fb.LostPackets != 0 {
		t.Errorf("a sent %d lost %d, b sent %d lost %d: want 150, 5, 105, 0", fa.SentPackets, fa.LostPackets, fb.SentPackets, fb.LostPackets)
	}
	s := res.Summary
	if s.SentPackets != 255 || s.ReceivedPackets != 250 || math.Abs(s.LossRatio-5.0/255) > 1e-9 {
		t.Errorf("summary sent %d received %d loss %.4f", s.SentPackets, s.ReceivedPackets, s.LossRatio)
	}
	if len(res.Streams) != 6 {
		t.Errorf("%d streams, want 6", len(res.Streams))
	}
	if s.Seconds != 1 {
		t.Errorf("window %.3f s, want 1", s.Seconds)
	}
}
