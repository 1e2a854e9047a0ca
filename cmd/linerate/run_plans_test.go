package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"linerate/internal/testenv"
	"linerate/plan"
	"linerate/traffic"
	"linerate/wire"
)

// TestRunPlanStar runs a plan in a star lab with an agent in every node:
// four peers send to the box at once, the controller in the box; per
// flow, per port and in total the figures come back, twice (rounds: 2).
// A sender with no agent is one line naming it, exit 1.
func TestRunPlanStar(t *testing.T) {
	l := upAgentLab(t, "rp-", "star", "--ports", "4")
	p := filepath.Join(t.TempDir(), "star.yaml")
	os.WriteFile(p, []byte(`hosts:
  box:
    at: 10.231.1.1
    ports:
      peer1: {address: 10.231.1.1, speed: 1G}
      peer2: {address: 10.231.2.1, speed: 1G}
      peer3: {address: 10.231.3.1, speed: 1G}
      peer4: {address: 10.231.4.1, speed: 1G}
  peer1: 10.231.1.2
  peer2: 10.231.2.2
  peer3: 10.231.3.2
  peer4: 10.231.4.2
defaults: {proto: udp, rate: 10kpps, size: 512}
flows:
  - {from: peer1, to: box, address: 10.231.1.1}
  - {from: peer2, to: box, address: 10.231.2.1}
  - {from: peer3, to: box, address: 10.231.3.1}
  - {from: peer4, to: box, address: 10.231.4.1, proto: tcp, rate: 20Mbps}
duration: 1s
warmup: 300ms
rounds: 2
`), 0o644)
	inBox := func(args ...string) result { return l.exec("box", append([]string{"linerate"}, args...)...) }
	r := inBox("run", p, "--json", "--no-save")
	if r.code != 0 {
		t.Fatalf("run: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var res plan.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(res.Rounds) != 2 || res.Expected == nil || len(res.Expected.Ports) != 4 {
		t.Fatalf("rounds %d, expected %+v", len(res.Rounds), res.Expected)
	}
	for n, set := range res.Rounds {
		if len(set.Flows) != 4 {
			t.Fatalf("round %d: %d flows", n+1, len(set.Flows))
		}
		for i, f := range set.Flows {
			if f.Result == nil || f.Error != "" {
				t.Fatalf("round %d flow %d: %+v", n+1, i+1, f)
			}
			s := f.Result.Summary
			if i < 3 && (s.ReceivedPackets < 9000 || s.LossRatio > 0.01) {
				t.Errorf("round %d flow %d: 10 kpps for 1 s: received %d, loss %.3f", n+1, i+1, s.ReceivedPackets, s.LossRatio)
			}
			if i == 3 && (s.ReceivedBPS < 15e6 || s.ReceivedBPS > 21e6) {
				t.Errorf("round %d tcp flow at 20 Mb/s: %.1f Mb/s", n+1, s.ReceivedBPS/1e6)
			}
		}
		if set.Total.ReceivedPackets < 27000 {
			t.Errorf("round %d: total %d packets", n+1, set.Total.ReceivedPackets)
		}
	}
	// The text: per port against the expectation, the total, each host.
	r = inBox("run", p, "--no-save")
	for _, want := range []string{"round 2 of 2", "per port", "box   peer4 10.231.4.1", "total: received", "box (server):", "peer1 (client):", "over 2 rounds"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run's text lacks %q:\n%s", want, r.stdout)
		}
	}

	none := filepath.Join(t.TempDir(), "none.yaml")
	os.WriteFile(none, []byte("hosts:\n  a: 10.231.1.2:9\n  b: 10.231.2.2\nflows:\n  - {from: a, to: b, proto: udp}\n"), 0o644)
	if r := inBox("run", none, "--no-save"); r.code != 1 || !strings.Contains(r.stderr, "10.231.1.2:9: unreachable") {
		t.Errorf("a sender with no agent: %d %s", r.code, r.stderr)
	}
}

// TestRunPlanSSH runs a plan with a host reached over ssh (a real sshd in
// a namespace, linerate copied there) and an agent that requires a
// secret: the ssh host sends to the agent (proving the secret the
// controller gave it over the channel), and receives from it (listening
// for it while the run lasts).
func TestRunPlanSSH(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildLinerate(t, t.TempDir())
	client, server := nsPair(t, "10.79.0")
	tmp := t.TempDir()
	sshd := testenv.StartSSHD(t, client, netip.MustParseAddrPort("10.79.0.1:22"),
		testenv.SSHDOptions{Env: map[string]string{"PATH": "/usr/bin:/bin", "TMPDIR": tmp}})
	const secret = "plan-secret"
	var ln net.Listener
	if err := server.Do(func() (err error) { ln, err = net.Listen("tcp", "10.79.0.2:7557"); return err }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&traffic.Server{Setup: server.Do, Token: secret}).Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })

	p := filepath.Join(t.TempDir(), "plan.yaml")
	os.WriteFile(p, []byte(`hosts:
  far: {at: "ssh://root@10.79.0.1", copy: true}
  agent: 10.79.0.2
flows:
  - {from: far, to: agent, proto: udp, rate: 5kpps, direction: bidir}
  - {from: agent, to: far, proto: tcp, rate: 20Mbps}
duration: 1s
warmup: 200ms
`), 0o644)
	cmd := exec.Command(bin, "run", p, "--json", "--no-save", "--ssh-config", sshd.ClientConfig(t, sshd.Key))
	cmd.Env = append(os.Environ(), wire.TokenEnv+"="+secret)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := server.Do(cmd.Run); err != nil {
		var ee *exec.ExitError
		errors.As(err, &ee)
		t.Fatalf("run over ssh: %v\n%s%s", err, out.String(), errb.String())
	}
	var res plan.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Rounds) != 1 || len(res.Rounds[0].Flows) != 2 {
		t.Fatalf("%v\n%s", err, out.String())
	}
	f := res.Rounds[0].Flows[0]
	if f.Result == nil || f.Error != "" {
		t.Fatalf("flow: %+v", f)
	}
	s := f.Result.Summary
	t.Logf("far (ssh) ⇄ agent: sent %d, received %d, loss %.3f %%", s.SentPackets, s.ReceivedPackets, s.LossRatio*100)
	if s.ReceivedPackets < 9000 || s.LossRatio > 0.01 {
		t.Errorf("5 kpps each way for 1 s: received %d, loss %.3f", s.ReceivedPackets, s.LossRatio)
	}
	back := res.Rounds[0].Flows[1]
	if back.Result == nil || back.Error != "" || back.Result.Summary.ReceivedBPS < 15e6 {
		t.Errorf("agent → far (the ssh host listening for it): %+v", back)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the copy is still on the host: %v", left)
	}
}
