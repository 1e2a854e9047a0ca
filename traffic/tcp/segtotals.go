package tcp

import (
	"sync"
)

// segTotals is the data segments the kernel sent (out) or received on a
// flow's connections so far (tcpi_data_segs_out or _in): the packets of a
// TCP flow's interval lines. The kernel's counters are 32 bits per
// connection; each reading adds what a counter moved since the last one,
// modulo 2^32, to a 64-bit total, so a long run does not wrap (a million
// segments a second wraps a counter in 72 minutes). A connection whose
// TCP_INFO cannot be read adds nothing.
type segTotals struct {
	mu    sync.Mutex
	last  []uint32
	total uint64
}

func (s *segTotals) now(conns []*tcpSock, out bool) uint64 {
	vals := make([]uint32, len(conns))
	ok := make([]bool, len(conns))
	for i, c := range conns {
		info, err := c.info()
		switch {
		case err != nil:
			continue
		case out:
			vals[i] = info.Data_segs_out
		default:
			vals[i] = info.Data_segs_in
		}
		ok[i] = true
	}
	return s.add(vals, ok)
}

// Add takes one reading of each connection's counter (ok false: not read).
func (s *segTotals) add(vals []uint32, ok []bool) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.last) < len(vals) {
		s.last = append(s.last, 0)
	}
	for i, v := range vals {
		if ok[i] {
			s.total += uint64(v - s.last[i])
			s.last[i] = v
		}
	}
	return s.total
}
