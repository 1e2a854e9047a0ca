package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"linerate/ledger"
	"linerate/results"
)

// TestBenchFrom runs the real binary in a router lab with an agent in
// every node: the router, neither end, asks lan's agent to send to wan's
// (forward, then reverse through the NAT at 20 kpps) and samples itself as
// the device under test. Refused: a target with no agent, mismatched
// --from and --to.
func TestBenchFrom(t *testing.T) {
	l := upAgentLab(t, "bf-", "router")
	onRouter := func(args ...string) result { return l.exec("router", append([]string{"linerate"}, args...)...) }
	for _, dir := range []string{"forward", "reverse"} {
		args := []string{"bench", "udp", "--from", "lan", "--to", "wan", "-t", "2", "--warmup", "300ms", "-b", "20kpps", "--json", "--no-save"}
		if dir == "reverse" {
			args = append(args, "--reverse")
		}
		r := onRouter(args...)
		if r.code != 0 {
			t.Fatalf("%s: bench --from lan --to wan on the router: %d\n%s%s", dir, r.code, r.stdout, r.stderr)
		}
		var set results.FlowSet
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
		if rep := run(t, l.bin, "report", res, "-o", html); rep.code != 0 {
			t.Fatalf("report of the flows: %d %s", rep.code, rep.stderr)
		}
		page, _ := os.ReadFile(html)
		if !strings.Contains(string(page), "flow 1: lan:7557 → wan:7557") || !strings.Contains(string(page), "dut (this host)") {
			t.Errorf("%s: the page lacks the flow or the router's samples", dir)
		}
	}

	// The simple IMIX from lan's agent (refused before the flow carried
	// the mix): each frame size is sent in its share of 7:4:1 and arrives.
	mx := onRouter("bench", "udp", "--from", "lan", "--to", "wan", "--size", "imix", "-t", "2", "--warmup", "300ms", "-b", "12kpps",
		"--probe-interval", "0", "--json", "--no-save")
	var mset results.FlowSet
	if err := json.Unmarshal([]byte(mx.stdout), &mset); err != nil || mx.code != 0 || len(mset.Flows) != 1 || mset.Flows[0].Result == nil {
		t.Fatalf("bench --from lan --size imix: %d %v\n%s%s", mx.code, err, mx.stdout, mx.stderr)
	}
	share := map[int]float64{64: 7.0 / 12, 570: 4.0 / 12, 1518: 1.0 / 12}
	sizes := mset.Flows[0].Result.Summary.Sizes
	if len(sizes) != len(share) {
		t.Fatalf("imix from lan's agent: sizes %+v, want 64, 570 and 1518", sizes)
	}
	for _, s := range sizes {
		t.Logf("imix from lan's agent: %d-byte frames sent %d (%.3f) received %d", s.Frame, s.SentPackets, s.SentShare, s.ReceivedPackets)
		want, ok := share[s.Frame]
		if !ok || s.SentPackets < 1000 || s.ReceivedPackets < s.SentPackets*99/100 || s.SentShare < want-0.01 || s.SentShare > want+0.01 {
			t.Errorf("imix from lan's agent: %d-byte frames sent %d (share %.3f, want %.3f), received %d", s.Frame, s.SentPackets, s.SentShare, want, s.ReceivedPackets)
		}
	}

	// The router drops every 10th forwarded datagram: the flow's ledger
	// places them at the router (side path), from its own counters.
	rule := exec.Command(l.bin, "lab", "exec", "--state-dir", l.dir, l.name, "router", "--", "nft", "-f", "-")
	rule.Stdin = strings.NewReader("table inet bfdrop {\n chain passing {\n  type filter hook forward priority 0;\n  meta l4proto udp numgen inc mod 10 == 0 drop\n }\n}\n")
	if out, err := rule.CombinedOutput(); err != nil {
		t.Fatalf("nft in the router: %v\n%s", err, out)
	}
	fw := onRouter("bench", "udp", "--from", "lan", "--to", "wan", "-t", "2", "--warmup", "300ms", "-b", "10kpps", "--probe-interval", "0", "--json", "--no-save")
	var set results.FlowSet
	if err := json.Unmarshal([]byte(fw.stdout), &set); err != nil || len(set.Flows) != 1 || set.Flows[0].Result == nil {
		t.Fatalf("bench through the firewall: %v\n%s%s", err, fw.stdout, fw.stderr)
	}
	res := set.Flows[0].Result
	if res.Ledger == nil {
		t.Fatalf("no ledger: %+v", res.Notes)
	}
	var atRouter uint64
	for _, e := range res.Ledger.Entries {
		t.Logf("ledger: %s %s %s %d %v", e.Host, e.Side, e.Place, e.Packets, e.Evidence)
		if e.Host == "dut" && e.Side == ledger.Path && e.Place == ledger.Netfilter {
			atRouter += e.Packets
		}
	}
	lost := res.Summary.LostPackets
	if lost < res.Summary.SentPackets/20 || atRouter < lost*9/10 || atRouter > lost*11/10 {
		t.Errorf("lost %d of %d; the ledger places %d at the router's netfilter", lost, res.Summary.SentPackets, atRouter)
	}
	l.exec("router", "nft", "delete", "table", "inet", "bfdrop")

	// The controller elsewhere (in wan), the router's agent sampling it:
	// --sample router.
	ctl := l.exec("wan", "linerate", "bench", "udp", "--from", "lan", "--to", "wan",
		"--sample", "router", "-t", "2", "--warmup", "300ms", "-b", "10kpps", "--json", "--no-save")
	var sampled results.FlowSet
	if err := json.Unmarshal([]byte(ctl.stdout), &sampled); err != nil || ctl.code != 0 {
		t.Fatalf("--sample router from wan: %d %v\n%s%s", ctl.code, err, ctl.stdout, ctl.stderr)
	}
	var routerPPS float64
	for _, sm := range sampled.Samples {
		if sm.Host == "router:7557" {
			routerPPS = max(routerPPS, sm.NetDev["lan"].RxPps)
		}
	}
	if routerPPS < 5000 {
		t.Errorf("--sample router: the router's lan received %.0f pps at most in its samples, want the 10 kpps flow", routerPPS)
	}

	// The run kept in the history; the router diagnoses itself from it.
	hist := t.TempDir()
	kept := onRouter("bench", "udp", "--from", "lan", "--to", "wan", "-t", "2", "--warmup", "300ms", "-b", "20kpps", "--history-dir", hist)
	i := strings.Index(kept.stderr, "saved as run ")
	if kept.code != 0 || i < 0 {
		t.Fatalf("bench --from kept: %d\n%s", kept.code, kept.stderr)
	}
	id := strings.Fields(kept.stderr[i+len("saved as run "):])[0]
	diag := onRouter("diagnose", id, "--history-dir", hist, "--no-save")
	if diag.code != 0 || !strings.Contains(diag.stdout, "diagnosis of run "+id+" (the device in the middle; this host's configuration, read now)") {
		t.Errorf("diagnose of the flows run: %d\n%s%s", diag.code, diag.stdout, diag.stderr)
	}

	r := onRouter("bench", "udp", "--from", "lan", "--to", "wan:9", "-t", "1", "--no-save")
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "nothing listening") {
		t.Errorf("a target with no agent: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = onRouter("bench", "udp", "--from", "lan", "--from", "wan", "--to", "wan", "--to", "lan", "--to", "router", "--no-save")
	if r.code != 2 || !strings.Contains(r.stderr, "--to gives 3 targets for 2 senders") {
		t.Errorf("mismatched --from/--to: exit %d\n%s", r.code, r.stderr)
	}
}

// TestBenchFromSearch runs the zero-loss search as a third-party flow
// through the router of a lab whose links are shaped to 100 Mbit/s: the
// NDR at 1518-byte frames comes back from lan's agent, below what the
// shaper passes, with the agent's progress lines.
func TestBenchFromSearch(t *testing.T) {
	l := upAgentLab(t, "bs-", "router", "--rate", "100M")
	r := l.exec("router", "linerate", "bench", "udp", "--from", "lan", "--to", "wan",
		"--search", "ndr", "--sizes", "1518", "--trial", "500ms", "--max-trial", "3s", "--precision", "1%", "--probe-interval", "0", "--json", "--no-save")
	if r.code != 0 {
		t.Fatalf("search --from: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var set results.FlowSet
	if err := json.Unmarshal([]byte(r.stdout), &set); err != nil || len(set.Flows) != 1 || set.Flows[0].Result == nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	s := set.Flows[0].Result.Search
	if len(s) != 1 {
		t.Fatalf("search %+v", s)
	}
	// 100 Mbit/s of 1518-byte frames, 20 bytes of preamble and gap not
	// shaped: tbf counts the frame without FCS (1514 bytes).
	shaper := 100e6 / (1514 * 8)
	if s[0].CeilingPPS > 0 {
		shaper = s[0].CeilingPPS // the path's shaper as the agent found it
	}
	t.Logf("NDR at 1518 B through the router: %.0f fps (the shaper passes %.0f); progress lines: %d", s[0].NDRPPS, shaper,
		strings.Count(r.stderr, "search [lan:7557 → wan]"))
	// How close to the shaper the NDR lands is TestSearchShapedVeth's to
	// judge (a quiet machine); a busy machine may lose a trial to a
	// stalled sender. Over the shaper, the lab shaper's queue and bucket
	// (255 frames) absorb the excess of a 500 ms trial a few percent over
	// its rate (8,720 fps once passed a 8,256 fps shaper), so the agent's
	// search reads them and runs its final trials over the ceiling up to
	// --max-trial: at most 255 frames over 3 s, 1 %, can pass unseen.
	if b := s[0].Buffering; b == nil || !strings.Contains(b.What, "tbf") {
		t.Errorf("buffering %+v: the agent's search did not read the lab shaper's", b)
	}
	if s[0].NDRPPS <= shaper*0.5 || s[0].NDRPPS > shaper*1.02 {
		t.Errorf("NDR %.0f fps, want at most 2 %% above the shaper's %.0f and more than half of it", s[0].NDRPPS, shaper)
	}
	if !strings.Contains(r.stderr, "search [lan:7557 → wan]") {
		t.Errorf("no progress lines from the agent:\n%s", r.stderr)
	}
}
