package drivertest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"linerate/diagnose"
	"linerate/results"
)

// TestRSSSeed004 rehearses seed 004 (the APU's i211: two hosts, UDP hashed
// on addresses only, one RSS queue taking every flow) on a real driver:
// virtio-net with four queues and RSS in the device, in a guest of four
// CPUs. The guest hashes udp4 on addresses only, as the i211 did; a bench
// of 16 flows into it (from sockets: each flow an ephemeral source port;
// the frame engines' consecutive ports differ in a few bits, which a
// Toeplitz hash may map to as few queues) lands on one queue, which the
// driver's own
// per-queue counters show (in the result and in the guest's samples);
// diagnose, run in the guest over that result, names the imbalance from
// those counters and proposes hashing the ports; tune applies it in the
// guest; the same bench spreads over the queues. The rate is low (500
// pps): under TCG a queue that fills makes QEMU 7.2's software RSS stall
// the tap queue that fed it (docs/lab.md), and the spread, not the rate,
// is what is measured.
func TestRSSSeed004(t *testing.T) {
	l := upLab(t, "dtr", "pair", "--vm", "b", "--nic", "virtio", "--queues", "4", "--vm-cpus", "4", "--serve")

	// RSS in the device: Debian's 6.1 virtio_net sends its RSS setup to
	// the device only once something changes it (until then the device
	// steers by the tap's queue); receive-hashing on sends it.
	l.must("b", "ethtool", "-K", "a", "rxhash", "on")
	l.must("b", "ethtool", "-N", "a", "rx-flow-hash", "udp4", "sd")

	bench := func() (*results.Result, []byte) {
		t.Helper()
		r := l.bench("a", "udp", "--to", "b", "--flows", "16", "-t", "2", "--rate", "500pps", "--engine", "socket")
		checkUDP(t, r, "b", "a", results.SideClient, results.SideServer)
		checkQueues(t, r, "a", results.CounterEthtool, 4, true)
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return r, raw
	}
	// spread is the largest queue's share and how many queues took a
	// tenth or more.
	spread := func(r *results.Result) (top float64, busy int) {
		q := r.Targets[0].RxQueues
		shares := q.Shares()
		for _, s := range shares {
			top = max(top, s)
			if s >= 0.1 {
				busy++
			}
		}
		t.Logf("rx queues: %v, shares %.2f", q.Packets, shares)
		return top, busy
	}

	before, raw := bench()
	if top, busy := spread(before); top < 0.9 || busy != 1 {
		t.Fatalf("udp4 hashed on addresses: top queue %.0f%%, %d busy queues; want every flow on one queue", top*100, busy)
	}

	// diagnose in the guest, over the result as the server's end.
	l.put("b", "/tmp/before.json", raw)
	out := l.must("b", "linerate", "diagnose", "/tmp/before.json", "--rule", "rss-imbalance", "--json", "--no-save")
	var fs []diagnose.Finding
	if err := json.Unmarshal([]byte(findingsJSON(out)), &fs); err != nil {
		t.Fatalf("diagnose --json: %v\n%s", err, out)
	}
	if len(fs) != 1 || fs[0].Subject != "a" {
		t.Fatalf("findings %+v: want one rss-imbalance finding on a", fs)
	}
	ev := strings.Join(fs[0].Evidence, "\n")
	t.Logf("diagnose: %s\n%s\nfixes %v", fs[0].Summary, ev, fs[0].Fixes)
	if !strings.Contains(ev, "of a's packets") || !strings.Contains(ev, "driver's per-queue counters") {
		t.Errorf("evidence %q: the skew is not named from the driver's counters", ev)
	}
	if !slices.ContainsFunc(fs[0].Fixes, func(f diagnose.Fix) bool {
		return f.Kind == diagnose.FixFlowHash && f.Target == "a/udp4" && f.Value == "sdfn"
	}) {
		t.Fatalf("fixes %v: no flow-hash a/udp4 sdfn", fs[0].Fixes)
	}

	// tune applies the findings' fixes in the guest.
	l.put("b", "/tmp/findings.json", []byte(out))
	l.must("b", "linerate", "tune", "apply", "--findings", "/tmp/findings.json")
	if h := l.must("b", "ethtool", "-n", "a", "rx-flow-hash", "udp4"); !strings.Contains(h, "L4 bytes 2 & 3") {
		t.Fatalf("after tune apply, udp4 hashes\n%s", h)
	}

	after, raw := bench()
	top, busy := spread(after)
	if top >= 0.8 || busy < 2 {
		t.Errorf("after hashing ports: top queue %.0f%%, %d busy queues; want the 16 flows spread", top*100, busy)
	}
	l.put("b", "/tmp/after.json", raw)
	out = l.must("b", "linerate", "diagnose", "/tmp/after.json", "--rule", "rss-imbalance", "--json", "--no-save")
	if err := json.Unmarshal([]byte(findingsJSON(out)), &fs); err != nil || len(fs) != 0 {
		t.Errorf("diagnose after the fix: %v %+v", err, fs)
	}

	// And back: the rollback restores the i211's hash.
	l.must("b", "linerate", "tune", "rollback")
	if h := l.must("b", "ethtool", "-n", "a", "rx-flow-hash", "udp4"); strings.Contains(h, "L4 bytes") {
		t.Errorf("after rollback, udp4 hashes\n%s", h)
	}
}

// findingsJSON is the findings array of diagnose --json's output.
func findingsJSON(out string) string {
	var doc struct {
		Findings json.RawMessage `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err == nil && doc.Findings != nil {
		return string(doc.Findings)
	}
	return out
}
