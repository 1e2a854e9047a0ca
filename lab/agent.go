package lab

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"linerate/internal/nsthread"
)

// Serve asks Up to start an agent — `linerate serve` — in every node once
// the lab is built, so that commands in the lab (and controllers such as
// `tune auto --lab`) reach every node as they reach a real host: by name,
// on Port, proving they know the lab's secret. The secret is written, mode
// 0600, to NAME.secret in the state directory; each agent's log goes to
// NAME.log there. Down stops the agents (the ones recorded, and any other
// process in the lab's namespaces) and removes both files.
type Serve struct {
	// Port is the agents' control port in every node.
	Port int `json:"port"`
	// CPUs, when set, are the CPUs every agent pins its sender and
	// receiver threads to (serve --cpus): with them all on one CPU, the
	// work of a flow between two nodes piles up there, as on a small box
	// whose receive work lands on CPU0. Command must pass them on; they
	// are recorded so that the lab says how its agents run.
	CPUs []int `json:"cpus,omitempty"`
	// Command makes the agent's command for a node, given the path of the
	// secret file. It is not recorded: the lab's package does not know
	// what binary serves.
	Command func(node, secretFile string) *exec.Cmd `json:"-"`
}

// Agent is one agent Up started.
type Agent struct {
	Node string `json:"node"`
	Pid  int    `json:"pid"`
	// Started is the process's start time (clock ticks after boot, field
	// 22 of /proc/PID/stat): Down signals the pid only while it is still
	// that process, never one that reused the number.
	Started uint64 `json:"started"`
	// Guest says the agent runs inside the node's guest (Pid and Started
	// are then zero): it lives as long as the guest.
	Guest bool `json:"guest,omitempty"`
}

// agentReady bounds the wait for an agent to accept connections.
const agentReady = 10 * time.Second

func (d Dir) secretPath(name string) string { return filepath.Join(string(d), name+".secret") }
func (d Dir) logPath(name string) string    { return filepath.Join(string(d), name+".log") }

// SecretFile is the file holding the secret of the lab's agents ("" when
// the lab has none).
func (l *Lab) SecretFile() string {
	if l.Spec.Serve == nil {
		return ""
	}
	return l.dir.secretPath(l.Spec.Name)
}

