package tune

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"linerate/diagnose"
	"linerate/internal/usage"
)

func TestParseItem(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Item
		err  string
	}{
		{in: "rps:eth1/rx-0=1-3", want: Item{Kind: "rps", Target: "eth1/rx-0", Value: "1-3"}},
		{in: "coalesce:eth0=rx-usecs=100,rx-frames=10", want: Item{Kind: "coalesce", Target: "eth0", Value: "rx-usecs=100,rx-frames=10"}},
		{in: "sysctl:net.core.netdev_max_backlog=4096", want: Item{Kind: "sysctl", Target: "net.core.netdev_max_backlog", Value: "4096"}},
		{in: "sysctl:net.ipv4.tcp_rmem=4096 131072 6291456", want: Item{Kind: "sysctl", Target: "net.ipv4.tcp_rmem", Value: "4096 131072 6291456"}},
		{in: "sysctl:net/ipv4/conf/eth0.100/rp_filter=2", want: Item{Kind: "sysctl", Target: "net/ipv4/conf/eth0.100/rp_filter", Value: "2"}},
		{in: "rps:eth1/rx-0=", want: Item{Kind: "rps", Target: "eth1/rx-0", Value: ""}},
		{in: "boot:cmdline.txt=pci=pcie_bus_perf", want: Item{Kind: "boot", Target: "cmdline.txt", Value: "pci=pcie_bus_perf"}},
		{in: "rps=eth1", err: "want KIND:TARGET=VALUE"},
		{in: "rps:eth1", err: "want KIND:TARGET=VALUE"},
		{in: ":eth1=1", err: "want KIND:TARGET=VALUE"},
		{in: "rps:=1", err: "want KIND:TARGET=VALUE"},
		{in: "turbo:eth1=on", err: `unknown kind "turbo" (kinds: bench, boot, channels, coalesce`},
	} {
		got, err := ParseItem(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !usage.Is(err) {
				t.Errorf("%q: %v, want bad input with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v", tc.in, got, err, tc.want)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("%q prints back as %q", tc.in, got.String())
		}
	}
}

