package diagnose

import (
	"strings"
	"testing"

	"linerate/box"
)

// TestConntrackSampled runs conntrack-drop over samples of a device in the
// middle (no drop counters of the window): a table at its max is named
// with its host and the sysctls that fix it; a table with room is not.
func TestConntrackSampled(t *testing.T) {
	rates := func(cts ...box.ConntrackRate) []box.Rates {
		var out []box.Rates
		for _, c := range cts {
			out = append(out, box.Rates{Conntrack: &c})
		}
		return out
	}
	for _, c := range []struct {
		name, host string
		rates      []box.Rates
		want       string // in the summary; "" for no finding
		severity   Severity
	}{
		{"full", "router", rates(box.ConntrackRate{Start: 100, Entries: 60000, Max: 65536}, box.ConntrackRate{Start: 60000, Entries: 65536, Max: 65536, Drop: 1200, InsertFailed: 34}),
			"conntrack table full on router: 65536 of 65536 entries, 1234 dropped", Critical},
		{"evicting", "", rates(box.ConntrackRate{Start: 65536, Entries: 65536, Max: 65536, EarlyDrop: 9}),
			"conntrack table full on this host: 65536 of 65536 entries, 0 dropped, 9 evicted", Warning},
		{"room", "router", rates(box.ConntrackRate{Start: 10, Entries: 5000, Max: 65536}), "", ""},
		{"races", "router", rates(box.ConntrackRate{Start: 10, Entries: 500, Max: 65536, InsertFailed: 3}),
			"the connection tracker on router failed 3 inserts, with room in its table", Critical},
		{"none", "router", []box.Rates{{}}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := conntrackDrop{}.Check(&Evidence{Host: c.host, Rates: c.rates})
			if c.want == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || !strings.Contains(fs[0].Summary, c.want) || fs[0].Severity != c.severity {
				t.Fatalf("got %+v, want %q (%v)", fs, c.want, c.severity)
			}
			if strings.Contains(c.want, "full") {
				var names []string
				for _, f := range fs[0].Fixes {
					names = append(names, f.Target)
				}
				if got := strings.Join(names, " "); got != "net.netfilter.nf_conntrack_max net.netfilter.nf_conntrack_buckets net.netfilter.nf_conntrack_tcp_timeout_time_wait" {
					t.Errorf("fixes %s", got)
				}
			}
		})
	}
}
