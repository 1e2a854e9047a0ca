package results

import "linerate/wire"

// Combine matches a direction's sender and receiver counts stream by
// stream.
func Combine(target int, dir wire.Direction, proto wire.Proto, sent, recv []Count, stats []TCPStat, seconds float64, overhead int) (Totals, []StreamResult) {
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
		if proto == wire.UDP {
			t.Reordered, t.Duplicates = r.Reorder, r.Dup
			t.combineSizes(s.Sizes, r.Sizes, overhead)
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
		tot.Add(*t)
		out = append(out, st)
	}
	tot.rates()
	return tot, out
}
