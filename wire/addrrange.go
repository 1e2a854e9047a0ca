package wire

import (
	"fmt"
	"net/netip"
	"strings"
)

// maxRange is the most addresses one range may name.
const maxRange = maxSources

// ParseAddrRange reads an address ("10.0.0.2") or an inclusive range of
// one family ("10.0.0.2-10.0.0.5", "fd00::2-fd00::5") into its addresses,
// in order; a range names at most 256.
func ParseAddrRange(s string) ([]netip.Addr, error) {
	first, last, isRange := strings.Cut(s, "-")
	a, err := netip.ParseAddr(strings.TrimSpace(first))
	if err != nil {
		return nil, fmt.Errorf("%q: not an address or a range FIRST-LAST", s)
	}
	if !isRange {
		return []netip.Addr{a}, nil
	}
	b, err := netip.ParseAddr(strings.TrimSpace(last))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%q: %q is not an address", s, last)
	case a.Is4() != b.Is4():
		return nil, fmt.Errorf("%q: the range's ends are of two families", s)
	case b.Less(a):
		return nil, fmt.Errorf("%q: the range ends before it starts", s)
	}
	var out []netip.Addr
	for x := a; ; x = x.Next() {
		if len(out) == maxRange {
			return nil, fmt.Errorf("%q: more than %d addresses", s, maxRange)
		}
		out = append(out, x)
		if x == b {
			return out, nil
		}
	}
}
