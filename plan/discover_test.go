package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"linerate/internal/testenv"
	"linerate/remote"
)

// dnsHosts is the head of the plans below: a sink named one by one, and
// agents found through DNS.
const dnsHosts = `hosts:
  sink: 10.0.0.1
  agents: dns://agents.lab
`

func TestParseDiscoveredErrors(t *testing.T) {
	for _, tc := range []struct{ name, plan, want string }{
		{"address", dnsHosts + "flows:\n  - {from: sink, to: agents, proto: udp, address: 10.0.0.9}\n",
			`p.yaml:5: flow 1: address: agents is dns://agents.lab:7557, whose agents are each reached at their own address`},
		{"host address", "hosts:\n  sink: 10.0.0.1\n  agents: {at: dns://agents.lab, address: 10.0.0.2}\nflows:\n  - {from: agents, to: sink, proto: udp}\n",
			`p.yaml:3: host agents: dns://agents.lab:7557 stands for many agents, each reached at its own address: no address or ports`},
		{"host web", "hosts:\n  sink: 10.0.0.1\n  agents: {at: dns://agents.lab, web: 'x.lab:9464'}\nflows:\n  - {from: agents, to: sink, proto: udp}\n",
			`p.yaml:3: host agents: web x.lab:9464: dns://agents.lab:7557 stands for many agents: give the port only (web: 9464)`},
		{"ceiling", dnsHosts + "flows:\n  - {from: agents, to: sink, proto: udp}\nceiling: {host: agents, pcie: gen2x1}\n",
			`p.yaml:6: ceiling: host agents is dns://agents.lab:7557: the ceiling is one host's bus`},
		{"matrix", dnsHosts + "flows:\n  - {from: agents, to: sink, proto: udp}\nmatrix: {combinations: 1}\n",
			`p.yaml:6: matrix: not with hosts found through DNS (agents is dns://agents.lab:7557): name the hosts of a matrix one by one`},
	} {
		_, err := Parse("p.yaml", []byte(tc.plan))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.name, err, tc.want)
		}
	}
}

