package plan

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"linerate/ceiling"
	"linerate/remote"
	"linerate/wire"
)

// hosts is the head most test plans share.
const hosts = `hosts:
  a: ssh://root@10.0.0.1
  b: 10.0.0.2
`

func TestParseGood(t *testing.T) {
	pl, err := Parse("/plans/p.yaml", []byte(`# a test
hosts:
  cm4:
    at: ssh://pi@cm4.local:2222
    copy: bin/linerate-arm64
    ports:
      eth1: {address: 10.0.1.1, speed: 1G}
      eth2: {address: [10.0.2.1, 10.0.2.2], speed: 2.5G, mtu: 9000}
  pi1: {at: ssh://pi@pi1, copy: true}
  lap: 192.168.1.20:9000
  router: ssh://router
defaults:
  proto: udp
  size: 128
  rate: 100kpps
flows:
  - {from: pi1, to: cm4, address: 10.0.1.1}
  - from: lap
    to: cm4
    address: [10.0.2.1, 10.0.2.2]
    proto: tcp
    mss: 88
    streams: 4
    rate: 0
  - {from: cm4, to: lap, payload: 1472, direction: bidir, threads: 2, ports: 4, rate: 500Mbps}
  - {from: pi1, to: lap, engine: ring}
sample: [router, cm4]
duration: 30s
warmup: 0s
rounds: 3
ceiling: {host: cm4, pcie: gen2x1, mps: 256, mrrs: 1024, addr32: true, ports: [eth1, eth2]}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Plan{
		File: "/plans/p.yaml",
		Hosts: []Host{
			{Name: "cm4", Reach: remote.Host{Kind: remote.SSH, Name: "cm4.local", Port: 2222, User: "pi"}, Copy: true, Binary: "/plans/bin/linerate-arm64",
				Ports: []Port{{Name: "eth1", Addresses: []string{"10.0.1.1"}, SpeedBps: 1e9, MTU: 1500, Line: 7},
					{Name: "eth2", Addresses: []string{"10.0.2.1", "10.0.2.2"}, SpeedBps: 2.5e9, MTU: 9000, Line: 8}}, Line: 3},
			{Name: "pi1", Reach: remote.Host{Kind: remote.SSH, Name: "pi1", User: "pi"}, Copy: true, Line: 9},
			{Name: "lap", Reach: remote.Host{Kind: remote.Agent, Name: "192.168.1.20", Port: 9000}, Line: 10},
			{Name: "router", Reach: remote.Host{Kind: remote.SSH, Name: "router"}, Line: 11},
		},
		Flows: []Flow{
			{Index: 1, Line: 17, Name: "pi1-cm4", From: "pi1", To: "cm4", Address: "10.0.1.1", Proto: "udp", Direction: "forward", Rate: wire.Rate{PPS: 1e5},
				Size: 128, Streams: 1, Ports: 1, Threads: 1, Engine: "auto", Port: "eth1", SpeedBps: 1e9, MTU: 1500},
			{Index: 2, Line: 18, Name: "lap-cm4", From: "lap", To: "cm4", Address: "10.0.2.1", Proto: "tcp", Direction: "forward",
				Streams: 4, Ports: 1, Threads: 1, MSS: 88, Port: "eth2", SpeedBps: 2.5e9, MTU: 9000},
			{Index: 2, Line: 18, Name: "lap-cm4", From: "lap", To: "cm4", Address: "10.0.2.2", Proto: "tcp", Direction: "forward",
				Streams: 4, Ports: 1, Threads: 1, MSS: 88, Port: "eth2", SpeedBps: 2.5e9, MTU: 9000},
			{Index: 3, Line: 25, Name: "cm4-lap", From: "cm4", To: "lap", Address: "192.168.1.20", Proto: "udp", Direction: "bidir", Rate: wire.Rate{BPS: 5e8},
				Payload: 1472, Streams: 1, Ports: 4, Threads: 2, Engine: "auto", MTU: 1500},
			{Index: 4, Line: 26, Name: "pi1-lap", From: "pi1", To: "lap", Address: "192.168.1.20", Proto: "udp", Direction: "forward", Rate: wire.Rate{PPS: 1e5},
				Size: 128, Streams: 1, Ports: 1, Threads: 1, Engine: "ring", MTU: 1500},
		},
		Sample:   []string{"router", "cm4"},
		Duration: 30 * time.Second,
		Warmup:   0,
		Rounds:   3,
		Ceiling: &Ceiling{Host: "cm4", Bus: &ceiling.Bus{Link: ceiling.Link{Gen: 2, Lanes: 1}, MPS: 256, MRRS: 1024, Addr32: true},
			Ports: []string{"eth1", "eth2"}, Line: 31},
	}
	if !reflect.DeepEqual(pl, want) {
		t.Errorf("plan\n got %+v\nwant %+v", pl, want)
		for i := range min(len(pl.Flows), len(want.Flows)) {
			if !reflect.DeepEqual(pl.Flows[i], want.Flows[i]) {
				t.Errorf("flow %d\n got %+v\nwant %+v", i, pl.Flows[i], want.Flows[i])
			}
		}
	}
	for name, roles := range map[string][]string{"cm4": {RoleClient, RoleServer}, "pi1": {RoleClient}, "lap": {RoleClient, RoleServer}, "router": {RoleDUT}} {
		if got := pl.Roles(name); !reflect.DeepEqual(got, roles) {
			t.Errorf("roles of %s: %v, want %v", name, got, roles)
		}
	}
	// What the runner sends the agents, as traffic.Spec.
	sp := pl.Flows[0].Spec(pl.Duration, pl.Warmup, pl.Flows[0].IPv4())
	if sp.Payload != 128-46 || sp.Rate.PPS != 1e5 || sp.Duration.D() != 30*time.Second || sp.Check() != nil {
		t.Errorf("spec of flow 1: %+v (%v)", sp, sp.Check())
	}
	sp = pl.Flows[3].Spec(pl.Duration, pl.Warmup, true)
	if len(sp.ClientPorts) != 4 {
		t.Errorf("spec of bidir udp flow: %d client ports, want 4", len(sp.ClientPorts))
	}
	// A tcp flow at full speed sends with sendfile unless it says copy; a
	// paced one writes, as udp never does.
	if sp := pl.Flows[1].Spec(pl.Duration, pl.Warmup, true); !sp.ZeroCopy {
		t.Errorf("tcp flow without copy: zerocopy off")
	}
	if sp.ZeroCopy {
		t.Errorf("udp flow: zerocopy on")
	}
	cp, err := Parse("p.yaml", []byte(hosts+"flows:\n  - {from: a, to: b, proto: tcp, copy: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !cp.Flows[0].Copy || cp.Flows[0].Spec(time.Second, 0, true).ZeroCopy {
		t.Errorf("tcp flow with copy: true: %+v", cp.Flows[0])
	}
	paced, err := Parse("p.yaml", []byte(hosts+"flows:\n  - {from: a, to: b, proto: tcp, rate: 20Mbps}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if paced.Flows[0].Spec(time.Second, 0, true).ZeroCopy {
		t.Errorf("paced tcp flow: zerocopy on")
	}
}

// Defaults for one protocol's keys apply to that protocol's flows; a
// flow's own size or payload wins over a default of the other.
func TestParseDefaultsPerProto(t *testing.T) {
	pl, err := Parse("p.yaml", []byte(hosts+`defaults: {size: 128, mss: 100, ports: 4}
flows:
  - {from: a, to: b, proto: udp}
  - {from: a, to: b, proto: udp, payload: 1000}
  - {from: a, to: b, proto: tcp}
`))
	if err != nil {
		t.Fatal(err)
	}
	f := pl.Flows
	if f[0].Size != 128 || f[0].MSS != 0 || f[0].Ports != 4 || f[1].Size != 0 || f[1].Payload != 1000 || f[2].MSS != 100 || f[2].Size != 0 || f[2].Ports != 1 {
		t.Errorf("flows %+v", f)
	}
}

func TestParseDefaults(t *testing.T) {
	pl, err := Parse("p.yaml", []byte(hosts+`flows: [{from: a, to: b, proto: udp}, {from: b, to: a, proto: tcp}]`))
	if err != nil {
		t.Fatal(err)
	}
	if pl.Duration != DefaultDuration || pl.Warmup != DefaultWarmup || pl.Rounds != 1 || pl.Ceiling != nil || pl.Sample != nil {
		t.Errorf("plan defaults: %+v", pl)
	}
	udp, tcp := pl.Flows[0], pl.Flows[1]
	if udp.Address != "10.0.0.2" || udp.Payload != 18 || udp.Ports != 1 || udp.Engine != "auto" || udp.Direction != wire.Forward {
		t.Errorf("udp flow defaults: %+v", udp)
	}
	if fr, _ := udp.Frame(); fr.Bytes != 64 {
		t.Errorf("udp default frame %d bytes, want 64", fr.Bytes)
	}
	if tcp.Address != "10.0.0.1" || tcp.Payload != 0 || tcp.Engine != "" || tcp.MTU != 1500 {
		t.Errorf("tcp flow defaults: %+v", tcp)
	}
}

// Each bad plan gives one line: file:line: what is wrong.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, plan, want string }{
		{"empty", ``, `p.yaml: empty: a plan names hosts and flows (docs/plans.md)`},
		{"syntax", "hosts:\n  a: [\n", `p.yaml:2: YAML: did not find expected node content`},
		{"two documents", hosts + "flows: []\n---\nx: 1\n", `p.yaml:5: a second YAML document: a plan is one`},
		{"not a mapping", "- a\n- b\n", `p.yaml:1: the plan: want a mapping of keys (key: value), not a list`},
		{"unknown key", hosts + "flow: []\n", `p.yaml:4: the plan: unknown key "flow": want hosts, defaults, flows, sample, duration, warmup, rounds, ceiling, matrix`},
		{"key twice", hosts + "rounds: 1\nrounds: 2\n", `p.yaml:5: the plan: rounds given twice`},
		{"no hosts", "flows: []\n", `p.yaml:1: no hosts: name each host and how to reach it (hosts: {cm4: ssh://pi@cm4.local, pi1: 192.168.1.11})`},
		{"no flows", hosts, `p.yaml:1: no flows: give at least one (flows: [{from: pi1, to: cm4, proto: tcp}])`},
		{"empty flows", hosts + "flows: []\n", `p.yaml:4: flows: none given`},
		{"hosts a list", "hosts: [a, b]\nflows: []\n", `p.yaml:1: hosts: want a mapping of names to hosts (cm4: ssh://pi@cm4.local), not a list`},
		{"bad host name", "hosts:\n  a b: 10.0.0.1\n", `p.yaml:2: host name "a b": want letters, digits, '.', '-' and '_' (at most 63)`},
		{"host twice", "hosts:\n  a: 10.0.0.1\n  a: 10.0.0.2\n", `p.yaml:3: host a given twice`},
		{"bad spec", "hosts:\n  a: http://x\n", `p.yaml:2: host a: bad host spec "http://x": scheme "http": want ssh://[user@]host[:port], HOST[:PORT] of a running agent, dns://NAME[:PORT] or dns+srv://_SERVICE._tcp.DOMAIN`},
		{"bad port", "hosts:\n  a:\n    at: 10.0.0.1:99999\n", `p.yaml:3: host a: bad host spec "10.0.0.1:99999": port "99999": want 1-65535`},
		{"no at", "hosts:\n  a: {copy: true}\n", `p.yaml:2: host a: no at: say how to reach it (at: ssh://user@host, or ADDR[:PORT] of a running agent)`},
		{"copy agent", "hosts:\n  a: {at: 10.0.0.1, copy: true}\n", `p.yaml:2: host a: copy needs an ssh:// host (linerate copies itself there over ssh); 10.0.0.1:7557 is an agent already running`},
		{"unknown host key", "hosts:\n  a: {at: 10.0.0.1, cpy: true}\n", `p.yaml:2: host a: unknown key "cpy": want at, copy, address, ports, web`},
		{"bad address", "hosts:\n  a: {at: 10.0.0.1, address: 'x y'}\n", `p.yaml:2: host a: address "x y": want an IP address or a host name`},
		{"port no address", "hosts:\n  a:\n    at: 10.0.0.1\n    ports:\n      eth0: {speed: 1G}\n", `p.yaml:5: host a: port eth0: no address: give the addresses flows reach it at`},
		{"port bad speed", "hosts:\n  a:\n    at: 10.0.0.1\n    ports:\n      eth0: {address: 10.0.0.1, speed: fast}\n",
			`p.yaml:5: host a: port eth0: speed: bad speed "fast": want a rate like 100M, 1G, 2.5G, 10G, 25G or plain bits per second (1000000000)`},
		{"port address twice", "hosts:\n  a:\n    at: 10.0.0.1\n    ports:\n      eth0: {address: 10.0.0.1}\n      eth1: {address: 10.0.0.1}\n",
			`p.yaml:6: host a: address 10.0.0.1 given twice`},
		{"flow not a mapping", hosts + "flows: [a]\n", `p.yaml:4: flow 1: want a mapping of keys (key: value), not "a"`},
		{"unknown flow key", hosts + "flows:\n  - {form: a, to: b, proto: udp}\n", `p.yaml:5: flow 1: unknown key "form": want from, to, address, name, proto, size, payload, streams, flows, ports, threads, rate, direction, mss, engine, copy, dscp, rr`},
		{"no from", hosts + "flows:\n  - {to: b, proto: udp}\n", `p.yaml:5: flow 1: no from: name the sending host`},
		{"no to", hosts + "flows:\n  - {from: a, proto: udp}\n", `p.yaml:5: flow 1: no to: name the receiving host`},
		{"unknown host", hosts + "flows:\n  - {from: a, to: c, proto: udp}\n", `p.yaml:5: flow 1: to c: no such host (hosts: a, b)`},
		{"to an address", hosts + "flows:\n  - {from: a, to: 10.0.0.9, proto: udp}\n",
			`p.yaml:5: flow 1: to 10.0.0.9 is an address, not a host of this plan: flows run between agents; name the host under hosts and this address as its address`},
		{"from == to", hosts + "flows:\n  - from: a\n    to: a\n    proto: udp\n", `p.yaml:6: flow 1: from and to are both a: a flow runs between two hosts`},
		{"no proto", hosts + "flows:\n  - {from: a, to: b}\n", `p.yaml:5: flow 1: no proto: give udp or tcp (here or under defaults)`},
		{"bad proto", hosts + "flows:\n  - {from: a, to: b, proto: sctp}\n", `p.yaml:5: proto "sctp": want udp or tcp`},
		{"bad direction", hosts + "flows:\n  - {from: a, to: b, proto: udp, direction: both}\n", `p.yaml:5: direction "both": want forward, reverse or bidir`},
		{"bad rate", hosts + "flows:\n  - from: a\n    to: b\n    proto: udp\n    rate: fast\n", `p.yaml:8: rate "fast": not a number`},
		{"rate without unit", hosts + "flows:\n  - {from: a, to: b, proto: udp, rate: 100}\n",
			`p.yaml:5: rate "100": give a unit, pps or bps ("100kpps", "900Mbps"), or 0 for as fast as possible`},
		{"bad rate in defaults", hosts + "defaults:\n  rate: 1Xbps\nflows:\n  - {from: a, to: b, proto: udp}\n", `p.yaml:5: rate "1Xbps": not a number`},
		{"streams zero", hosts + "flows:\n  - {from: a, to: b, proto: udp, streams: 0}\n", `p.yaml:5: streams 0: want at least 1`},
		{"streams word", hosts + "flows:\n  - {from: a, to: b, proto: udp, streams: four}\n", `p.yaml:5: streams "four": want a whole number`},
		{"too many streams", hosts + "flows:\n  - {from: a, to: b, proto: tcp, streams: 5000}\n", `p.yaml:5: flow 1: streams 5000: want 1 to 1024`},
		{"small frame", hosts + "flows:\n  - {from: a, to: b, proto: udp, size: 40}\n", `p.yaml:5: size 40: want at least 64`},
		{"size and payload", hosts + "flows:\n  - {from: a, to: b, proto: udp, size: 64, payload: 100}\n", `p.yaml:5: flow 1: size and payload: give one`},
		{"small payload", hosts + "flows:\n  - {from: a, to: b, proto: udp, payload: 8}\n", `p.yaml:5: flow 1: payload 8 bytes: want 16 to 65507 for udp`},
		{"udp mss", hosts + "flows:\n  - {from: a, to: b, proto: udp, mss: 100}\n", `p.yaml:5: flow 1: mss is a tcp segment size: a udp flow sets its packets with size (the frame) or payload`},
		{"udp copy", hosts + "flows:\n  - {from: a, to: b, proto: udp, copy: true}\n", `p.yaml:5: flow 1: copy says how a tcp flow writes (from user memory instead of sendfile): a udp flow has no such choice`},
		{"copy not bool", hosts + "flows:\n  - {from: a, to: b, proto: tcp, copy: maybe}\n", `p.yaml:5: copy "maybe": want true or false`},
		{"tcp size", hosts + "defaults: {size: 128}\nflows:\n  - {from: a, to: b, proto: tcp, size: 128}\n",
			`p.yaml:6: flow 1: size is a udp frame size: a tcp flow takes mss (the segment) or payload (the bytes of each write)`},
		{"tcp ports", hosts + "flows:\n  - {from: a, to: b, proto: tcp, ports: 4}\n", `p.yaml:5: flow 1: ports spreads udp flows over destination ports: a tcp flow takes streams (connections)`},
		{"small mss", hosts + "flows:\n  - {from: a, to: b, proto: tcp, mss: 40}\n", `p.yaml:5: mss 40: want at least 88`},
		{"ring reverse", hosts + "flows:\n  - {from: a, to: b, proto: udp, engine: ring, direction: reverse}\n",
			`p.yaml:5: flow 1: engine ring sends forward only (from the sending host's interface): direction reverse needs the socket engine (or auto)`},
		{"address twice", hosts + "flows:\n  - {from: a, to: b, proto: udp, address: [10.0.0.2, 10.0.0.2]}\n", `p.yaml:5: flow 1: address 10.0.0.2 given twice`},
		{"address not on a port", "hosts:\n  a: 10.0.0.1\n  b:\n    at: 10.0.0.2\n    ports: {eth0: {address: 10.0.0.2}}\nflows:\n  - {from: a, to: b, proto: udp, address: 10.0.0.3}\n",
			`p.yaml:7: flow 1: b has no port with address 10.0.0.3 (its ports: eth0 10.0.0.2)`},
		{"idle host", hosts + "  c: 10.0.0.3\nflows:\n  - {from: a, to: b, proto: udp}\n", `p.yaml:4: host c is in no flow and not under sample: remove it, or sample it`},
		{"unknown sample", hosts + "flows:\n  - {from: a, to: b, proto: udp}\nsample: [c]\n", `p.yaml:6: sample c: no such host (hosts: a, b)`},
		{"sample twice", hosts + "flows:\n  - {from: a, to: b, proto: udp}\nsample: [a, a]\n", `p.yaml:6: sample: a given twice`},
		{"bad duration", hosts + "flows:\n  - {from: a, to: b, proto: udp}\nduration: 10\n", `p.yaml:6: duration "10": want a duration like 10s or 1m30s`},
		{"zero duration", hosts + "flows:\n  - {from: a, to: b, proto: udp}\nduration: 0s\n", `p.yaml:6: duration 0s: want more than 0 and at most 24h0m0s`},
		{"negative warmup", hosts + "flows:\n  - {from: a, to: b, proto: udp}\nwarmup: -1s\n", `p.yaml:6: warmup -1s: want 0 to 24h0m0s`},
		{"zero rounds", hosts + "flows:\n  - {from: a, to: b, proto: udp}\nrounds: 0\n", `p.yaml:6: rounds 0: want 1 to 1000`},
		{"ceiling nothing", hosts + "flows:\n  - {from: a, to: b, proto: udp}\nceiling: {host: b}\n", `p.yaml:6: ceiling: give pcie: genNxM (with mps:) or root: CAPTURE`},
		{"ceiling both", hosts + "flows:\n  - {from: a, to: b, proto: udp}\nceiling: {host: b, pcie: gen2x1, root: x.tar.gz}\n",
			`p.yaml:6: ceiling: pcie and root: give one (a link to model, or a capture of the host)`},
		{"ceiling bad link", hosts + "flows:\n  - {from: a, to: b, proto: udp}\nceiling: {host: b, pcie: gen2}\n",
			`p.yaml:6: ceiling: pcie: bad PCIe link "gen2": want genNxM, e.g. gen2x1 or gen3x4`},
		{"ceiling bad mps", hosts + "flows:\n  - {from: a, to: b, proto: udp}\nceiling:\n  host: b\n  pcie: gen2x1\n  mps: 100\n",
			`p.yaml:9: ceiling: mps 100: want 128, 256, 512, 1024, 2048 or 4096 bytes`},
		{"ceiling mps alone", hosts + "flows:\n  - {from: a, to: b, proto: udp}\nceiling: {host: b, root: c.tgz, mps: 256}\n",
			`p.yaml:6: ceiling: mps describes a PCIe link: give pcie: genNxM too`},
		{"ceiling whose", hosts + "flows:\n  - {from: a, to: b, proto: udp}\nceiling: {pcie: gen2x1}\n", `p.yaml:6: ceiling: say whose bus it is (host: NAME)`},
		{"ceiling unknown host", hosts + "flows:\n  - {from: a, to: b, proto: udp}\nceiling: {host: c, pcie: gen2x1}\n", `p.yaml:6: ceiling: host c: no such host (hosts: a, b)`},
		{"ceiling unknown port", hosts + "flows:\n  - {from: a, to: b, proto: udp}\nceiling: {host: b, pcie: gen2x1, ports: [eth9]}\n",
			`p.yaml:6: ceiling: ports: b has no port eth9 (give it under hosts: b: ports:)`},
		{"merge key", hosts + "defaults: &d {proto: udp}\nflows:\n  - {<<: *d, from: a, to: b}\n", `p.yaml:6: flow 1: merge keys (<<) are not supported: use defaults`},
	} {
		_, err := Parse("p.yaml", []byte(tc.plan))
		if err == nil {
			t.Errorf("%s: no error, want %s", tc.name, tc.want)
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: %v is a %T, want *plan.Error", tc.name, err, err)
		}
		if err.Error() != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, err, tc.want)
		}
	}
}

// Aliases reach what their anchor holds.
func TestParseAliases(t *testing.T) {
	pl, err := Parse("p.yaml", []byte(hosts+`flows:
  - &f {from: a, to: b, proto: udp, rate: 10kpps}
  - *f
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Flows) != 2 || pl.Flows[1].Rate.PPS != 1e4 || pl.Flows[1].Index != 2 {
		t.Errorf("flows %+v", pl.Flows)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, want string }{
		{"missing.yaml", ": cannot read the plan: no such file or directory"},
		{"sub", ": a directory"},
	} {
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := Load(filepath.Join(dir, tc.name))
		if want := filepath.Join(dir, tc.name) + tc.want; err == nil || err.Error() != want {
			t.Errorf("Load(%s): %v, want %s", tc.name, err, want)
		}
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("#"+strings.Repeat("x", maxFileBytes)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || err.Error() != big+": larger than 1048576 bytes: not a plan" {
		t.Errorf("Load(big): %v", err)
	}
}

// Every plan in examples/ reads and gives an expectation; each models a
// seed, and the figures the seeds hold it against are the ones here.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		pl, err := Load(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		var bus *ceiling.Bus
		if pl.Ceiling != nil {
			bus = pl.Ceiling.Bus
		}
		e, err := pl.Expect(bus)
		if err != nil {
			t.Errorf("%s: expect: %v", f, err)
			continue
		}
		switch filepath.Base(f) {
		case "cm4-fan-in.yaml":
			// Five gigabit links of TCP at MTU 1500: 941.5 Mb/s each.
			near(t, f+" total", e.Total.GoodputBps, 5*941.5e6, 1e6)
			if len(e.Ports) != 5 || e.Bus == nil || len(e.Bus.Ports) != 4 {
				t.Fatalf("%s: %d ports, bus %+v", f, len(e.Ports), e.Bus)
			}
			// The Gen2 x1 link at MPS 128 carries about 3 Gb/s of TCP
			// (the seed: 3.06 Gb/s through it and eth0 together).
			near(t, f+" bus", e.Bus.CarriedBps, 3.08e9, 0.02e9)
			near(t, f+" limited", e.LimitedBps, 3.08e9+941.5e6, 0.03e9)
		case "routerpi-bidir.yaml":
			if r := pl.Roles("router"); len(r) != 1 || r[0] != RoleDUT {
				t.Errorf("%s: router roles %v, want dut", f, r)
			}
			near(t, f+" total", e.Total.GoodputBps, 2*941.5e6, 1e6)
		case "apu4-mars-venus.yaml":
			// Four addresses on one gigabit port: 78-byte frames,
			// 1,275,510 a second in all, not four times that.
			if len(pl.Flows) != 4 || len(e.Ports) != 1 {
				t.Fatalf("%s: %d flows, %d ports", f, len(pl.Flows), len(e.Ports))
			}
			near(t, f+" pps", e.Total.PPS, 1275510, 1)
		case "cm4-matrix.yaml":
			// The seed's method: each port alone, every combination, all
			// five: 31 cells; alone a port carries its gigabit, all five
			// are held by the bus as in cm4-fan-in.yaml.
			cells := pl.Matrix.Cells()
			if len(cells) != 31 || pl.Matrix.Rounds != 3 {
				t.Fatalf("%s: %d cells, %d rounds", f, len(cells), pl.Matrix.Rounds)
			}
			alone, err := pl.CellPlan(cells[0]).Expect(bus)
			if err != nil {
				t.Fatal(err)
			}
			near(t, f+" alone", alone.LimitedBps, 941.5e6, 1e6)
			all, err := pl.CellPlan(cells[30]).Expect(bus)
			if err != nil {
				t.Fatal(err)
			}
			near(t, f+" all five", all.LimitedBps, 3.08e9+941.5e6, 0.03e9)
		case "cm4-fan-in-lab.yaml":
			// The twin in a star lab: five 1G links, the CM4's bus kept
			// (the run says it does not apply to veths).
			near(t, f+" total", e.Total.GoodputBps, 5*941.5e6, 1e6)
			if len(e.Ports) != 5 || e.Bus == nil || len(e.Bus.Ports) != 4 || pl.Hosts[0].Reach.Kind == remote.SSH {
				t.Fatalf("%s: %d ports, bus %+v", f, len(e.Ports), e.Bus)
			}
			near(t, f+" limited", e.LimitedBps, 3.08e9+941.5e6, 0.03e9)
		case "cm4-matrix-lab.yaml":
			if cells := pl.Matrix.Cells(); len(cells) != 31 || pl.Matrix.Rounds != 3 {
				t.Fatalf("%s: %d cells, %d rounds", f, len(cells), pl.Matrix.Rounds)
			}
		case "routerpi-bidir-lab.yaml":
			if r := pl.Roles("router"); len(r) != 1 || r[0] != RoleDUT {
				t.Errorf("%s: router roles %v, want dut", f, r)
			}
			near(t, f+" total", e.Total.GoodputBps, 2*941.5e6, 1e6)
		case "apu4-mars-venus-lab.yaml":
			// One address on one gigabit port, the datagrams spread over
			// four destination ports: 78-byte frames at line rate.
			if len(pl.Flows) != 1 || len(e.Ports) != 1 || pl.Flows[0].Ports != 4 {
				t.Fatalf("%s: %d flows, %d ports", f, len(pl.Flows), len(e.Ports))
			}
			near(t, f+" pps", e.Total.PPS, 1275510, 1)
		case "lab-star32.yaml":
			// 32 peers of a star lab, each a paced 2 kpps to the box.
			if len(pl.Hosts) != 33 || len(pl.Flows) != 32 {
				t.Fatalf("%s: %d hosts, %d flows", f, len(pl.Hosts), len(pl.Flows))
			}
			near(t, f+" pps", e.Total.PPS, 32*2000, 1)
		default:
			t.Errorf("%s: an example the test does not know: add what it models here", f)
		}
	}
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s: %.4g, want %.4g ± %.2g", what, got, want, tol)
	}
}

func TestExpectSharing(t *testing.T) {
	pl, err := Parse("p.yaml", []byte(`hosts:
  a: 10.0.0.1
  b:
    at: 10.0.0.2
    ports: {eth0: {address: [10.0.0.2, 10.0.0.3], speed: 1G}}
  c: 10.0.0.9
flows:
  - {from: a, to: b, address: 10.0.0.2, proto: udp, size: 1518, rate: 500Mbps}
  - {from: a, to: b, address: 10.0.0.3, proto: udp, size: 1518, rate: 700Mbps}
  - {from: a, to: b, address: 10.0.0.3, proto: udp, size: 1518, direction: reverse}
  - {from: a, to: c, proto: tcp}
`))
	if err != nil {
		t.Fatal(err)
	}
	e, err := pl.Expect(nil)
	if err != nil {
		t.Fatal(err)
	}
	// 500 + 700 Mb/s of frames ask for 1.2 Gb/s of a 1G port: both scaled
	// by the line time they take (1538/1518 of the frame bits).
	line := 1.2e9 * 1538 / 1518
	near(t, "in", e.Ports[0].In.LineBps, 1e9, 1)
	near(t, "flow 1", e.Flows[0].Forward.LineBps, 0.5e9*1538/1518/line*1e9, 1)
	// The reverse flow has the way out to itself: line rate in 1518-byte
	// frames, 81,274 a second.
	near(t, "out", e.Ports[0].Out.PPS, 1e9/(1538*8), 0.001)
	if e.Ports[1].In.Known || e.Total.Known {
		t.Errorf("a port without speed and a flow without rate: %+v, total %+v", e.Ports[1].In, e.Total)
	}
}

// A named pipe is refused at once, in one line: opening it for reading
// used to block until a writer came, and SIGTERM did not end it.
func TestLoadFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "plan.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Load(fifo); done <- err }()
	select {
	case err := <-done:
		if want := fifo + ": a named pipe (FIFO), not a regular file"; err == nil || err.Error() != want {
			t.Fatalf("Load(fifo): %v, want %s", err, want)
		}
	case <-time.After(5 * time.Second):
		// Release the blocked open before failing.
		if w, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
			defer w.Close()
		}
		t.Fatal("Load of a named pipe blocked")
	}
}

// A flow's dscp (a name or a number) is in the spec its agents run.
func TestParseDSCP(t *testing.T) {
	pl, err := Parse("p.yaml", []byte(hosts+`defaults: {dscp: af41}
flows:
  - {from: a, to: b, proto: udp, dscp: EF}
  - {from: a, to: b, proto: tcp}
  - {from: a, to: b, proto: tcp, dscp: 8}
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{46, 34, 8} {
		if got := pl.Flows[i].Spec(time.Second, 0, true).DSCP; got != want {
			t.Errorf("flow %d: dscp %d, want %d", i, got, want)
		}
	}
	if _, err := Parse("p.yaml", []byte(hosts+"flows:\n  - {from: a, to: b, proto: udp, dscp: 64}\n")); err == nil || !strings.Contains(err.Error(), "dscp") {
		t.Errorf("dscp 64: %v", err)
	}
}

// flows: N is bench's --flows: ports (default 1) × N/ports streams.
func TestParseFlows(t *testing.T) {
	pl, err := Parse("p.yaml", []byte(hosts+`defaults: {flows: 8}
flows:
  - {from: a, to: b, proto: udp}
  - {from: a, to: b, proto: udp, ports: 2, name: two}
  - {from: a, to: b, proto: udp, streams: 3, name: own}
  - {from: a, to: b, proto: tcp, name: tcp}
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][2]int{{1, 8}, {2, 4}, {1, 3}, {1, 1}} {
		f := pl.Flows[i]
		if f.Ports != want[0] || f.Streams != want[1] {
			t.Errorf("flow %s: %d ports × %d streams, want %d × %d", f.Name, f.Ports, f.Streams, want[0], want[1])
		}
	}
	for _, c := range []struct{ plan, want string }{
		{"flows:\n  - {from: a, to: b, proto: udp, flows: 6, ports: 4}\n", "flows 6 over ports 4: want a multiple of ports"},
		{"flows:\n  - {from: a, to: b, proto: udp, flows: 4, streams: 2}\n", "streams and flows: give one"},
		{"flows:\n  - {from: a, to: b, proto: tcp, flows: 4}\n", "flows spreads udp over source ports"},
		{"flows:\n  - {from: a, to: b, flows: 0}\n", "flows 0: want at least 1"},
	} {
		if _, err := Parse("p.yaml", []byte(hosts+c.plan)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.plan, err, c.want)
		}
	}
}
