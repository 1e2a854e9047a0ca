package traffic

import (
	"net/netip"
	"testing"
	"time"
)

// BenchmarkUDPLoopback sends 64-byte frames (18-byte payload) from one
// sender thread to one receiver thread over loopback for b.N × 100 ms and
// reports the packets per second that arrived. Profile it with
// -cpuprofile to see where the engine's own time goes.
func BenchmarkUDPLoopback(b *testing.B) {
	lo := netip.MustParseAddr("127.0.0.1")
	recv, err := newUDPReceiver(udpRecvConfig{local: lo, ports: 1, threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer recv.close()
	fd, err := dialUDP(netip.AddrPortFrom(lo, 0), netip.AddrPortFrom(lo, recv.ports[0]), 4<<20)
	if err != nil {
		b.Fatal(err)
	}
	s := newUDPSender(udpSenderConfig{fds: []int{fd}, payload: 18, threads: 1})
	defer s.close()
	b.ResetTimer()
	start := time.Now()
	d := time.Duration(b.N) * 100 * time.Millisecond
	s.run(Timing{Start: start, Measure: start, End: start.Add(d)})
	sent := s.collect()
	if sent.err != nil {
		b.Fatal(sent.err)
	}
	time.Sleep(50 * time.Millisecond)
	recv.stop(0)
	recv.run(Timing{})
	got := recv.collect().counts
	b.StopTimer()
	var rx uint64
	for _, c := range got {
		rx += c.Packets
	}
	b.ReportMetric(float64(sent.counts[0].Packets)/d.Seconds(), "sent-pps")
	b.ReportMetric(float64(rx)/d.Seconds(), "recv-pps")
}
