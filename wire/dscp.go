package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxDSCP is the largest Differentiated Services code point: six bits.
const MaxDSCP = 63

// dscpNames are the code points with names (RFC 2474 class selectors,
// RFC 2597 assured forwarding, RFC 3246 expedited forwarding, RFC 8622
// lower effort); BE is CS0, and BK (background, as flent's RRUL names
// it) is CS1.
var dscpNames = map[string]int{
	"BE": 0, "LE": 1, "EF": 46, "BK": 8,
	"AF11": 10, "AF12": 12, "AF13": 14, "AF21": 18, "AF22": 20, "AF23": 22,
	"AF31": 26, "AF32": 28, "AF33": 30, "AF41": 34, "AF42": 36, "AF43": 38,
}

func init() {
	for i := range 8 {
		dscpNames["CS"+strconv.Itoa(i)] = i * 8
	}
}

// ErrNoStreamDSCP says a server accepted a test with a mark per stream
// without them (a linerate from before Spec.StreamDSCP, which drops the
// field it does not know): its streams would go unmarked, so the client
// refuses the test.
var ErrNoStreamDSCP = errors.New("the server does not mark each stream on its own (Spec.StreamDSCP): upgrade its linerate")

// DSCPName is the name of a code point (BE for 0, CS1-CS7, AF11-AF43,
// EF, LE; not the aliases CS0 and BK), or its number when it has none.
func DSCPName(dscp int) string {
	if dscp == 0 {
		return "BE"
	}
	for name, v := range dscpNames {
		if v == dscp && name != "CS0" && name != "BK" {
			return name
		}
	}
	return strconv.Itoa(dscp)
}

// ParseDSCP reads a code point by name (CS0..CS7, AF11..AF43, EF, BE,
// BK, LE; any case) or as a number from 0 to 63.
func ParseDSCP(s string) (int, error) {
	if v, ok := dscpNames[strings.ToUpper(strings.TrimSpace(s))]; ok {
		return v, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > MaxDSCP {
		return 0, fmt.Errorf("dscp %q: want a name (CS0-CS7, AF11-AF43, EF, BE, BK, LE) or a number 0-%d", s, MaxDSCP)
	}
	return n, nil
}

// TOS is the IPv4 TOS (IPv6 traffic class) byte carrying dscp, ECN bits
// clear.
func TOS(dscp int) int { return dscp << 2 }
