package udp

// seqWindow is how many sequence numbers behind the highest one a tracker
// remembers to tell a duplicate from a late packet. Older packets count as
// reordered (they cannot be told apart from duplicates any more).
const seqWindow = 4096

// seqTracker follows one stream's sequence numbers on the receiving side.
// It is owned by one receiver thread; no locking.
type seqTracker struct {
	started bool
	max     int64 // highest extended sequence number seen
	seen    [seqWindow / 64]uint64

	packets uint64 // datagrams that arrived, duplicates included
	bytes   uint64 // their UDP payload bytes
	unique  uint64 // distinct sequence numbers
	dup     uint64
	reorder uint64 // arrived after a higher sequence number
}

func (t *seqTracker) bit(s int64) (word int, mask uint64) {
	i := uint64(s) % seqWindow
	return int(i / 64), 1 << (i % 64)
}

// Add records the arrival of sequence number seq carrying n payload bytes.
func (t *seqTracker) add(seq uint32, n int) {
	t.packets++
	t.bytes += uint64(n)
	if !t.started {
		t.started = true
		t.max = int64(seq)
		t.unique++
		w, m := t.bit(t.max)
		t.seen[w] |= m
		return
	}
	// Extend the 32-bit number to the one nearest the highest seen.
	s := t.max + int64(int32(seq-uint32(t.max)))
	switch {
	case s > t.max:
		if s-t.max >= seqWindow {
			t.seen = [seqWindow / 64]uint64{}
		} else {
			for x := t.max + 1; x < s; x++ {
				w, m := t.bit(x)
				t.seen[w] &^= m
			}
		}
		t.max = s
		w, m := t.bit(s)
		t.seen[w] |= m
		t.unique++
	case t.max-s >= seqWindow:
		t.reorder++
		t.unique++
	default:
		w, m := t.bit(s)
		if t.seen[w]&m != 0 {
			t.dup++
			return
		}
		t.seen[w] |= m
		t.reorder++
		t.unique++
	}
}
