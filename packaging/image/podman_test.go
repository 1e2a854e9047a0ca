package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
)

// unitCaps are the capabilities packaging/linerate-serve.service grants
// serve (CapabilityBoundingSet, AmbientCapabilities), as capability
// bits: CAP_NET_ADMIN 12, CAP_NET_RAW 13, CAP_PERFMON 38, CAP_BPF 39.
var unitCaps = map[string]int{"NET_ADMIN": 12, "NET_RAW": 13, "PERFMON": 38, "BPF": 39}

// podman is Debian's podman with storage of the test's own: images and
// containers live in a temporary directory, removed when the test ends,
// and nothing of the machine's container storage is read or changed.
type podman struct {
	t    *testing.T
	args []string
}

func newPodman(t *testing.T) *podman {
	t.Helper()
	for _, p := range []string{"podman", "runc"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not found: install podman and runc (make test does)", p)
		}
	}
	dir := t.TempDir()
	runc, _ := exec.LookPath("runc")
	// runc, not crun: Debian 12's crun refuses a machine whose cgroups
	// are in hybrid mode, as this one's are. No cgroups of the
	// container's own (the cgroupfs manager, no systemd); events to a
	// file.
	p := &podman{t: t, args: []string{"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"),
		"--tmpdir", filepath.Join(dir, "tmp"), "--network-config-dir", filepath.Join(dir, "networks"),
		"--storage-driver", "vfs", "--runtime", runc, "--cgroup-manager", "cgroupfs", "--events-backend", "file"}}
	// Whatever its storage, podman keeps a cache of the blobs it loaded
	// in /var/lib/containers/cache (containers/image's default for root)
	// and makes /run/containers/networks; what the test made of these, it
	// removes, the leaves first.
	var made []string
	for _, d := range []string{"/var/lib/containers/cache", "/var/lib/containers", "/run/containers/networks", "/run/containers"} {
		if _, err := os.Lstat(d); os.IsNotExist(err) {
			made = append(made, d)
		}
	}
	t.Cleanup(func() {
		for _, d := range made {
			if strings.Count(d, "/") == 3 {
				os.RemoveAll(d)
			} else {
				os.Remove(d) // only when empty: another's may be in it by now
			}
		}
	})
	return p
}

