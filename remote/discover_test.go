package remote

import (
	"context"
	"errors"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"linerate/internal/testenv"
)

// Discover against a real DNS server (dnsmasq in a namespace of the test,
// asked over the namespace's network): every A and AAAA record of a
// dns:// name is an agent, in order, IPv4 first; every SRV target is one
// at its first address and the record's port; a name with nothing is an
// error naming it.
func TestDiscover(t *testing.T) {
	ns := testenv.NewNetNS(t)
	ns.AddAddr(t, "lo", "10.79.0.53/32")
	a := netip.MustParseAddr
	dns := testenv.StartDNS(t, ns, a("10.79.0.53"), testenv.DNSRecords{Domain: "lab",
		Hosts: map[string][]netip.Addr{
			"agents.lab": {a("10.79.1.3"), a("fd00::2"), a("10.79.1.2")},
			"peer1.lab":  {a("10.79.2.1")},
			"peer2.lab":  {a("10.79.2.2"), a("fd00::22")},
		},
		SRV: []string{"_linerate._tcp.lab,peer2.lab,7600", "_linerate._tcp.lab,peer1.lab,7557",
			"_broken._tcp.lab,gone.lab,7557"}})
	r := dns.Resolver(ns)
	ctx := context.Background()
	got := func(spec string) string {
		t.Helper()
		h, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		found, err := Discover(ctx, r, h)
		if err != nil {
			// The resolver names the server of this machine's
			// resolv.conf; the test's Dial sent the query to dnsmasq.
			return "error: " + regexp.MustCompile(` on [0-9.]+:53:`).ReplaceAllString(err.Error(), " on DNS:")
		}
		var s []string
		for _, f := range found {
			s = append(s, f.Host.String()+" "+f.Target)
		}
		return strings.Join(s, ", ")
	}
	for spec, want := range map[string]string{
		"dns://agents.lab":             "10.79.1.2:7557 , 10.79.1.3:7557 , [fd00::2]:7557 ",
		"dns://agents.lab:9000":        "10.79.1.2:9000 , 10.79.1.3:9000 , [fd00::2]:9000 ",
		"dns+srv://_linerate._tcp.lab": "10.79.2.1:7557 peer1.lab, 10.79.2.2:7600 peer2.lab",
		"dns://missing.lab":            "error: dns://missing.lab:7557: no agents found (lookup missing.lab on DNS: no such host)",
		"dns+srv://_none._tcp.lab":     "error: dns+srv://_none._tcp.lab: no agents found (lookup _none._tcp.lab on DNS: no such host)",
		"dns+srv://_broken._tcp.lab":   "error: dns+srv://_broken._tcp.lab: no agents found (SRV target gone.lab: lookup gone.lab on DNS: no such host)",
		"10.79.1.2":                    "10.79.1.2:7557 ",
	} {
		if g := got(spec); g != want {
			t.Errorf("%s:\n got %s\nwant %s", spec, g, want)
		}
	}
	h, _ := Parse("dns://missing.lab")
	if _, err := Discover(ctx, r, h); !errors.Is(err, ErrNoRecords) {
		t.Errorf("a name with no records: %v is not ErrNoRecords", err)
	}
	if _, err := Dial(ctx, h, Options{}); !errors.Is(err, ErrSpec) {
		t.Errorf("Dial of a dns:// host: %v, want ErrSpec", err)
	}
}
