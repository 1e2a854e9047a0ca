package wire

import (
	"fmt"
	"testing"
)

func TestParseAddrRange(t *testing.T) {
	cases := []struct {
		in   string
		want string // the addresses, or "error"
	}{
		{"10.0.0.2", "[10.0.0.2]"},
		{"10.0.0.2-10.0.0.5", "[10.0.0.2 10.0.0.3 10.0.0.4 10.0.0.5]"},
		{"10.0.0.255-10.0.1.0", "[10.0.0.255 10.0.1.0]"},
		{"fd00::fe-fd00::101", "[fd00::fe fd00::ff fd00::100 fd00::101]"},
		{"10.0.0.7-10.0.0.7", "[10.0.0.7]"},
		{"10.0.0.5-10.0.0.2", "error"},
		{"10.0.0.2-fd00::1", "error"},
		{"10.0.0.2-", "error"},
		{"host", "error"},
		{"10.0.0.0-10.0.1.0", "error"}, // 257 addresses
		{"10.0.0.0-10.0.0.255", "256"},
	}
	for _, c := range cases {
		got, err := ParseAddrRange(c.in)
		s := fmt.Sprint(got)
		if err != nil {
			s = "error"
		} else if c.want == "256" {
			s = fmt.Sprint(len(got))
		}
		if s != c.want {
			t.Errorf("ParseAddrRange(%q) = %s (%v), want %s", c.in, s, err, c.want)
		}
	}
}

func FuzzParseAddrRange(f *testing.F) {
	for _, s := range []string{"10.0.0.2", "10.0.0.2-10.0.0.5", "fd00::1-fd00::ff", "-", "1.2.3.4-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseAddrRange(s)
		if err == nil && (len(got) == 0 || len(got) > maxRange) {
			t.Errorf("%q: %d addresses", s, len(got))
		}
	})
}
