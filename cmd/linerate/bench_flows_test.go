package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"linerate/internal/testenv"
	"linerate/traffic"
)

// TestBenchFrom runs the real binary in a router lab with an agent in
// every node: the router, neither end, asks lan's agent to send to wan's
// (forward, then reverse through the NAT at 20 kpps) and samples itself as
// the device under test. Refused: a target with no agent, mismatched
// --from and --to.
func TestBenchFrom(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildLinerate(t, t.TempDir())
	name, dir := labName(t, bin, "bf-")
	if up := run(t, bin, "lab", "up", "router", "--name", name, "--serve", "--state-dir", dir); up.code != 0 {
		t.Fatalf("lab up: %d\n%s%s", up.code, up.stdout, up.stderr)
	}
	onRouter := func(args ...string) result {
		return run(t, bin, append([]string{"lab", "exec", "--state-dir", dir, name, "router", "--", bin}, args...)...)
	}
	for _, dir := range []string{"forward", "reverse"} {
		args := []string{"bench", "udp", "--from", "lan", "--to", "wan", "-t", "2", "--warmup", "300ms", "-b", "20kpps", "--json", "--no-save"}
		if dir == "reverse" {
			args = append(args, "--reverse")
		}
		r := onRouter(args...)
		if r.code != 0 {
			t.Fatalf("%s: bench --from lan --to wan on the router: %d\n%s%s", dir, r.code, r.stdout, r.stderr)
		}
		var set traffic.FlowSet
		if err := json.Unmarshal([]byte(r.stdout), &set); err != nil {
			t.Fatalf("%s: %v\n%s", dir, err, r.stdout)
		}
		if len(set.Flows) != 1 || set.Flows[0].Result == nil || set.Flows[0].Error != "" {
			t.Fatalf("%s: flows %+v", dir, set.Flows)
		}
		tot := set.Total
		dut := 0
		for _, s := range set.Samples {
			if s.Side == "dut" {
				dut++
			}
		}
		t.Logf("%s: sent %d received %d (%.0f pps, loss %.3f %%), %d dut samples", dir, tot.SentPackets, tot.ReceivedPackets,
			tot.ReceivedPPS, tot.LossRatio*100, dut)
		if tot.SentPackets < 30000 || tot.LossRatio > 0.01 {
			t.Errorf("%s: 20 kpps for 2 s through the NAT: sent %d, loss %.3f %%", dir, tot.SentPackets, tot.LossRatio*100)
		}
		if dut < 1 {
			t.Errorf("%s: no dut samples from the router", dir)
		}
		var forwarded float64
		for _, s := range set.Samples {
			for ifname, nd := range s.NetDev {
				if ifname != "lo" {
					forwarded += nd.RxPps
				}
			}
		}
		if forwarded < 5000 {
			t.Errorf("%s: the router's samples show %.0f packets/s received in all, not the flow crossing it", dir, forwarded)
		}
		// The page of a set of flows: one section per flow, the router's
		// samples as an end of their own.
		res := filepath.Join(t.TempDir(), "flows.json")
		os.WriteFile(res, []byte(r.stdout), 0o644)
		html := filepath.Join(t.TempDir(), "flows.html")
		if rep := run(t, bin, "report", res, "-o", html); rep.code != 0 {
			t.Fatalf("report of the flows: %d %s", rep.code, rep.stderr)
		}
		page, _ := os.ReadFile(html)
		if !strings.Contains(string(page), "flow 1: lan:7557 → wan:7557") || !strings.Contains(string(page), "dut (this host)") {
			t.Errorf("%s: the page lacks the flow or the router's samples", dir)
		}
	}

	r := onRouter("bench", "udp", "--from", "lan", "--to", "wan:9", "-t", "1", "--no-save")
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "nothing listening") {
		t.Errorf("a target with no agent: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = onRouter("bench", "udp", "--from", "lan", "--from", "wan", "--to", "wan", "--to", "lan", "--to", "router", "--no-save")
	if r.code != 2 || !strings.Contains(r.stderr, "2 --from and 3 --to") {
		t.Errorf("mismatched --from/--to: exit %d\n%s", r.code, r.stderr)
	}
}
