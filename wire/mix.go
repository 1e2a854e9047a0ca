package wire

import (
	"errors"

	"linerate/internal/usage"
)

// SizePart is one UDP payload size of a mix of sizes (Spec.Sizes) and how
// many of every Weight-sum datagrams have it.
type SizePart struct {
	Payload int `json:"payload"`
	Weight  int `json:"weight"`
}

// ErrNoMix says a server accepted a mix of sizes without it (a linerate
// from before Spec.Sizes, which drops the field it does not know): it
// would send or count one size, so the client refuses the test.
var ErrNoMix = errors.New("the server does not know mixes of sizes (Spec.Sizes): upgrade its linerate")

// Limits of a mix: few parts, and a pattern (one datagram per unit of
// weight) short enough to hold in every sender.
const (
	MaxSizeParts  = 16 // parts of a mix
	maxMixPattern = 4096
)

// checkSizes says what is wrong with a mix of sizes: every payload a UDP
// test may send, weights from 1, Payload the largest part.
func (s *Spec) checkSizes() error {
	if len(s.Sizes) == 0 {
		return nil
	}
	if s.Proto != UDP {
		return usage.Field("sizes", "a mix of sizes is for udp, not %s", s.Proto)
	}
	if len(s.Sizes) > MaxSizeParts {
		return usage.Field("sizes", "%d parts: want at most %d", len(s.Sizes), MaxSizeParts)
	}
	sum, largest := 0, 0
	for _, p := range s.Sizes {
		if p.Payload < HeaderLen || p.Payload > maxPayload {
			return usage.Field("sizes", "payload %d bytes: want %d to %d", p.Payload, HeaderLen, maxPayload)
		}
		if p.Weight < 1 || p.Weight > maxMixPattern {
			return usage.Field("sizes", "weight %d of payload %d: want 1 to %d", p.Weight, p.Payload, maxMixPattern)
		}
		sum += p.Weight
		largest = max(largest, p.Payload)
	}
	switch {
	case sum > maxMixPattern:
		return usage.Field("sizes", "weights add up to %d: want at most %d", sum, maxMixPattern)
	case s.Payload != largest:
		return usage.Field("sizes", "payload %d: a mix's payload is its largest part's, %d", s.Payload, largest)
	}
	return nil
}

// Mixed reports whether the test sends a mix of sizes.
func (s *Spec) Mixed() bool { return len(s.Sizes) > 1 }

// MeanPayload is the mean UDP payload of the datagrams: of the mix, or
// Payload.
func (s *Spec) MeanPayload() float64 {
	if len(s.Sizes) == 0 {
		return float64(s.Payload)
	}
	var sum, w float64
	for _, p := range s.Sizes {
		sum += float64(p.Payload * p.Weight)
		w += float64(p.Weight)
	}
	return sum / w
}

// UDPPacketsPerSecond is the rate in datagrams per second, each with
// overhead bytes on the wire besides its payload: a bit rate counts the
// mix's mean frame.
func (s *Spec) UDPPacketsPerSecond(overhead int) float64 {
	return s.Rate.perSecond(s.MeanPayload() + float64(overhead))
}

// MixPattern is the order a sender sends the parts of sizes in: one index
// into sizes per unit of weight, each part spread evenly over the pattern
// (smooth weighted round robin: 7:4:1 is 0 1 0 2 0 1 0 0 1 0 1 0...
// never more of one part in a row than its share asks). nil for fewer
// than two parts.
func MixPattern(sizes []SizePart) []int {
	if len(sizes) < 2 {
		return nil
	}
	total := 0
	for _, p := range sizes {
		total += p.Weight
	}
	credit := make([]int, len(sizes))
	out := make([]int, 0, total)
	for range total {
		best := 0
		for i, p := range sizes {
			credit[i] += p.Weight
			if credit[i] > credit[best] {
				best = i
			}
		}
		credit[best] -= total
		out = append(out, best)
	}
	return out
}
