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
	recv, err := newUDPReceiver(func(port uint16) (int, error) {
		return listenUDP(netip.AddrPortFrom(lo, port), 4<<20)
	}, 1, 1, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer recv.Close()
	recv.Start()
	fd, err := dialUDP(netip.AddrPortFrom(lo, 0), netip.AddrPortFrom(lo, recv.Ports[0]), 4<<20)
	if err != nil {
		b.Fatal(err)
	}
	s := newUDPSender(udpSenderConfig{fds: []int{fd}, payload: 18, threads: 1})
	defer s.Close()
	b.ResetTimer()
	start := time.Now()
	d := time.Duration(b.N) * 100 * time.Millisecond
	sent, err := s.Run(Timing{Start: start, Measure: start, End: start.Add(d)})
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	got, _ := recv.Stop()
	b.StopTimer()
	var rx uint64
	for _, c := range got {
		rx += c.Packets
	}
	b.ReportMetric(float64(sent[0].Packets)/d.Seconds(), "sent-pps")
	b.ReportMetric(float64(rx)/d.Seconds(), "recv-pps")
}