// Secret reads the secret of the lab's agents.
func (l *Lab) Secret() (string, error) {
	p := l.SecretFile()
	if p == "" {
		return "", fmt.Errorf("lab %s has no agents (lab up --serve starts them)", l.Spec.Name)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("secret of lab %s: %w", l.Spec.Name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// AgentIn returns the control address of the agent in node to, as node
// from reaches it (HOST:PORT); ok is false when the lab has no agent
// there or from does not reach to.
func (l *Lab) AgentIn(from, to string) (addr string, ok bool) {
	if l.Spec.Serve == nil {
		return "", false
	}
	found := false
	for _, a := range l.Agents {
		found = found || a.Node == to
	}
	ip, reach := l.Addr(from, to)
	if !found || !reach {
		return "", false
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(l.Spec.Serve.Port)), true
}

// AgentsRunning counts the recorded agents still running as the
// processes Up started. After a kill -9 of lab up, `lab list` shows them
// this way and `lab down` stops them.
func (l *Lab) AgentsRunning() int {
	n := 0
	for _, a := range l.Agents {
		if a.Guest {
			if g, ok := l.Guest(a.Node); ok && running(g.Pid, g.Started) {
				n++
			}
			continue
		}
		if running(a.Pid, a.Started) {
			n++
		}
	}
	return n
}

// writeSecret makes the agents' secret: 32 random bytes, hex, in a file
// only root reads, created anew.
func (d Dir) writeSecret(name string) error {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	p := d.secretPath(name)
	os.Remove(p) // a leftover of a lab of the same name killed before Down
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("agents' secret: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(b[:]) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("agents' secret %s: %w", p, err)
	}
	return nil
}

// agents starts the lab's agents, one per node, recording each and
// waiting until it accepts connections.
func (b *builder) agents() error {
	s, d, name := b.lab.Spec.Serve, b.lab.dir, b.lab.Spec.Name
	if s.Command == nil || s.Port < 1 || s.Port > 65535 {
		return fmt.Errorf("lab %s: agents need a command and a port (1-65535), got port %d", name, s.Port)
	}
	log, err := os.OpenFile(d.logPath(name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("agents' log: %w", err)
	}
	defer log.Close()
	for _, n := range b.lab.Nodes {
		if b.lab.IsVM(n.Name) {
			// Its guest started it with its setup (Guest); the supervisor
			// waited for it.
			b.lab.Agents = append(b.lab.Agents, Agent{Node: n.Name, Guest: true})
			continue
		}
		cmd := s.Command(n.Name, d.secretPath(name))
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, log, log
		// A session of its own: the terminal's Ctrl-C for lab up does not
		// reach it, and it outlives lab up.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := b.lab.startIn(n, b.ns[n.Name], cmd); err != nil {
			return fmt.Errorf("agent in %s: %w", n.Netns, err)
		}
		go cmd.Wait() // reaped when it ends (lab up usually exits first)
		started, err := startTime(cmd.Process.Pid)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			// Ended and reaped already (ESRCH: reaped between the open
			// of its stat and the read): it never listened.
			return fmt.Errorf("agent in %s ended before it listened on port %d (its log: %s)", n.Netns, b.lab.Spec.Serve.Port, b.lab.dir.logPath(b.lab.Spec.Name))
		}
		if err != nil {
			return fmt.Errorf("agent in %s: %w", n.Netns, err)
		}
		b.lab.Agents = append(b.lab.Agents, Agent{Node: n.Name, Pid: cmd.Process.Pid, Started: started})
		if err := b.lab.save(); err != nil {
			return err
		}
		if err := b.step(); err != nil {
			return err
		}
		if err := b.agentReady(n, cmd.Process.Pid, started); err != nil {
			return err
		}
	}
	return nil
}

// agentReady waits until the agent in n accepts a connection on its port
// (from inside n, on loopback), or has ended, or agentReady has passed.
func (b *builder) agentReady(n Node, pid int, started uint64) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(b.lab.Spec.Serve.Port))
	deadline := time.Now().Add(agentReady)
	for {
		err := inNetns(b.ns[n.Name], func() error {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
			}
			return err
		})
		if err == nil {
			return nil
		}
		if !running(pid, started) {
			return fmt.Errorf("agent in %s ended before it listened on %s (its log: %s)", n.Netns, addr, b.lab.dir.logPath(b.lab.Spec.Name))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("agent in %s does not accept connections on %s after %s: %w", n.Netns, addr, agentReady, err)
		}
		select {
		case <-b.ctx.Done():
			return fmt.Errorf("lab up %s: %w", b.lab.Spec.Name, b.ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startTime is field 22 of /proc/PID/stat, the process's start time; an
// error when the process is gone.
func startTime(pid int) (uint64, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// running reports whether pid is still the process that started at
// started, and has not ended (a zombie has ended: it waits only for its
// parent to reap it).
func running(pid int, started uint64) bool {
	f, err := procStat(pid)
	if err != nil || f[0] == "Z" || f[0] == "X" {
		return false
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	return err == nil && st == started
}

// procStat returns the fields of /proc/PID/stat after the command name:
// f[0] is field 3 (the state), f[19] field 22 (the start time).
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	return f, nil
}

// stopAgents kills the recorded agents still running as the processes Up
// started (same pid, same start time) and waits, up to grace, until they
// have ended. Those in the lab's namespaces would also be stopped with
// the rest of its processes; this reaches one whose namespace is no
// longer known (a partial state).
func stopAgents(agents []Agent, grace time.Duration) error {
	deadline := time.Now().Add(grace)
	for _, a := range agents {
		for running(a.Pid, a.Started) {
			unix.Kill(a.Pid, unix.SIGKILL)
			if time.Now().After(deadline) {
				return fmt.Errorf("agent of %s (pid %d) still runs after SIGKILL", a.Node, a.Pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// removeAgentFiles removes the agents' secret and log.
func (d Dir) removeAgentFiles(name string) error {
	var errs []error
	for _, p := range []string{d.secretPath(name), d.logPath(name)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// startIn starts cmd in node n, whose namespace is h, the way Start does.
func (l *Lab) startIn(n Node, h netns.NsHandle, cmd *exec.Cmd) error {
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, EnvLab+"="+l.Spec.Name, EnvNode+"="+n.Name, EnvDir+"="+string(l.dir))
	th, err := nsthread.Enter(int(h), nsthread.Options{Hosts: []byte(l.Hosts(n.Name))})
	if err != nil {
		return fmt.Errorf("enter %s: %w", n.Netns, err)
	}
	err = th.Start(cmd)
	// The command holds namespaces of its own now. Close can only fail by
	// waiting too long for the thread to end, which does not concern the
	// command, and an error here would leave a started command unwaited.
	_ = th.Close()
	return err
}
