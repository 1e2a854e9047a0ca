package tcp

import (
	"testing"
)

// The interval lines' segment totals go on across a 32-bit counter's wrap,
// per connection; a connection not read keeps its last value.
func TestSegTotalsWrap(t *testing.T) {
	var s segTotals
	all := []bool{true, true}
	if got := s.add([]uint32{0xfffffff0, 10}, all); got != 0xfffffff0+10 {
		t.Fatalf("first reading %d", got)
	}
	if got := s.add([]uint32{5, 20}, all); got != 0xfffffff0+10+0x15+10 {
		t.Errorf("across the wrap %d, want %d", got, uint64(0xfffffff0+10+0x15+10))
	}
	if got := s.add([]uint32{0, 30}, []bool{false, true}); got != 0xfffffff0+10+0x15+20 {
		t.Errorf("one not read %d", got)
	}
}
