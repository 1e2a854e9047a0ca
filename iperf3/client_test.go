package iperf3

import (
	"context"
	"testing"
	"time"

	"linerate/results"
	"linerate/wire"
)

// runClient runs linerate's iperf3 client in the pair's client namespace
// against iperf3 -s, and checks its figures against the veth's counters.
func runClient(t *testing.T, sp wire.Spec) (*results.Result, counters) {
	t.Helper()
	p := newPair(t)
	startIperf3Server(t, p.b)
	before := readCounters(t, p.a, "ia")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := runIn(p.a, func() (*results.Result, error) {
		return Run(ctx, Config{Target: "iperf3://" + serverIP, Spec: sp})
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res, readCounters(t, p.a, "ia").sub(before)
}

func spec(proto wire.Proto, dir wire.Direction) wire.Spec {
	return wire.Spec{Proto: proto, Direction: dir, Duration: wire.Seconds(2 * time.Second), Streams: 1, Ports: 1, Threads: 1}
}

func TestClientTCP(t *testing.T) {
	for _, c := range []struct {
		name    string
		dir     wire.Direction
		streams int
	}{{"P4", wire.Forward, 4}, {"R", wire.Reverse, 1}, {"bidir", wire.Bidir, 2}} {
		t.Run(c.name, func(t *testing.T) {
			sp := spec(wire.TCP, c.dir)
			sp.Streams = c.streams
			res, veth := runClient(t, sp)
			s := res.Summary
			t.Logf("sent %d B, received %d B; veth tx %d B / %d pk, rx %d B / %d pk; notes %q", s.SentBytes, s.ReceivedBytes, veth.txBytes, veth.txPackets, veth.rxBytes, veth.rxPackets, res.Notes)
			tr := res.Targets[0]
			if tr.Forward != nil {
				// What left here as payload: the veth's bytes less a header per packet (GSO: one per skb).
				// Written is not yet sent: iperf3 closes its end at
				// TEST_END and what the socket still held never leaves.
				wrote(t, "forward", tr.Forward.SentBytes, veth.txBytes-veth.txPackets*66, tr.Forward.Retransmits, c.streams)
				received(t, "forward", tr.Forward.ReceivedBytes, tr.Forward.SentBytes)
			}
			if tr.Reverse != nil {
				// What arrived beyond what was read: segments sent again,
				// and the control connection's messages with whatever
				// options a header carried beyond the 66 counted (64 KiB
				// in all: retransmits alone left tens of KB over at times).
				if onWire := veth.rxBytes - veth.rxPackets*66; onWire < tr.Reverse.ReceivedBytes || onWire-tr.Reverse.ReceivedBytes > tr.Reverse.Retransmits*1448+64<<10 {
					within(t, "reverse received vs veth", tr.Reverse.ReceivedBytes, onWire)
				}
				received(t, "reverse", tr.Reverse.ReceivedBytes, tr.Reverse.SentBytes)
			}
		})
	}
}

// wrote checks a TCP sender's count of bytes written against what its
// veth carried: within 1 %, or more by at most what the streams' send
// buffers held when the receiver closed (4 MiB each, tcp_wmem's default
// most), or less by at most what the sender sent again: retransmits
// segments of at most an MSS each (1448 B at the pair's MTU 1500), and 1 %
// for SACK blocks in the ACKs a bidirectional test sends the same way
// (the header counted per packet has no room for them).
func wrote(t *testing.T, what string, written, wire, retransmits uint64, streams int) {
	t.Helper()
	if written >= wire && written-wire <= uint64(streams)*4<<20 {
		return
	}
	if wire > written && wire-written <= retransmits*1448+written/100 {
		return
	}
	within(t, what+" written vs veth", written, wire)
}

// received checks that a TCP receiver got what was sent but what the
// receiver's socket held unread at TEST_END (iperf3 stops reading then):
// at most 10 %.
func received(t *testing.T, what string, got, sent uint64) {
	t.Helper()
	if got > sent || got < sent*9/10 {
		t.Errorf("%s: received %d of %d bytes sent", what, got, sent)
	}
}

func TestClientUDP(t *testing.T) {
	for _, dir := range []wire.Direction{wire.Forward, wire.Reverse} {
		t.Run(string(dir), func(t *testing.T) {
			sp := spec(wire.UDP, dir)
			sp.Payload = 1000
			sp.Rate = wire.Rate{PPS: 6250} // iperf3 -b 50M -l 1000
			res, veth := runClient(t, sp)
			tr := res.Targets[0]
			t.Logf("summary %+v; veth %+v; iperf3 %+v", res.Summary.Totals, veth, *tr.IPerf3)
			if dir == wire.Forward {
				within(t, "sent packets vs veth", tr.Forward.SentPackets, veth.txPackets)
				within(t, "sent bytes vs veth", tr.Forward.SentBytes+tr.Forward.SentPackets*42, veth.txBytes)
				// Loss under load is real (iperf3 to itself loses too
				// on a busy machine): what iperf3 counted, received and
				// lost, is its highest sequence number, which must be what
				// left here.
				within(t, "received+lost (iperf3) vs sent", tr.Forward.ReceivedPackets+tr.IPerf3.Streams[0].LostPackets, tr.Forward.SentPackets)
			} else {
				within(t, "received packets vs veth", tr.Reverse.ReceivedPackets, veth.rxPackets)
				within(t, "received bytes vs veth", tr.Reverse.ReceivedBytes+tr.Reverse.ReceivedPackets*42, veth.rxBytes)
				within(t, "sent (iperf3) vs received+lost", tr.Reverse.SentPackets, tr.Reverse.ReceivedPackets+tr.IPerf3.Streams[0].LostPackets)
			}
			// The rate reached the sender (iperf3's own pacer in reverse):
			// never above it, and not far below (a busy machine makes a
			// pacer fall behind, a wrong unit would be 8x off).
			if n := res.Summary.SentPackets; n > 12500*101/100 || n < 12500*3/4 {
				t.Errorf("%d packets in 2 s at 6250/s: want 9375 to 12625", n)
			}
			if s := tr.IPerf3.Streams[0]; s.JitterMS <= 0 || s.JitterMS > 50 {
				t.Errorf("iperf3 jitter: %+v", s)
			}
		})
	}
}
