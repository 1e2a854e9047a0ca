package tcp

import "sync"

// segMarks holds one connection's TCP_INFO data-segment counter
// (tcpi_data_segs_out on a sender, tcpi_data_segs_in on a receiver) at the
// two instants that bound the measured window, so that the segments of the
// window are the kernel's own count between them, warmup excluded.
type segMarks struct {
	mu    sync.Mutex
	at    [2]uint32
	taken [2]bool
}

// Marks: the start and the end of the measured window.
const (
	markStart = 0
	markEnd   = 1
)

// take reads the counter into mark m unless it was taken already. Taking
// the end also takes the start (a window that never started is empty).
// When TCP_INFO cannot be read (a closed socket) the last value known
// stands in.
func (s *segMarks) take(c *tcpSock, m int, out bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.taken[m] {
		return
	}
	var v uint32
	info, err := c.info()
	switch {
	case err == nil && out:
		v = info.Data_segs_out
	case err == nil:
		v = info.Data_segs_in
	case m == markEnd && s.taken[markStart]:
		v = s.at[markStart]
	}
	s.at[m], s.taken[m] = v, true
	if m == markEnd && !s.taken[markStart] {
		s.at[markStart], s.taken[markStart] = v, true
	}
}

// segments is the count between the two marks (the counter is 32 bits and
// wraps).
func (s *segMarks) segments() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.taken[markEnd] {
		return 0
	}
	return uint64(s.at[markEnd] - s.at[markStart])
}