func TestParseServiceState(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ServiceState
		err  bool
	}{
		{in: "LoadState=loaded\nActiveState=active\n", want: ServiceState{Loaded: true, Active: "active"}},
		{in: "ActiveState=inactive\nLoadState=loaded\n", want: ServiceState{Loaded: true, Active: "inactive"}},
		{in: "LoadState=not-found\nActiveState=inactive\n", want: ServiceState{Loaded: false, Active: "inactive"}},
		{in: "LoadState=loaded\nActiveState=failed\n", want: ServiceState{Loaded: true, Active: "failed"}},
		{in: "Failed to connect to bus: Host is down\n", err: true},
		{in: "", err: true},
	} {
		got, err := ParseServiceState(strings.NewReader(tc.in))
		if tc.err != (err != nil) || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestReadFindings(t *testing.T) {
	const finding = `{"rule":"rps-off","severity":"critical","subject":"eth1","summary":"s","evidence":["e"],
	 "fixes":[{"kind":"rps","target":"eth1/rx-0","value":"1-3","note":"steer"},
	          {"kind":"sysctl","target":"net.core.rps_sock_flow_entries","value":"32768"}]}`
	const other = `{"rule":"irq-single-cpu","severity":"warning","subject":"cpu0","summary":"s","evidence":[],
	 "fixes":[{"kind":"rps","target":"eth1/rx-0","value":"3"},{"kind":"irq-affinity","target":"41","value":"1"}]}`
	for _, in := range []string{
		"[" + finding + "," + other + "]",
		`{"schema":1,"findings":[` + finding + "," + other + `],"rules":14}`,
		`{"findings":[` + finding + "," + other + `],"origin":{"host":"apu4","machine_id":"9f2c","source":"capture apu4.tar.gz"}}`,
	} {
		fs, err := ReadFindings(strings.NewReader(in))
		if err != nil {
			t.Fatalf("%v", err)
		}
		if strings.Contains(in, "origin") != (fs.Origin != nil) || fs.Origin != nil && fs.Origin.Host != "apu4" {
			t.Errorf("origin %+v from %s", fs.Origin, in)
		}
		var got []string
		for _, it := range ItemsFromFindings(fs.Findings) {
			got = append(got, it.String()+" ("+it.Note+")")
		}
		// The first finding's rps fix wins over the second's.
		want := []string{"rps:eth1/rx-0=1-3 (rps-off: steer)", "sysctl:net.core.rps_sock_flow_entries=32768 (rps-off)",
			"irq-affinity:41=1 (irq-single-cpu)"}
		if !slices.Equal(got, want) {
			t.Errorf("items %q, want %q", got, want)
		}
	}
	for _, in := range []string{`{"nics":[]}`, `[{"rule":`, "inspect output"} {
		if _, err := ReadFindings(strings.NewReader(in)); err == nil || !usage.Is(err) {
			t.Errorf("%q: %v, want bad input", in, err)
		}
	}
	// Findings as the diagnose package marshals them read back the same.
	orig := []diagnose.Finding{{Rule: "coalescing-off", Severity: diagnose.Warning, Subject: "eth0",
		Fixes: []diagnose.Fix{{Kind: "coalesce", Target: "eth0", Value: "rx-usecs=100,rx-frames=10", Note: "seed 002"}}}}
	b, err := json.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := ReadFindings(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if got := ItemsFromFindings(fs.Findings); len(got) != 1 || got[0] != (Item{Kind: "coalesce", Target: "eth0", Value: "rx-usecs=100,rx-frames=10", Note: "coalescing-off: seed 002"}) {
		t.Errorf("round trip: %+v", got)
	}
}

func TestScope(t *testing.T) {
	items := []Item{
		{Kind: "irq-affinity", Target: "41", Value: "1"},
		{Kind: "rps", Target: "eth1/rx-0", Value: "3"},
		{Kind: "coalesce", Target: "eth0", Value: "rx-usecs=100"},
		{Kind: "governor", Target: "all", Value: "performance"},
		{Kind: "feature", Target: "eth1/generic-receive-offload", Value: "on"},
	}
	names := func(its []Item) []string {
		var s []string
		for _, it := range its {
			s = append(s, it.Kind.String())
		}
		return s
	}
	if got := names(Scope(items, "box")); !slices.Equal(got, []string{"irq-affinity", "governor"}) {
		t.Errorf("box: %v", got)
	}
	if got := names(Scope(items, "eth1")); !slices.Equal(got, []string{"rps", "feature"}) {
		t.Errorf("eth1: %v", got)
	}
	if got := Scope(items, ""); len(got) != len(items) {
		t.Errorf("all: %v", got)
	}
}

func TestDescribeTable(t *testing.T) {
	for _, tc := range []struct {
		t    []uint32
		want string
	}{
		{[]uint32{0, 1, 0, 1, 0, 1, 0, 1}, "equal 2"},
		{[]uint32{0, 0, 0, 0}, "equal 1"},
		{[]uint32{0, 1, 2, 3, 0, 1, 2, 3}, "equal 4"},
		// The APU4 post: 128 buckets spread unevenly.
		{[]uint32{0, 0, 0, 1, 0, 0, 0, 1}, "custom, buckets per queue 6/2"},
	} {
		if got := describeTable(tc.t); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.t, got, tc.want)
		}
	}
}

func TestUnitEscape(t *testing.T) {
	for in, want := range map[string]string{
		"eth0":     "eth0",
		"enp4s0":   "enp4s0",
		"wg-home":  `wg\x2dhome`,
		"eth0.100": "eth0.100",
		".hidden":  `\x2ehidden`,
		"br_lan:1": "br_lan:1",
		"tun+":     `tun\x2b`,
	} {
		if got := unitEscape(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestSysctlFile(t *testing.T) {
	for in, want := range map[string]string{
		"net.core.rmem_max":                "proc/sys/net/core/rmem_max",
		"net/ipv4/conf/eth0.100/rp_filter": "proc/sys/net/ipv4/conf/eth0.100/rp_filter",
		"kernel.sched_autogroup_enabled":   "proc/sys/kernel/sched_autogroup_enabled",
	} {
		if got, err := sysctlFile(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "net..core", "net/../../etc/passwd", "net.core.a b"} {
		if _, err := sysctlFile(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestKeyValues(t *testing.T) {
	kv, err := keyValues("rx-usecs=100,rx-frames=10", []string{"rx-usecs", "rx-frames"})
	if err != nil || joinKV(kv) != "rx-usecs=100,rx-frames=10" {
		t.Errorf("%v %v", kv, err)
	}
	for _, in := range []string{"rx-usecs", "rx-usecs=1,rx-usecs=2", "tx-bogus=1", "rx-usecs="} {
		if _, err := keyValues(in, []string{"rx-usecs"}); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
