package udp

import (
	"testing"
)

func TestSeqTracker(t *testing.T) {
	tests := []struct {
		name                 string
		seqs                 []uint32
		unique, dup, reorder uint64
	}{
		{"in order", []uint32{0, 1, 2, 3}, 4, 0, 0},
		{"gap is not reorder", []uint32{0, 1, 5, 6}, 4, 0, 0},
		{"late packet", []uint32{0, 2, 1, 3}, 4, 0, 1},
		{"duplicate", []uint32{0, 1, 1, 2}, 3, 1, 0},
		{"late duplicate", []uint32{0, 2, 1, 1}, 3, 1, 1},
		{"wraps", []uint32{0xfffffffe, 0xffffffff, 0, 1}, 4, 0, 0},
		{"late across wrap", []uint32{0xffffffff, 1, 0}, 3, 0, 1},
		{"older than window", []uint32{10000, 1}, 2, 0, 1},
		{"duplicate after big jump", []uint32{0, 9000, 9000}, 2, 1, 0},
		{"first packet late", []uint32{5, 3, 4, 5}, 3, 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tr seqTracker
			for _, s := range tc.seqs {
				tr.add(s, 18)
			}
			if tr.unique != tc.unique || tr.dup != tc.dup || tr.reorder != tc.reorder {
				t.Errorf("unique %d dup %d reorder %d; want %d %d %d", tr.unique, tr.dup, tr.reorder, tc.unique, tc.dup, tc.reorder)
			}
			if tr.packets != uint64(len(tc.seqs)) || tr.bytes != 18*uint64(len(tc.seqs)) {
				t.Errorf("packets %d bytes %d", tr.packets, tr.bytes)
			}
		})
	}
}

func TestSeqTrackerStale(t *testing.T) {
	// After the window moves on, a slot reused by a new sequence number
	// must not make an old-but-within-window number look duplicated.
	var tr seqTracker
	for s := uint32(0); s < 3*seqWindow; s += 2 {
		tr.add(s, 1)
	}
	tr.add(3*seqWindow-3, 1) // never seen, within the window
	if tr.dup != 0 || tr.reorder != 1 {
		t.Fatalf("dup %d reorder %d", tr.dup, tr.reorder)
	}
}
