package udp

import (
	"linerate/results"
	"linerate/wire"
)

// Mixer is a sender's mix of sizes (wire.Spec.Sizes): the payload of each
// datagram of a flow follows from how many the flow sent before it, along
// wire.MixPattern, so every flow sends the mix in its ratio, interleaved.
type Mixer struct {
	sizes   []wire.SizePart
	pattern []int
}

// NewMixer is the Mixer of sizes; nil for one size or none.
func NewMixer(sizes []wire.SizePart) *Mixer {
	p := wire.MixPattern(sizes)
	if p == nil {
		return nil
	}
	return &Mixer{sizes: sizes, pattern: p}
}

// Part is the index in the mix of the part of a flow's datagram number n
// (from 0).
func (m *Mixer) Part(n uint64) int { return m.pattern[n%uint64(len(m.pattern))] }

// Payload is the payload of a flow's datagram number n (from 0).
func (m *Mixer) Payload(n uint64) int { return m.sizes[m.Part(n)].Payload }

// Count adds a flow's datagrams first to first+n-1 to c's per-size counts
// (nil: none, in the warmup) and returns their payload bytes.
func (m *Mixer) Count(c *results.Count, first uint64, n int) uint64 {
	per := m.counts(first, uint64(n))
	var bytes uint64
	for k, p := range m.sizes {
		bytes += per[k] * uint64(p.Payload)
		if per[k] > 0 && c != nil {
			c.CountSize(p.Payload, per[k])
		}
	}
	return bytes
}

// counts is how many of a flow's datagrams first to first+n-1 have each
// part: whole turns of the pattern at once, then the rest one by one, so
// that counting a long run costs no more than a turn.
func (m *Mixer) counts(first, n uint64) (per [wire.MaxSizeParts]uint64) {
	l := uint64(len(m.pattern))
	for _, k := range m.pattern {
		per[k] += n / l
	}
	for i := range n % l {
		per[m.pattern[(first+i)%l]]++
	}
	return per
}