// Discover against a real DNS server (dnsmasq in a namespace of the
// test): a dns:// host becomes its agents in place, HOST-1 ... in address
// order; a flow from it is one per agent, a flow from it to itself every
// pair (a mesh), one from an SRV host to it every pair across; sample:
// names every agent; the expansion says what each name gave. A name with
// nothing, a plan that grows past its flows, and names that collide are
// errors naming the host or the flows.
func TestDiscover(t *testing.T) {
	ns := testenv.NewNetNS(t)
	ns.AddAddr(t, "lo", "10.79.0.53/32")
	a := netip.MustParseAddr
	hosts := map[string][]netip.Addr{"agents.lab": {a("10.79.1.3"), a("10.79.1.2"), a("fd00::2")}}
	var srv []string
	for i := range 40 {
		name := fmt.Sprintf("node%d.lab", i)
		hosts[name] = []netip.Addr{netip.AddrFrom4([4]byte{10, 79, 2, byte(i + 1)})}
		srv = append(srv, fmt.Sprintf("_linerate._tcp.lab,%s,%d", name, 7000+i))
	}
	dns := testenv.StartDNS(t, ns, a("10.79.0.53"), testenv.DNSRecords{Domain: "lab", Hosts: hosts, SRV: srv})
	r := dns.Resolver(ns)
	discover := func(text string) (*Plan, error) {
		t.Helper()
		pl, err := Parse("p.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return pl.Discover(context.Background(), r)
	}

	pl, err := discover(dnsHosts + `  nodes: dns+srv://_linerate._tcp.lab
  dut: 10.0.0.254
defaults: {proto: udp, size: 128}
flows:
  - {from: agents, to: sink}
  - {from: agents, to: agents, proto: tcp}
  - {from: sink, to: agents, rate: 1kpps}
sample: [dut, nodes]
`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range pl.Hosts {
		names = append(names, h.Name+"="+h.Reach.String())
	}
	if got := strings.Join(names[:5], " "); got != "sink=10.0.0.1:7557 agents-1=10.79.1.2:7557 agents-2=10.79.1.3:7557 agents-3=[fd00::2]:7557 nodes-1=10.79.2.1:7000" {
		t.Errorf("hosts %s", got)
	}
	if len(pl.Hosts) != 1+3+40+1 || pl.Hosts[44].Name != "dut" {
		t.Errorf("%d hosts, the last %s", len(pl.Hosts), pl.Hosts[len(pl.Hosts)-1].Name)
	}
	var flows []string
	for _, f := range pl.Flows {
		flows = append(flows, fmt.Sprintf("%d:%s>%s@%s", f.Index, f.From, f.To, f.Address))
	}
	want := "1:agents-1>sink@10.0.0.1 1:agents-2>sink@10.0.0.1 1:agents-3>sink@10.0.0.1 " +
		"2:agents-1>agents-2@10.79.1.3 2:agents-1>agents-3@fd00::2 2:agents-2>agents-1@10.79.1.2 2:agents-2>agents-3@fd00::2 2:agents-3>agents-1@10.79.1.2 2:agents-3>agents-2@10.79.1.3 " +
		"3:sink>agents-1@10.79.1.2 3:sink>agents-2@10.79.1.3 3:sink>agents-3@fd00::2"
	if got := strings.Join(flows, " "); got != want {
		t.Errorf("flows\n got %s\nwant %s", got, want)
	}
	if s := pl.Sample; len(s) != 41 || s[0] != "dut" || s[1] != "nodes-1" || s[40] != "nodes-40" {
		t.Errorf("sample %v", s)
	}
	if r := pl.Roles("nodes-7"); len(r) != 1 || r[0] != RoleDUT {
		t.Errorf("nodes-7's roles %v", r)
	}
	// An IPv6 agent gets the payload of the frame over IPv6.
	if sp := pl.Flows[11].Spec(pl.Duration, pl.Warmup, pl.Flows[11].IPv4()); sp.Payload != 128-66 {
		t.Errorf("the flow to fd00::2 sends %d bytes of payload, want %d", sp.Payload, 128-66)
	}
	b, err := json.Marshal(pl.Expansions)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `[{"host":"agents","at":"dns://agents.lab:7557","line":3,"members":[{"name":"agents-1","at":"10.79.1.2:7557"},`) ||
		!strings.Contains(string(b), `{"host":"nodes","at":"dns+srv://_linerate._tcp.lab","line":4,"members":[{"name":"nodes-1","at":"10.79.2.1:7000","target":"node0.lab"},`) {
		t.Errorf("expansions %s", b)
	}

	for _, tc := range []struct{ name, plan, want string }{
		{"nothing", "hosts:\n  sink: 10.0.0.1\n  gone: dns://gone.lab\nflows:\n  - {from: gone, to: sink, proto: udp}\n",
			`p.yaml:3: host gone: dns://gone.lab:7557: no agents found (lookup gone.lab on DNS: no such host)`},
		{"too many flows", "hosts:\n  nodes: dns+srv://_linerate._tcp.lab\nflows:\n  - {from: nodes, to: nodes, proto: udp}\n",
			`p.yaml: the hosts DNS gave make 1560 flows: a plan holds at most 1024`},
		{"names collide", dnsHosts + "  agents-2: 10.0.0.2\nflows:\n  - {from: agents, to: sink, proto: udp}\n  - {from: agents-2, to: sink, proto: udp}\n",
			`p.yaml:4: host agents-2: named twice once DNS was asked (a host given as dns:// names its agents HOST-1, HOST-2 ...): rename one`},
		{"v6 frame", dnsHosts + "flows:\n  - {from: sink, to: agents, proto: udp, size: 64}\n",
			`p.yaml:5: flow 1 to agents-3 (fd00::2): payload -2 bytes: want 16 to 65507 for udp`},
	} {
		_, err := discover(tc.plan)
		got := ""
		if err != nil {
			got = onDNS.ReplaceAllString(err.Error(), " on DNS:")
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	if _, err := discover("hosts:\n  sink: 10.0.0.1\n  gone: dns://gone.lab\nflows:\n  - {from: gone, to: sink, proto: udp}\n"); !errors.Is(err, remote.ErrNoRecords) {
		t.Errorf("%v is not remote.ErrNoRecords", err)
	}
}

// onDNS is the resolver's naming of the server it asked: this machine's
// resolv.conf's, while the test's resolver sends the query to dnsmasq.
var onDNS = regexp.MustCompile(` on [0-9.]+:53:`)

// A plan may name 1,024 hosts (the controller's cost is measured to
// 1,000: docs/plans.md, "Scale"), and not one more.
func TestParseHostLimit(t *testing.T) {
	text := func(n int) string {
		var s strings.Builder
		s.WriteString("hosts:\n  sink: 10.0.0.1\n")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&s, "  s%d: 10.1.%d.%d\n", i, i/250, i%250+1)
		}
		s.WriteString("flows:\n")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&s, "  - {from: s%d, to: sink, proto: udp}\n", i)
		}
		return s.String()
	}
	pl, err := Parse("p.yaml", []byte(text(MaxHosts)))
	if err != nil || len(pl.Hosts) != 1024 || len(pl.Flows) != 1023 {
		t.Fatalf("1,024 hosts: %v", err)
	}
	if _, err := Parse("p.yaml", []byte(text(MaxHosts+1))); err == nil || err.Error() != "p.yaml:1026: more than 1024 hosts" {
		t.Errorf("1,025 hosts: %v", err)
	}
}
