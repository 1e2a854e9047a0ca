package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"linerate/internal/testenv"
	"linerate/lab"
	"linerate/results"
)

// TestBenchFlowsQueues runs the real binary in a pair lab whose veths have
// 4 queues: `bench udp --flows` from a, the agent in b receiving. A
// veth's receive queue is its peer's TX queue, which the flow hash picks
// per socket (a random hash per connected socket), so with --flows 32
// every queue of b's interface carries a share (the chance that one of 4
// is left out is 4·(3/4)^32, about 1 in 2,500) and none most of it, while
// --flows 1 puts everything on one queue. The counts come from the
// server's XDP counter by rx_queue_index (a veth has no per-queue
// receive counters of its own). The ring, which picks the TX queue by
// CPU, sends the flows from source ports of their own, counted per
// stream on both ends; --src spreads the flows over the client's
// addresses, each counted as the client's, and refuses an address the
// client does not have.
func TestBenchFlowsQueues(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildLinerate(t, t.TempDir())
	name, dir := labName(t, bin, "fq-")
	if up := run(t, bin, "lab", "up", "pair", "--name", name, "--queues", "4", "--subnet", "10.77.0.0/16", "--serve", "--state-dir", dir); up.code != 0 {
		t.Fatalf("lab up: %d\n%s%s", up.code, up.stdout, up.stderr)
	}
	bench := func(args ...string) (*results.Result, result) {
		t.Helper()
		full := append([]string{"lab", "exec", "--state-dir", dir, name, "a", "--", bin, "bench", "udp", "--to", "b",
			"-t", "1", "--warmup", "200ms", "-b", "20kpps", "--no-save", "--json"}, args...)
		r := run(t, bin, full...)
		if r.code != 0 {
			return nil, r
		}
		var res results.Result
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("bench %v: %v\n%s", args, err, r.stdout)
		}
		return &res, r
	}
	queues := func(res *results.Result, what string) *results.QueueStat {
		t.Helper()
		q := res.Targets[0].RxQueues
		if q == nil || q.Error != "" || q.Counter != results.CounterXDP || len(q.Packets) != 4 {
			t.Fatalf("%s: rx queues %+v, want 4 queues counted by xdp", what, q)
		}
		t.Logf("%s: engine %s, packets per queue %v", what, res.Engine, q.Packets)
		// The counter's window opens and closes by the server's clock, the
		// sockets' by the datagrams' warmup flag: they differ by what was
		// in flight at the edges.
		if got, recv := q.Total(), res.Targets[0].ReceivedPackets; got+recv/20+100 < recv || got > recv+recv/20+100 {
			t.Errorf("%s: the queues counted %d packets, the server's sockets %d", what, got, recv)
		}
		return q
	}

	res, r := bench("--engine", "socket", "--flows", "32", "--xdp")
	if res == nil {
		t.Fatalf("--flows 32: %d\n%s", r.code, r.stderr)
	}
	if res.Spec.Ports != 1 || res.Spec.Streams != 32 {
		t.Errorf("--flows 32: %d ports × %d streams, want 1 × 32", res.Spec.Ports, res.Spec.Streams)
	}
	q := queues(res, "--flows 32")
	for i, s := range q.Shares() {
		if q.Packets[i] == 0 || s > 0.7 {
			t.Errorf("--flows 32: queue %d carried %d packets, %.0f%% of them", i, q.Packets[i], s*100)
		}
	}

	res, r = bench("--engine", "socket", "--flows", "1", "--xdp")
	if res == nil {
		t.Fatalf("--flows 1: %d\n%s", r.code, r.stderr)
	}
	q = queues(res, "--flows 1")
	if tot, on := q.Total(), q.Packets; tot == 0 || max(on[0], on[1], on[2], on[3]) != tot {
		t.Errorf("--flows 1: %v, want every packet on one queue", on)
	}

	// The ring: 4 flows from 4 source ports, one stream each on both ends.
	res, r = bench("--engine", "ring", "--flows", "4", "--xdp")
	if res == nil {
		t.Fatalf("--engine ring --flows 4: %d\n%s", r.code, r.stderr)
	}
	queues(res, "ring --flows 4")
	var fwd []results.StreamResult
	for _, s := range res.Streams {
		if s.Direction == "forward" {
			fwd = append(fwd, s)
		}
	}
	if len(fwd) != 4 {
		t.Fatalf("ring --flows 4: %d forward streams, want 4", len(fwd))
	}
	for _, s := range fwd {
		if s.SentPackets == 0 || s.ReceivedPackets != s.SentPackets {
			t.Errorf("ring --flows 4: stream %d sent %d, received %d", s.Stream, s.SentPackets, s.ReceivedPackets)
		}
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "choose the TX queue by CPU or socket") {
		t.Errorf("ring --flows 4 on a veth: no note that its flows do not spread: %q", res.Notes)
	}

	// --src: two more addresses on a's interface; the flows alternate.
	ns := lab.NetnsPrefix + name + "-a"
	for _, a := range []string{"10.77.1.11/24", "10.77.1.12/24"} {
		if out, err := exec.Command("ip", "-n", ns, "addr", "add", a, "dev", "b").CombinedOutput(); err != nil {
			t.Fatalf("ip addr add %s: %v %s", a, err, out)
		}
	}
	res, r = bench("--engine", "socket", "--flows", "4", "--src", "10.77.1.11-10.77.1.12")
	if res == nil {
		t.Fatalf("--src: %d\n%s", r.code, r.stderr)
	}
	tr := res.Targets[0]
	if tr.ReceivedPackets == 0 || tr.ForeignPackets != 0 || tr.LostPackets > tr.SentPackets/10 {
		t.Errorf("--src: sent %d, received %d, foreign %d", tr.SentPackets, tr.ReceivedPackets, tr.ForeignPackets)
	}
	if len(res.Spec.Sources) != 2 {
		t.Errorf("--src: spec sources %v", res.Spec.Sources)
	}
	if _, r = bench("--engine", "socket", "--flows", "4", "--src", "10.77.1.99"); r.code != 2 || !strings.Contains(r.stderr, "--src") {
		t.Errorf("--src of an address a does not have: exit %d, %q; want 2 and a line naming --src", r.code, r.stderr)
	}
	if _, r = bench("--engine", "ring", "--src", "10.77.1.11"); r.code != 2 || !strings.Contains(r.stderr, "--src") {
		t.Errorf("--engine ring --src: exit %d, %q; want 2 and a line naming --src", r.code, r.stderr)
	}
}
