package traffic

import (
	"slices"

	"linerate/ceiling"
	"linerate/internal/usage"
	"linerate/results"
	"linerate/wire"
)

// mixer is a sender's mix of sizes (wire.Spec.Sizes): the payload of each
// datagram of a flow follows from how many the flow sent before it, along
// wire.MixPattern, so every flow sends the mix in its ratio, interleaved.
type mixer struct {
	sizes   []wire.SizePart
	pattern []int
}

// newMixer is the mixer of sizes; nil for one size or none.
func newMixer(sizes []wire.SizePart) *mixer {
	p := wire.MixPattern(sizes)
	if p == nil {
		return nil
	}
	return &mixer{sizes: sizes, pattern: p}
}

// payload is the payload of a flow's datagram number n (from 0).
func (m *mixer) payload(n uint64) int { return m.sizes[m.pattern[n%uint64(len(m.pattern))]].Payload }

// count adds a flow's datagrams first to first+n-1 to c's per-size counts
// (nil: none, in the warmup) and returns their payload bytes.
func (m *mixer) count(c *results.Count, first uint64, n int) uint64 {
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
func (m *mixer) counts(first, n uint64) (per [wire.MaxSizeParts]uint64) {
	l := uint64(len(m.pattern))
	for _, k := range m.pattern {
		per[k] += n / l
	}
	for i := range n % l {
		per[m.pattern[(first+i)%l]]++
	}
	return per
}

// mixSizes is the wire form of mix for frames of overhead bytes besides
// the payload, and the largest payload; an error names a part too small
// for linerate's header.
func mixSizes(mix ceiling.Mix, overhead int) ([]wire.SizePart, int, error) {
	var out []wire.SizePart
	for _, p := range mix.Parts {
		pl := p.Bytes - overhead
		if pl < wire.HeaderLen {
			return nil, 0, usage.Field("Mix", "%d-byte frames of %s: too small: frames carry at least %d bytes (%d of headers and FCS, %d of linerate's header)",
				p.Bytes, mix.Name, overhead+wire.HeaderLen, overhead, wire.HeaderLen)
		}
		out = append(out, wire.SizePart{Payload: pl, Weight: p.Weight})
	}
	largest := slices.MaxFunc(out, func(a, b wire.SizePart) int { return a.Payload - b.Payload })
	return out, largest.Payload, nil
}

// mixSpec sets sp's mix of payloads from c.Mix for frames over IPv4 (v4)
// or IPv6; nothing without a mix.
func (c *Config) mixSpec(sp *wire.Spec, v4 bool) error {
	if len(c.Mix.Parts) < 2 {
		return nil
	}
	if sp.Proto != wire.UDP {
		return usage.Field("Mix", "%s: a mix of frame sizes is for udp, not %s", c.Mix.Name, sp.Proto)
	}
	var err error
	sp.Sizes, sp.Payload, err = mixSizes(c.Mix, wire.UDPOverhead(v4))
	return err
}
