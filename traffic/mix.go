package traffic

import (
	"slices"

	"linerate/ceiling"
	"linerate/internal/usage"
	"linerate/wire"
)

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
