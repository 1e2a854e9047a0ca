package ceiling

import (
	"fmt"
	"strconv"
	"strings"
)

// Mix is a set of frame sizes sent in fixed proportions; a single size is
// a mix of one part.
type Mix struct {
	// Name is "imix" for SimpleIMIX, the size in bytes otherwise.
	Name  string    `json:"name"`
	Parts []MixPart `json:"parts"`
}

// MixPart is one frame size of a mix and how many of every Weight-sum
// frames have it.
type MixPart struct {
	Bytes  int `json:"bytes"`
	Weight int `json:"weight"`
}

// SimpleIMIX is the "simple IMIX" of 64-, 570- and 1518-byte frames (FCS
// included) in the proportion 7:4:1, as FD.io CSIT defines IMIX_v4_1 in
// its TRex traffic profiles (sizes 64, 570 and 1518 at 28, 16 and 4
// packets per second each; CSIT takes the mean frame as 353.83333 bytes).
var SimpleIMIX = Mix{Name: "imix", Parts: []MixPart{{64, 7}, {570, 4}, {1518, 1}}}

// SingleFrame is the mix of one frame size.
func SingleFrame(bytes int) Mix {
	return Mix{Name: strconv.Itoa(bytes), Parts: []MixPart{{Bytes: bytes, Weight: 1}}}
}

// ParseMixes reads a list of frame sizes such as
// "64,128,256,512,1024,1280,1518,imix": each a frame size in bytes (64 to
// MaxFrameBytes, FCS included) or "imix" (SimpleIMIX). Repeated entries
// are an error.
func ParseMixes(s string) ([]Mix, error) {
	var out []Mix
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		var m Mix
		if f == "imix" {
			m = SimpleIMIX
		} else {
			n, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("frame size %q: want a number of bytes (64 to %d) or imix", f, MaxFrameBytes)
			}
			if _, err := RawFrame(n); err != nil {
				return nil, fmt.Errorf("frame size %d: %w", n, err)
			}
			m = SingleFrame(n)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("frame size %s given twice", m.Name)
		}
		seen[m.Name] = true
		out = append(out, m)
	}
	return out, nil
}

// meanOf is the weighted mean of size(part) over the mix's frames.
func (m Mix) meanOf(size func(bytes int) float64) float64 {
	var sum, w float64
	for _, p := range m.Parts {
		sum += float64(p.Weight) * size(p.Bytes)
		w += float64(p.Weight)
	}
	if w == 0 {
		return 0
	}
	return sum / w
}

// MeanBytes is the mean frame size (FCS included).
func (m Mix) MeanBytes() float64 { return m.meanOf(func(b int) float64 { return float64(b) }) }

// MeanWireBytes is the mean room a frame takes on the wire: the frame,
// preamble, SFD and inter-frame gap.
func (m Mix) MeanWireBytes() float64 {
	return m.meanOf(func(b int) float64 { return float64(b + WireExtraBytes) })
}

// LineFPS is the frames per second a link of speedBps carries in this mix.
func (m Mix) LineFPS(speedBps float64) float64 {
	w := m.MeanWireBytes()
	if w <= 0 {
		return 0
	}
	return speedBps / (w * 8)
}
