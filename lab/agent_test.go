package lab

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"linerate/internal/testenv"
)

// TestServeAgents: Up with Serve starts one agent per node, recorded, with
// a secret only root reads; every node reaches every other's agent by the
// address AgentIn gives; commands Start runs get the secret; Down stops the
// agents and removes their files.
func TestServeAgents(t *testing.T) {
	l, d := newLab(t, Spec{Topology: Router, Serve: testServe(t)})
	if len(l.Agents) != 3 || l.Status() != "up" {
		t.Fatalf("agents %+v, status %s", l.Agents, l.Status())
	}
	st, err := os.Stat(l.SecretFile())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v, mode %v", err, st.Mode())
	}
	secret, err := l.Secret()
	if err != nil || len(secret) != 64 {
		t.Fatalf("secret %q: %v", secret, err)
	}
	for _, p := range [][2]string{{"lan", "wan"}, {"wan", "lan"}, {"lan", "router"}, {"router", "wan"}} {
		addr, ok := l.AgentIn(p[0], p[1])
		if !ok {
			t.Fatalf("no agent of %s from %s", p[1], p[0])
		}
		var reply []byte
		err := l.Do(p[0], func() error {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			reply, err = io.ReadAll(c)
			return err
		})
		if err != nil || string(reply) != p[1]+" 64" {
			t.Errorf("%s → agent of %s at %s: %q, %v", p[0], p[1], addr, reply, err)
		}
	}
	var out bytes.Buffer
	c := exec.Command("sh", "-c", `printf %s "$`+EnvToken+`"`)
	c.Stdout = &out
	if err := l.Run("lan", c); err != nil || out.String() != secret {
		t.Errorf("$%s in a command Start ran: %q, %v", EnvToken, out.String(), err)
	}
	var b strings.Builder
	if err := l.Describe(&b); err != nil || !strings.Contains(b.String(), "agents: linerate serve in 3 of 3 nodes, port 7559") {
		t.Errorf("Describe: %v\n%s", err, b.String())
	}
	if !strings.HasSuffix(l.Summary(), "\t3/3 running\t-") {
		t.Errorf("summary %q", l.Summary())
	}
	if err := d.Down(l.Spec.Name); err != nil {
		t.Fatal(err)
	}
	checkNoAgents(t, d, l.Spec.Name, l.Agents)
}

// TestCrashWithAgents: lab up killed while it starts the agents (after the
// first, the second and the last is recorded, and before the lab is
// recorded complete) leaves an incomplete lab; Down stops every agent
// and removes everything, and the name builds a lab again.
func TestCrashWithAgents(t *testing.T) {
	testenv.RequireRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	base := 0
	newLab(t, Spec{Topology: Router, afterStep: func(done int) { base = done }})
	for _, k := range []int{base + 1, base + 2, base + 3} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			d := Dir(t.TempDir())
			name := uniqueName()
			cleanupLab(t, d, name)
			t.Cleanup(func() { killAgents(t, name) })
			out, err := runHelper(exe, helperCrash, name, string(d), fmt.Sprint(k), "serve")
			if err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("helper: %v\n%s", err, out)
			}
			l, err := d.Load(name)
			if err != nil || l.Status() != "incomplete" || len(l.Agents) != k-base {
				t.Fatalf("after the crash: %v, status %s, %d agents recorded, want %d", err, l.Status(), len(l.Agents), k-base)
			}
			if len(agentPids(t, name)) == 0 || l.AgentsRunning() != k-base {
				t.Fatalf("after the crash: %d processes in the lab, %d recorded agents running; want %d", len(agentPids(t, name)), l.AgentsRunning(), k-base)
			}
			if err := d.Down(name); err != nil {
				t.Fatal(err)
			}
			checkNoAgents(t, d, name, l.Agents)
		})
	}
}

// checkNoAgents fails the test if a recorded agent or any process of the
// lab still runs, or a file of the lab is left in d.
func checkNoAgents(t *testing.T, d Dir, name string, agents []Agent) {
	t.Helper()
	for _, a := range agents {
		if running(a.Pid, a.Started) {
			t.Errorf("agent of %s (pid %d) still runs after Down", a.Node, a.Pid)
		}
	}
	if pids := agentPids(t, name); len(pids) > 0 {
		t.Errorf("processes of lab %s still run after Down: %v", name, pids)
	}
	if left := leftovers(t, name); len(left) > 0 {
		t.Errorf("left namespaces %v", left)
	}
	if ents, _ := os.ReadDir(string(d)); len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("state directory after Down holds %v", names)
	}
}

// agentPids lists the processes started in lab name's nodes, agents
// recorded or not.
func agentPids(t *testing.T, name string) []int { return testenv.PidsWithEnv(t, EnvLab+"="+name) }

// killAgents kills whatever of lab name still runs, so a failing test
// leaves nothing behind.
func killAgents(t *testing.T, name string) {
	for _, pid := range agentPids(t, name) {
		if p, err := os.FindProcess(pid); err == nil {
			p.Kill()
		}
	}
}
