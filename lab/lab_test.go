package lab

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"linerate/internal/usage"
)

func TestValidateRejects(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string // in the one-line error
	}{
		{Spec{Name: "x", Topology: "ring"}, `unknown topology "ring"`},
		{Spec{Name: "x", Topology: Star, Ports: 0}, "Ports 0"},
		{Spec{Name: "x", Topology: Star, Ports: 300}, "Ports 300"},
		{Spec{Name: "x", Topology: Pair, Ports: 2}, "Ports is for the star"},
		{Spec{Name: "x", Topology: Pair, MTU: 67}, "MTU 67"},
		{Spec{Name: "x", Topology: Pair, MTU: 70000}, "MTU 70000"},
		{Spec{Name: "x", Topology: Pair, Queues: -1}, "Queues -1"},
		{Spec{Name: "x", Topology: Pair, Queues: 65}, "Queues 65"},
		{Spec{Name: "x", Topology: Pair, Rate: 1000}, "Rate 1K"},
		{Spec{Name: "", Topology: Pair}, "lab name is empty"},
		{Spec{Name: "abcdefghijklmnopqrstu", Topology: Pair}, "too long"},
		{Spec{Name: "Demo", Topology: Pair}, `lab name "Demo"`},
		{Spec{Name: "a/b", Topology: Pair}, `lab name "a/b"`},
		{Spec{Name: "-x", Topology: Pair}, `lab name "-x"`},
		{Spec{Name: "x", Topology: Pair, Subnet: netip.MustParsePrefix("fd00::/64")}, "want an IPv4 prefix"},
		{Spec{Name: "x", Topology: Pair, Subnet: netip.MustParsePrefix("10.1.2.0/16")}, "did you mean 10.1.0.0/16"},
		{Spec{Name: "x", Topology: Pair, Subnet: netip.MustParsePrefix("10.0.0.0/30")}, "/8 to /29"},
		{Spec{Name: "x", Topology: Router, Subnet: netip.MustParsePrefix("10.0.0.0/29")}, "room for 1 links"},
		{Spec{Name: "x", Topology: Star, Ports: 64, Subnet: netip.MustParsePrefix("10.0.0.0/24")}, "room for 63 links"},
	} {
		err := tc.spec.Validate()
		if err == nil {
			t.Errorf("%+v: no error, want %q", tc.spec, tc.want)
			continue
		}
		if !usage.Is(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %q (usage %v), want one usage line with %q", tc.spec, err, usage.Is(err), tc.want)
		}
	}
}

func TestValidateDefaults(t *testing.T) {
	s := Spec{Name: "demo-1", Topology: Star, Ports: 64}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Queues != 1 || s.Subnet != DefaultSubnet {
		t.Errorf("defaults: queues %d subnet %s", s.Queues, s.Subnet)
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]uint64{
		"100M": 100e6, "100m": 100e6, "1G": 1e9, "2.5G": 2.5e9, "2.5gbit": 2.5e9,
		"1Gbps": 1e9, "10Gb/s": 10e9, "500000": 500e3, "750k": 750e3, "1T": 1e12,
	} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fast", "G", "-1G", "0", "1e9", "0x10", "1.5.2M", "1Q", "bit", "1_000"} {
		if got, err := ParseRate(in); err == nil || !usage.Is(err) {
			t.Errorf("ParseRate(%q) = %d, %v; want a usage error", in, got, err)
		}
	}
	for _, r := range []uint64{1e6, 2.5e9, 100e6, 123456} {
		back, err := ParseRate(FormatRate(r))
		if err != nil || back != r {
			t.Errorf("FormatRate(%d) = %q reads back as %d, %v", r, FormatRate(r), back, err)
		}
	}
}

func TestPlanRouter(t *testing.T) {
	l, err := Plan(Spec{Name: "demo", Topology: Router})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"lan":    {"router 10.231.1.2/24"},
		"router": {"lan 10.231.1.1/24", "wan 10.231.2.1/24"},
		"wan":    {"router 10.231.2.2/24"},
	}
	if got := l.NodeNames(); strings.Join(got, " ") != "lan router wan" {
		t.Fatalf("nodes %v", got)
	}
	for _, n := range l.Nodes {
		var got []string
		for _, f := range n.Ifaces {
			got = append(got, f.Name+" "+f.Addr.String())
		}
		if strings.Join(got, ",") != strings.Join(want[n.Name], ",") {
			t.Errorf("%s: ifaces %v, want %v", n.Name, got, want[n.Name])
		}
		if n.Netns != "lr-demo-"+n.Name {
			t.Errorf("%s: netns %s", n.Name, n.Netns)
		}
	}
	r, _ := l.Node("router")
	if !r.Forward || r.Masquerade != "wan" || r.Gateway.IsValid() {
		t.Errorf("router: %+v", r)
	}
	lan, _ := l.Node("lan")
	wan, _ := l.Node("wan")
	if lan.Gateway.String() != "10.231.1.1" || wan.Gateway.String() != "10.231.2.1" {
		t.Errorf("gateways lan %s wan %s", lan.Gateway, wan.Gateway)
	}
	for _, tc := range []struct{ from, to, want string }{
		{"lan", "wan", "10.231.2.2"},
		{"lan", "router", "10.231.1.1"},
		{"wan", "router", "10.231.2.1"},
		{"wan", "lan", "10.231.1.2"},
		{"router", "wan", "10.231.2.2"},
		{"lan", "lan", "10.231.1.2"},
		{"router", "router", "10.231.1.1"},
	} {
		got, ok := l.Addr(tc.from, tc.to)
		if !ok || got.String() != tc.want {
			t.Errorf("Addr(%s, %s) = %s, %v; want %s", tc.from, tc.to, got, ok, tc.want)
		}
	}
	hosts := l.Hosts("lan")
	for _, line := range []string{"127.0.0.1\tlocalhost", "10.231.2.2\twan wan.demo", "10.231.1.1\trouter router.demo", "10.231.1.2\tlan lan.demo"} {
		if !strings.Contains(hosts, line+"\n") {
			t.Errorf("hosts of lan lacks %q:\n%s", line, hosts)
		}
	}
	if _, err := l.Node("dmz"); err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "lan, router, wan") {
		t.Errorf("unknown node: %v", err)
	}
}

