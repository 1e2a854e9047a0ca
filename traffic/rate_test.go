package traffic

import (
	"testing"

	"linerate/wire"
)

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		host string
		port uint16
	}{
		{"10.0.0.2", "10.0.0.2", wire.DefaultPort},
		{"10.0.0.2:9000", "10.0.0.2", 9000},
		{"fe80::1", "fe80::1", wire.DefaultPort},
		{"[fe80::1]:80", "fe80::1", 80},
		{"[::1]", "::1", wire.DefaultPort},
		{"pi.lan", "pi.lan", wire.DefaultPort},
	} {
		h, p, err := parseTarget(tc.in)
		if err != nil || h != tc.host || p != tc.port {
			t.Errorf("parseTarget(%q) = %q %d %v", tc.in, h, p, err)
		}
	}
	for _, in := range []string{"", "h:0", "h:70000", ":80"} {
		if _, _, err := parseTarget(in); err == nil {
			t.Errorf("parseTarget(%q) accepted", in)
		}
	}
}