func (p *podman) run(args ...string) (string, error) {
	p.t.Helper()
	cmd := exec.Command("podman", append(append([]string{}, p.args...), args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("podman %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), err
}

// logs is what the container wrote, standard output and error (which
// podman logs writes to its own).
func (p *podman) logs(id string) string {
	p.t.Helper()
	b, err := exec.Command("podman", append(append([]string{}, p.args...), "logs", id)...).CombinedOutput()
	if err != nil {
		ps, _ := p.run("ps", "--all")
		p.t.Fatalf("podman logs: %v: %s\n%s", err, b, ps)
	}
	return string(b)
}

func (p *podman) must(args ...string) string {
	p.t.Helper()
	out, err := p.run(args...)
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

// TestPodman: the image make image writes, loaded into podman, runs
// linerate serve in a container joined to a namespace of the test
// (--network ns:/run/netns/NAME, never the machine's network), with the
// capabilities the systemd unit grants and no more, no new privileges
// and low ulimits. A bench from another namespace reaches it through a
// veth pair; podman stop ends it at once with exit 0 (SIGTERM: serve
// closes its listeners and returns). The container and the image are
// removed at the end, with the storage the test gave podman.
func TestPodman(t *testing.T) {
	testenv.RequireRoot(t)
	p := newPodman(t)
	dir := t.TempDir()
	const version = "v0.0.0-podman-test"
	start := time.Now()
	bin := goBuild(t, dir, "../../cmd/linerate", "amd64", "-s -w -X linerate/internal/version.Version="+version)
	built := time.Since(start)
	s := Spec{Binary: bin, Arch: "amd64", Version: version, Created: time.Unix(0, 0).UTC()}
	img := FileName(dir, version, "amd64")
	start = time.Now()
	if err := Write(s, img); err != nil {
		t.Fatal(err)
	}
	written := time.Since(start)
	start = time.Now()
	if out := p.must("load", "-i", img); !strings.Contains(out, "Loaded image: "+s.Name()) {
		t.Fatalf("podman load: %s", out)
	}
	loaded := time.Since(start)
	t.Cleanup(func() {
		if _, err := p.run("rmi", "-f", s.Name()); err != nil {
			t.Error(err)
		}
	})

	server, client := testenv.NewNetNS(t), testenv.NewNetNS(t)
	testenv.Veth(t, server, "vs", client, "vc", 1)
	server.AddAddr(t, "vs", "10.78.9.1/24")
	client.AddAddr(t, "vc", "10.78.9.2/24")
	secret := "podman-test-secret"
	args := []string{"run", "--detach", "--name", "linerate-" + strings.TrimPrefix(server.Name, "lrt-"),
		"--network", "ns:/run/netns/" + server.Name, "--cap-drop", "all"}
	for c := range unitCaps {
		args = append(args, "--cap-add", c)
	}
	args = append(args, "--security-opt", "no-new-privileges",
		"--ulimit", "nofile=1024:4096", "--ulimit", "nproc=1024:4096",
		"--env", "LINERATE_TOKEN="+secret, s.Name(), "serve", "--listen", "10.78.9.1")
	start = time.Now()
	id := p.must(args...)
	t.Cleanup(func() { p.run("rm", "--force", id) })
	// serve says it listens once it does.
	var logs string
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logs, "listening on 10.78.9.1:7557"); {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen within 20s; logs:\n%s", logs)
		}
		time.Sleep(50 * time.Millisecond)
		logs = p.logs(id)
	}
	started := time.Since(start)

	pid, err := strconv.Atoi(p.must("inspect", "--format", "{{.State.Pid}}", id))
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var want uint64
	for _, bit := range unitCaps {
		want |= 1 << bit
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "CapEff", "CapPrm", "CapBnd":
			if got, _ := strconv.ParseUint(v, 16, 64); got != want {
				t.Errorf("%s %016x, want %016x (the unit's four)", k, got, want)
			}
		case "CapInh", "CapAmb":
			if got, _ := strconv.ParseUint(v, 16, 64); got != 0 {
				t.Errorf("%s %016x, want none", k, got)
			}
		case "NoNewPrivs":
			if v != "1" {
				t.Errorf("NoNewPrivs %s", v)
			}
		}
	}
	limits, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	// The Go runtime raises its soft limit of open files towards the
	// hard one at start; the hard limits are the container's.
	if !hardLimit(string(limits), "Max open files", "4096") || !hardLimit(string(limits), "Max processes", "4096") {
		t.Errorf("limits:\n%s", limits)
	}
	var netns [2]string
	for i, p := range []string{fmt.Sprintf("/proc/%d/ns/net", pid), "/run/netns/" + server.Name} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		netns[i] = fmt.Sprint(st.Sys())
	}
	if self, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); netns[0] != netns[1] {
		t.Errorf("the container's network namespace (%s) is not %s", self, server.Name)
	}

	bench := exec.Command("ip", "netns", "exec", client.Name, bin, "bench", "udp", "--to", "10.78.9.1",
		"-t", "1", "--warmup", "200ms", "-b", "5kpps", "--engine", "socket", "--json")
	bench.Env = append(os.Environ(), "LINERATE_TOKEN="+secret)
	out, err := bench.Output()
	if err != nil || !bytes.Contains(out, []byte(`"received_packets"`)) {
		t.Fatalf("bench from %s to the container: %v\n%s", client.Name, err, out)
	}

	start = time.Now()
	p.must("stop", "--time", "10", id)
	stopped := time.Since(start)
	if state := p.must("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", id); state != "exited 0" {
		t.Errorf("after podman stop: %s, want exited 0", state)
	}
	if stopped > 5*time.Second {
		t.Errorf("podman stop took %s: serve did not end on SIGTERM, podman killed it", stopped)
	}
	logs = p.logs(id)
	if !strings.Contains(logs, "10.78.9.2: test done") {
		t.Errorf("serve's log does not show the test:\n%s", logs)
	}
	p.must("rm", id)
	t.Logf("go build %s, image written in %s, loaded in %s, serve listening %s after podman run, stopped in %s",
		built.Round(time.Millisecond), written.Round(time.Millisecond), loaded.Round(time.Millisecond),
		started.Round(time.Millisecond), stopped.Round(time.Millisecond))
}

// hardLimit says whether /proc/PID/limits (text) gives what the hard
// limit hard.
func hardLimit(text, what, hard string) bool {
	for _, l := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(l, what); ok {
			f := strings.Fields(rest)
			return len(f) >= 2 && f[1] == hard
		}
	}
	return false
}
