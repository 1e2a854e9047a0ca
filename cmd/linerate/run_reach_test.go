package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"linerate/internal/testenv"
	"linerate/traffic"
)

// run --check --reach reaches a plan's hosts as a run will: one over ssh
// (a real sshd in another namespace, linerate copied there: this binary,
// whose architecture matches), one a running agent. A host it cannot reach
// is one line and exit 1.
func TestRunReach(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildLinerate(t, t.TempDir())
	client, server := nsPair(t, "10.78.0")
	tmp := t.TempDir()
	sshd := testenv.StartSSHD(t, server, netip.MustParseAddrPort("10.78.0.2:22"),
		testenv.SSHDOptions{Env: map[string]string{"PATH": "/usr/bin:/bin", "TMPDIR": tmp}})

	var ln net.Listener
	if err := server.Do(func() (err error) { ln, err = net.Listen("tcp", "10.78.0.2:7557"); return err }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&traffic.Server{Setup: server.Do}).Serve(ctx, ln) }()
	stopAgent := func() {
		if cancel != nil {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("agent: %v", err)
			}
			cancel = nil
		}
	}
	t.Cleanup(stopAgent)

	p := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(p, []byte(`hosts:
  far: {at: "ssh://root@10.78.0.2", copy: true}
  agent: 10.78.0.2
flows:
  - {from: far, to: agent, proto: udp}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	reach := func(key string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(bin, "run", p, "--check", "--reach", "--ssh-config", sshd.ClientConfig(t, key))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := client.Do(cmd.Run)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}

	out, stderr, code := reach(sshd.Key)
	if code != 0 || !strings.Contains(out, "far      reached: linerate") || !strings.Contains(out, "agent    reached: linerate") {
		t.Errorf("exit %d\n%s%s", code, out, stderr)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the copy is still on the host: %v", left)
	}

	_, stderr, code = reach(testenv.NewSSHKey(t))
	if want := "linerate: ssh://root@10.78.0.2: authentication failed (ssh exit 255: root@10.78.0.2: Permission denied (publickey).)\n"; code != 1 || stderr != want {
		t.Errorf("wrong key: exit %d, stderr %q; want 1, %q", code, stderr, want)
	}

	stopAgent()
	_, stderr, code = reach(sshd.Key)
	if want := "linerate: 10.78.0.2:7557: unreachable (dial tcp 10.78.0.2:7557: connect: connection refused): is 'linerate serve' running there?\n"; code != 1 || stderr != want {
		t.Errorf("no agent: exit %d, stderr %q; want 1, %q", code, stderr, want)
	}
}

// nsPair is two namespaces joined by a veth pair, prefix.1 and prefix.2
// (a /24), removed when the test ends.
func nsPair(t *testing.T, prefix string) (a, b *testenv.NetNS) {
	t.Helper()
	a, b = testenv.NewNetNS(t), testenv.NewNetNS(t)
	testenv.Veth(t, a, "vc", b, "vs", 1)
	a.AddAddr(t, "vc", prefix+".1/24")
	b.AddAddr(t, "vs", prefix+".2/24")
	return a, b
}
