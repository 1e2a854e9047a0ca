package udp

import (
	"testing"

	"linerate/wire"
)

// TestMixerCounts: counting whole turns of the pattern at once agrees
// with counting datagram by datagram, wherever the count starts.
func TestMixerCounts(t *testing.T) {
	sizes := []wire.SizePart{{Payload: 18, Weight: 7}, {Payload: 524, Weight: 4}, {Payload: 1472, Weight: 1}}
	m := NewMixer(sizes)
	pattern := wire.MixPattern(sizes)
	for _, first := range []uint64{0, 5, 11, 12, 1e9 + 7} {
		for _, n := range []uint64{0, 1, 7, 12, 13, 100, 1001} {
			var naive [wire.MaxSizeParts]uint64
			for i := range n {
				naive[pattern[(first+i)%uint64(len(pattern))]]++
			}
			if got := m.counts(first, n); got != naive {
				t.Errorf("counts(%d, %d) = %v, want %v", first, n, got[:3], naive[:3])
			}
		}
	}
}
