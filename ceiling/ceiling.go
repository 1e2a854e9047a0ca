// Package ceiling owns line-rate and PCIe bus arithmetic: how many frames per
// second and how much goodput an Ethernet link of a given speed can carry for
// a frame size or a TCP/UDP payload (preamble, SFD, FCS, padding and
// inter-frame gap counted), how many bytes per second a PCIe link can move
// after encoding, TLP, DLLP and DMA overheads, and, for a whole box, which
// NICs share a PCIe link and whether their ports can outrun it.
//
// Everything here is a pure function of its arguments: no I/O. The box-level
// report (ForBox) works from a box.Box that was collected elsewhere.
package ceiling

import (
	"fmt"
	"math"
	"strings"

	"linerate/internal/units"
)

// ParseSpeed reads a link speed in bits per second: "100M", "1G", "2.5G",
// "10G", "25G", "1000000000", with an optional "b/s", "bps" or "bit/s" after
// the unit ("2.5Gb/s"). Units are decimal (1G = 10^9 bit/s) as Ethernet
// speeds are.
func ParseSpeed(s string) (int64, error) {
	in := strings.TrimSpace(s)
	t := strings.ToLower(in)
	for _, suf := range []string{"bit/s", "b/s", "bps", "bit"} {
		if strings.HasSuffix(t, suf) {
			t = strings.TrimSpace(strings.TrimSuffix(t, suf))
			break
		}
	}
	bad := fmt.Errorf("bad speed %q: want a rate like 100M, 1G, 2.5G, 10G, 25G or plain bits per second (1000000000)", in)
	if strings.ContainsAny(t, "+-eE_xXpP") {
		return 0, bad
	}
	bps, err := ParseSI(t)
	if err != nil {
		return 0, bad
	}
	if bps < 1 || bps > 1e15 {
		return 0, fmt.Errorf("bad speed %q: out of range (1 bit/s to 1000 Tb/s)", in)
	}
	r := math.Round(bps)
	if math.Abs(r-bps) > 1e-6*bps && math.Abs(r-bps) > 0.001 {
		return 0, fmt.Errorf("bad speed %q: not a whole number of bits per second", in)
	}
	return int64(r), nil
}

// ParseSI reads a number with an optional decimal prefix k, M, G or T
// (units.Parse).
func ParseSI(s string) (float64, error) { return units.Parse(s) }
