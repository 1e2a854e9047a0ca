// Package units writes figures for people: a value scaled by an SI prefix
// (k, M, G, T) in a chosen style, rates with their unit, bits per second,
// counts, link speeds and percentages. It is the one number formatter of
// linerate: the packages that compute a figure (ceiling, results) hand
// it here to be written. It imports nothing but the standard library.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// prefixes from the largest down; the last is the empty prefix.
var prefixes = []struct {
	symbol string
	factor float64
}{{"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"k", 1e3}, {"", 1}}

// A Style says how many digits a figure keeps once divided by its
// prefix. The styles differ because the places differ: a table column
// has room for six characters, a report line for a few more.
type Style struct {
	// digits writes x, already divided by the factor of prefix.
	digits func(x float64, prefix string) string
}

// Styles.
var (
	// Fixed keeps two decimals under G, M and T, one under k and none
	// without a prefix: "1.23G", "312.4k", "950".
	Fixed = Style{digits: func(x float64, prefix string) string {
		d := 2
		switch prefix {
		case "k":
			d = 1
		case "":
			d = 0
		}
		return strconv.FormatFloat(x, 'f', d, 64)
	}}
	// Short keeps three significant digits, so that a figure takes at most
	// six characters; without a prefix it is a whole number, and a figure
	// below 0.5 either way is "0": "9.41G", "12.3k", "950".
	Short = Style{digits: func(x float64, prefix string) string {
		if prefix == "" {
			if math.Abs(x) < 0.5 {
				return "0"
			}
			return strconv.FormatFloat(x, 'f', 0, 64)
		}
		return strconv.FormatFloat(x, 'g', 3, 64)
	}}
)

// Tidy keeps two decimals under G and T, one under M and k and none
// without a prefix, then drops trailing zeros: "3.35", "941.5", "2.5",
// "12". It is the style of a link's speed in a sentence (Bps).
var Tidy = Style{digits: func(x float64, prefix string) string {
	d := 2
	switch prefix {
	case "M", "k":
		d = 1
	case "":
		d = 0
	}
	return trimZeros(strconv.FormatFloat(x, 'f', d, 64))
}}

// Sig keeps n significant digits: Sig(4) writes "1.235M", "950", "12.5".
func Sig(n int) Style {
	return Style{digits: func(x float64, _ string) string { return strconv.FormatFloat(x, 'g', n, 64) }}
}

// Trim keeps at most n decimals and drops trailing zeros; a figure without
// a prefix too small to show in n decimals keeps n significant digits
// instead: Trim(2) writes "1.49M", "940k", "12", "0.5", "0.0012".
func Trim(n int) Style {
	return Style{digits: func(x float64, prefix string) string {
		if a := math.Abs(x); prefix == "" && a > 0 && a < math.Pow10(-n) {
			return trimZeros(strconv.FormatFloat(x, 'g', n, 64))
		}
		return trimZeros(strconv.FormatFloat(x, 'f', n, 64))
	}}
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// Split writes v divided by the largest of the prefixes k, M, G and T
// that leaves at least 1 before the point, and returns the number and
// the prefix apart: Fixed.Split(312400) = "312.4", "k". A figure that
// rounds up to 1000 of one prefix is written with the next: 999999 is
// "1.00", "M", not "1000.0", "k".
func (s Style) Split(v float64) (num, prefix string) {
	a := math.Abs(v)
	i := len(prefixes) - 1
	for j, p := range prefixes {
		if a >= p.factor {
			i = j
			break
		}
	}
	for {
		p := prefixes[i]
		num = s.digits(v/p.factor, p.symbol)
		if i == 0 {
			return num, p.symbol
		}
		if x, err := strconv.ParseFloat(num, 64); err != nil || math.Abs(x) < 1000 {
			return num, p.symbol
		}
		i--
	}
}

// Format writes v with its prefix: Fixed.Format(312400) = "312.4k",
// Short.Format(9.41e9) = "9.41G".
func (s Style) Format(v float64) string {
	num, prefix := s.Split(v)
	return num + prefix
}

// Unit writes v with its prefix and unit, nothing between them:
// Fixed.Unit(312400, "b/s") = "312.4kb/s".
func (s Style) Unit(v float64, unit string) string { return s.Format(v) + unit }

// Rate writes a per-second figure with its unit in the Fixed style, a
// space before the prefix: "941.23 Mbit/s", "312.4 kpps", "950 pps".
func Rate(v float64, unit string) string {
	num, prefix := Fixed.Split(v)
	return num + " " + prefix + unit
}

// Bps writes bits per second in the Tidy style, a space before the
// prefix: "3.35 Gb/s", "941.5 Mb/s", "12 b/s".
func Bps(v float64) string {
	num, prefix := Tidy.Split(v)
	return num + " " + prefix + "b/s"
}

// Count writes a count rounded down with a comma between thousands:
// "1,488,095". A negative count or NaN, which no counter holds, is "-".
func Count(v float64) string {
	if v < 0 || math.IsNaN(v) {
		return "-"
	}
	s := strconv.FormatInt(int64(v), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Speed writes a link's speed in bits per second the way a flag takes
// it (ceiling.ParseSpeed reads it back): every digit it needs and a
// prefix K, M, G or T, no space and no unit: 2500000000 is "2.5G",
// 100000000 "100M", 999 "999".
func Speed(bps int64) string {
	for _, p := range prefixes[:len(prefixes)-1] {
		if float64(bps) >= p.factor {
			return strconv.FormatFloat(float64(bps)/p.factor, 'f', -1, 64) + strings.ToUpper(p.symbol)
		}
	}
	return strconv.FormatInt(bps, 10)
}

// Percent writes a ratio as a percentage with the given decimals and a
// space before the sign, the one spelling of a percentage linerate
// writes: Percent(0.04123, 2) = "4.12 %", Percent(1, 0) = "100 %".
// Decimals -1 writes as many as the figure needs: Percent(0.005, -1) =
// "0.5 %".
func Percent(ratio float64, decimals int) string {
	return strconv.FormatFloat(ratio*100, 'f', decimals, 64) + " %"
}

// SignedPercent is Percent with its sign always written: "+4.1 %",
// "-0.3 %".
func SignedPercent(ratio float64, decimals int) string {
	s := Percent(ratio, decimals)
	if s[0] != '-' && s[0] != '+' {
		s = "+" + s
	}
	return s
}

// Parse reads a number with an optional decimal prefix k, M, G or T (any
// case): "2.5G" → 2.5e9, "100k" → 1e5.
func Parse(s string) (float64, error) {
	s = strings.TrimSpace(s)
	mult := 1.0
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			mult = 1e3
		case 'm', 'M':
			mult = 1e6
		case 'g', 'G':
			mult = 1e9
		case 't', 'T':
			mult = 1e12
		}
		if mult != 1 {
			s = s[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not a number")
	}
	return v * mult, nil
}

// ParseBytes reads a size in bytes with an optional binary prefix K, M or
// G (any case, an optional trailing B), as iperf3 reads -w: "416K" →
// 425984.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "B")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || math.IsNaN(v) || v < 0 || v*float64(mult) > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q: not a size in bytes (416K, 4M)", s)
	}
	return int64(v * float64(mult)), nil
}
