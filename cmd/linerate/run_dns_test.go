package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netns"

	"linerate/internal/testenv"
	"linerate/lab"
	"linerate/plan"
)

// TestRunPlanDNS: a plan's hosts found through DNS, as a user of a
// headless Service or round-robin DNS would give them. A star lab of 4
// peers with an agent in every node; dnsmasq in the box's namespace,
// listening on the box's address only, holds an A record per peer under
// peers.lab and an SRV record per peer under _linerate._tcp.lab; the box's
// /etc/netns/NETNS/resolv.conf points at it, and `ip netns exec` (which
// reads it) runs linerate in the box. run --check prints what each name
// gave, --reach says hello to every agent found, a name with no records is
// one line naming it and its line (exit 1), and a fan-in run from every
// peer found to the box keeps what the names gave in its saved result.
func TestRunPlanDNS(t *testing.T) {
	l := upAgentLab(t, "dn-", "star", "--ports", "4")
	box := lab.NetnsPrefix + l.name + "-box"
	h, err := netns.GetFromName(box)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	a := netip.MustParseAddr
	rec := testenv.DNSRecords{Domain: "lab", Hosts: map[string][]netip.Addr{}}
	for k := 1; k <= 4; k++ {
		addr := a(fmt.Sprintf("10.231.%d.2", k))
		rec.Hosts["peers.lab"] = append(rec.Hosts["peers.lab"], addr)
		rec.Hosts[fmt.Sprintf("peer%d.lab", k)] = []netip.Addr{addr}
		rec.SRV = append(rec.SRV, fmt.Sprintf("_linerate._tcp.lab,peer%d.lab,7557", k))
	}
	dns := testenv.StartDNS(t, &testenv.NetNS{Name: box, Handle: h}, a("10.231.1.1"), rec)
	// The lab wrote the box's hosts file there; resolv.conf is the
	// test's, removed before the lab goes (cleanups run last first).
	conf := filepath.Join("/etc/netns", box, "resolv.conf")
	if err := os.WriteFile(conf, []byte(dns.ResolvConf()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(conf) })

	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inBox := func(args ...string) result {
		t.Helper()
		return runCmd(t, exec.Command("ip", append([]string{"netns", "exec", box, l.bin}, append(args, "--token-file", filepath.Join(l.dir, l.name+".secret"))...)...))
	}

	srvPlan := write("srv.yaml", `hosts:
  box: 10.231.1.1
  peers: dns+srv://_linerate._tcp.lab
flows:
  - {from: peers, to: box, proto: udp}
`)
	r := inBox("run", srvPlan, "--check", "--reach")
	if r.code != 0 {
		t.Fatalf("run --check --reach: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"peers (" + srvPlan + ":3): dns+srv://_linerate._tcp.lab gave 4 agents\n",
		"  peers-1  10.231.1.2:7557  peer1.lab\n",
		"  peers-4  10.231.4.2:7557  peer4.lab\n",
		"plan " + srvPlan + ": 4 flows, 5 hosts",
		"peers-3  reached: linerate",
		"box      reached: linerate",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run --check --reach: no %q in\n%s", want, r.stdout)
		}
	}

	gone := write("gone.yaml", "hosts:\n  box: 10.231.1.1\n  peers: dns://nopeers.lab\nflows:\n  - {from: peers, to: box, proto: udp}\n")
	r = inBox("run", gone, "--check")
	if want := "linerate: " + gone + ":3: host peers: dns://nopeers.lab:7557: no agents found (lookup nopeers.lab on 10.231.1.1:53: no such host)\n"; r.code != 1 || r.stderr != want {
		t.Errorf("a name with no records: exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
	}

	fanIn := write("fan-in.yaml", `hosts:
  box: 10.231.1.1
  peers: dns://peers.lab
defaults: {proto: udp, size: 512, rate: 2kpps, engine: socket}
flows:
  - {from: peers, to: box}
duration: 1s
warmup: 200ms
`)
	hist := t.TempDir()
	r = inBox("run", fanIn, "--json", "--history-dir", hist)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var res plan.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("run --json: %v\n%s", err, r.stdout)
	}
	if len(res.Expansions) != 1 || len(res.Expansions[0].Members) != 4 || res.Expansions[0].Members[3].At != "10.231.4.2:7557" {
		t.Errorf("expansions %+v", res.Expansions)
	}
	if len(res.Rounds) != 1 || len(res.Rounds[0].Flows) != 4 {
		t.Fatalf("rounds %+v", res.Rounds)
	}
	for i, f := range res.Rounds[0].Flows {
		if want := fmt.Sprintf("peers-%d", i+1); f.From != want || f.Result == nil || f.Result.Summary.ReceivedPackets == 0 {
			t.Errorf("flow %d: from %s (want %s), error %q", i+1, f.From, want, f.Error)
		}
	}
	if !strings.Contains(r.stderr, "peers ("+fanIn+":3): dns://peers.lab:7557 gave 4 agents") {
		t.Errorf("the run does not say what the name gave:\n%s", r.stderr)
	}
	saved, _ := filepath.Glob(filepath.Join(hist, "*.json.gz"))
	found := false
	for _, p := range saved {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(z)
		found = found || bytes.Contains(b, []byte(`"expansions"`)) && bytes.Contains(b, []byte(`"dns://peers.lab:7557"`))
	}
	if !found {
		t.Errorf("no saved result in %s holds the expansion (%v)", hist, saved)
	}
}
