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
// MaxFrameBytes, FCS included), "imix" (SimpleIMIX), or a mix of sizes
// with weights, "64:7,570:4,1518:1" (consecutive SIZE:WEIGHT entries are
// one mix; a ";" ends one, to list two mixes in a row). Repeated entries
// are an error.
func ParseMixes(s string) ([]Mix, error) {
	var out []Mix
	seen := map[string]bool{}
	add := func(m Mix) error {
		if seen[m.Name] {
			return fmt.Errorf("frame size %s given twice", m.Name)
		}
		seen[m.Name] = true
		out = append(out, m)
		return nil
	}
	for _, group := range strings.Split(s, ";") {
		var weighted []string
		flush := func() error {
			if len(weighted) == 0 {
				return nil
			}
			m, err := ParseMix(strings.Join(weighted, ","))
			weighted = nil
			if err != nil {
				return err
			}
			return add(m)
		}
		for _, f := range strings.Split(group, ",") {
			if strings.Contains(f, ":") {
				weighted = append(weighted, f)
				continue
			}
			if err := flush(); err != nil {
				return nil, err
			}
			m, err := ParseMix(f)
			if err != nil {
				return nil, err
			}
			if err := add(m); err != nil {
				return nil, err
			}
		}
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ParseMix reads one frame size ("1518"), "imix" (SimpleIMIX) or a mix of
// sizes with weights ("64:7,570:4,1518:1": frames of 64, 570 and 1518
// bytes, FCS included, 7, 4 and 1 of every 12). A mix of one size is that
// size; a size given twice in a mix is an error.
func ParseMix(s string) (Mix, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "imix" {
		return SimpleIMIX, nil
	}
	if !strings.Contains(s, ":") {
		n, err := strconv.Atoi(s)
		if err != nil {
			return Mix{}, fmt.Errorf("frame size %q: want a number of bytes (64 to %d), imix, or SIZE:WEIGHT,... (64:7,570:4,1518:1)", s, MaxFrameBytes)
		}
		if _, err := RawFrame(n); err != nil {
			return Mix{}, fmt.Errorf("frame size %d: %w", n, err)
		}
		return SingleFrame(n), nil
	}
	var m Mix
	for _, f := range strings.Split(s, ",") {
		size, weight, ok := strings.Cut(strings.TrimSpace(f), ":")
		n, err1 := strconv.Atoi(size)
		w, err2 := strconv.Atoi(weight)
		switch {
		case !ok || err1 != nil || err2 != nil:
			return Mix{}, fmt.Errorf("mix entry %q: want SIZE:WEIGHT in bytes and a count (570:4)", f)
		case w < 1 || w > maxMixWeight:
			return Mix{}, fmt.Errorf("mix entry %q: weight %d, want 1 to %d", f, w, maxMixWeight)
		}
		if _, err := RawFrame(n); err != nil {
			return Mix{}, fmt.Errorf("frame size %d: %w", n, err)
		}
		for _, p := range m.Parts {
			if p.Bytes == n {
				return Mix{}, fmt.Errorf("frame size %d given twice in the mix %q", n, s)
			}
		}
		m.Parts = append(m.Parts, MixPart{Bytes: n, Weight: w})
	}
	return MixOf(m.Parts), nil
}

// MixOf is the mix of parts, named: "imix" when it is SimpleIMIX, else
// as String reads it (a single part is SingleFrame).
func MixOf(parts []MixPart) Mix {
	if len(parts) == 1 {
		return SingleFrame(parts[0].Bytes)
	}
	m := Mix{Parts: parts}
	m.Name = m.String()
	if m.Name == SimpleIMIX.String() {
		m.Name = SimpleIMIX.Name
	}
	return m
}

// maxMixWeight is the largest weight of a part: a sender holds one entry
// per unit of weight.
const maxMixWeight = 1024

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

// String is the mix as --size reads it: "64:7,570:4,1518:1", or the one
// size "1518".
func (m Mix) String() string {
	if len(m.Parts) == 1 {
		return strconv.Itoa(m.Parts[0].Bytes)
	}
	var b strings.Builder
	for i, p := range m.Parts {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d", p.Bytes, p.Weight)
	}
	return b.String()
}