func TestPlanStarAndPair(t *testing.T) {
	l, err := Plan(Spec{Name: "s", Topology: Star, Ports: 5, Subnet: netip.MustParsePrefix("192.168.64.0/20")})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Nodes) != 6 || len(l.Links) != 5 {
		t.Fatalf("%d nodes, %d links", len(l.Nodes), len(l.Links))
	}
	box, _ := l.Node("box")
	if len(box.Ifaces) != 5 || box.Ifaces[4].Name != "peer5" || box.Ifaces[4].Addr.String() != "192.168.64.81/28" {
		t.Errorf("box: %+v", box.Ifaces)
	}
	p3, _ := l.Node("peer3")
	if p3.Ifaces[0].Addr.String() != "192.168.64.50/28" || p3.Gateway.String() != "192.168.64.49" {
		t.Errorf("peer3: %+v", p3)
	}
	// The box does not forward: peers do not reach each other.
	if a, ok := l.Addr("peer1", "peer2"); ok {
		t.Errorf("peer1 reaches peer2 at %s through a box that does not forward", a)
	}
	if strings.Contains(l.Hosts("peer1"), "peer2") {
		t.Errorf("hosts of peer1 names peer2:\n%s", l.Hosts("peer1"))
	}
	if a, ok := l.Addr("peer1", "box"); !ok || a.String() != "192.168.64.17" {
		t.Errorf("peer1 reaches box at %s, %v", a, ok)
	}

	l, err = Plan(Spec{Name: "p", Topology: Pair, Subnet: netip.MustParsePrefix("172.30.9.0/29")})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := l.Node("a")
	b, _ := l.Node("b")
	if a.Ifaces[0].Name != "b" || a.Ifaces[0].Addr.String() != "172.30.9.5/30" || b.Ifaces[0].Addr.String() != "172.30.9.6/30" {
		t.Errorf("pair: a %+v b %+v", a, b)
	}
}

func TestStateRoundTrip(t *testing.T) {
	d := Dir(t.TempDir())
	l, err := Plan(Spec{Name: "rt", Topology: Router, Rate: 1e9, MTU: 9000, Queues: 4})
	if err != nil {
		t.Fatal(err)
	}
	l.dir = d
	l.Objects = []Object{{Kind: KindNetns, Netns: "lr-rt-lan", Dev: 4, Ino: 4026532177, Done: true}}
	if err := l.create(); err != nil {
		t.Fatal(err)
	}
	if err := l.create(); err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "already up") {
		t.Errorf("second create: %v", err)
	}
	got, err := d.Load("rt")
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Rate != 1e9 || got.Spec.MTU != 9000 || got.Objects[0].Ino != 4026532177 || len(got.Nodes) != 3 {
		t.Errorf("round trip: %+v", got)
	}
	if r, _ := got.Node("router"); r.Ifaces[1].Addr.String() != "10.231.2.1/24" {
		t.Errorf("router after round trip: %+v", r)
	}
	labs, err := d.List()
	if err != nil || len(labs) != 1 || labs[0].Spec.Name != "rt" {
		t.Errorf("List = %v, %v", labs, err)
	}
	if _, err := d.Load("nope"); err == nil || !usage.Is(err) {
		t.Errorf("Load(nope) = %v, want a usage error", err)
	}
	if err := os.WriteFile(filepath.Join(string(d), "bad.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An unreadable state is a partial lab (TestPartialState), saying why.
	if bad, err := d.Load("bad"); err != nil || bad.Status() != "partial" || !strings.Contains(bad.Partial, "bad.json") {
		t.Errorf("Load(bad) = %+v, %v; want a partial lab naming the file", bad, err)
	}
	// create leaves no temporary file behind.
	if _, err := os.Stat(d.statePath("rt") + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("create left its temporary file: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	l, err := Plan(Spec{Name: "demo", Topology: Router, Rate: 2.5e9})
	if err != nil {
		t.Fatal(err)
	}
	l.Complete = true
	var b strings.Builder
	if err := l.Describe(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{
		"lab demo (router): up; subnet 10.231.0.0/16",
		"capped at 2.5Gbit/s each way",
		"lr-demo-router", "10.231.2.1/24", "via 10.231.1.1", "forwards, NAT out of wan",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("Describe lacks %q:\n%s", s, out)
		}
	}
}

func TestResolveOutsideLab(t *testing.T) {
	t.Setenv(EnvLab, "")
	if _, ok, err := Resolve("wan"); ok || err != nil {
		t.Errorf("Resolve outside a lab: %v %v", ok, err)
	}
}
