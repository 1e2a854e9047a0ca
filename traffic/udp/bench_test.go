package udp

import (
	"net/netip"
	"testing"
	"time"

	"linerate/traffic/session"
	"linerate/traffic/sock"
)

// BenchmarkUDPLoopback sends 64-byte frames (18-byte payload) from one
// sender thread to one receiver thread over loopback for b.N × 100 ms and
// reports the packets per second that arrived. Profile it with
// -cpuprofile to see where the engine's own time goes.
func BenchmarkUDPLoopback(b *testing.B) {
	d := time.Duration(b.N) * 100 * time.Millisecond
	b.ResetTimer()
	sent, rx, _ := loopbackUDP(b, 1, 0, d)
	b.StopTimer()
	b.ReportMetric(float64(sent)/d.Seconds(), "sent-pps")
	b.ReportMetric(float64(rx)/d.Seconds(), "recv-pps")
}

// loopbackUDP sends 18-byte datagrams from one sender thread at pps (0:
// as fast as it can) for d over loopback to the first of ports ports of a
// one-thread receiver, and returns the datagrams sent (warmup included),
// those received and the receiver, stopped.
func loopbackUDP(tb testing.TB, ports int, pps float64, d time.Duration) (sent, received uint64, recv *Receiver) {
	tb.Helper()
	lo := netip.MustParseAddr("127.0.0.1")
	recv, err := NewReceiver(ReceiverConfig{Local: lo, Ports: ports, Threads: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { recv.Close() })
	fd, err := sock.DialUDP(netip.AddrPortFrom(lo, 0), netip.AddrPortFrom(lo, recv.Ports()[0]), 4<<20)
	if err != nil {
		tb.Fatal(err)
	}
	s := NewSender(SenderConfig{FDs: []int{fd}, Payload: 18, PPS: pps, Threads: 1})
	defer s.Close()
	start := time.Now()
	s.Run(session.Timing{Start: start, Measure: start, End: start.Add(d)})
	res := s.Collect()
	if res.Err != nil {
		tb.Fatal(res.Err)
	}
	time.Sleep(50 * time.Millisecond)
	recv.Stop(0)
	recv.Run(session.Timing{})
	for _, c := range recv.Collect().Counts {
		received += c.Packets
	}
	return res.Counts[0].Packets + res.Counts[0].Warmup, received, recv
}
