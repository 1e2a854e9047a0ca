package testenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// SSHDPath is Debian's OpenSSH server (package openssh-server).
const SSHDPath = "/usr/sbin/sshd"

// SSHD is a real OpenSSH server that a test runs inside one of its network
// namespaces, listening on one address there, with a host key and a client
// key made for the test (ssh-keygen) and root's authorized_keys holding the
// client key. It is stopped, with the sessions it forked, and its files
// removed when the test ends, also when it fails.
type SSHD struct {
	// Addr is where it listens.
	Addr netip.AddrPort
	// Key is the private key it accepts for root.
	Key string

	dir string
	log *lockedBuffer
}

// SSHDOptions shape the server.
type SSHDOptions struct {
	// Env is set in every session (sshd_config SetEnv): PATH, TMPDIR.
	Env map[string]string
}

// lockedBuffer collects sshd's log from its reader goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(line + "\n")
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// StartSSHD runs `sshd -D -e -f CONFIG` in ns, listening on addr only, and
// returns once it listens. It skips the test when openssh-server or
// ssh-keygen is missing (make test installs them).
func StartSSHD(t testing.TB, ns *NetNS, addr netip.AddrPort, o SSHDOptions) *SSHD {
	t.Helper()
	RequireRoot(t)
	for _, p := range []string{SSHDPath, "ssh-keygen", "ssh"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not found: install openssh-server and openssh-client (make test does)", p)
		}
	}
	// sshd's privilege-separated child chroots here (OpenSSH's
	// _PATH_PRIVSEP_CHROOT_DIR on Debian). systemd's tmpfiles make it when
	// the package's service runs; without the service it may be missing. It
	// is the package's own directory, empty, so it is left in place for any
	// other sshd.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("sshd privilege separation directory: %v", err)
	}
	dir := t.TempDir()
	s := &SSHD{Addr: addr, dir: dir, log: &lockedBuffer{}}
	hostKey := filepath.Join(dir, "host_ed25519")
	keygen(t, hostKey)
	s.Key = NewSSHKey(t)
	pub, err := os.ReadFile(s.Key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "authorized_keys"), string(pub))
	hostPub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(hostPub))
	known := addr.Addr().String()
	if addr.Port() != 22 {
		known = fmt.Sprintf("[%s]:%d", addr.Addr(), addr.Port())
	}
	write(t, filepath.Join(dir, "known_hosts"), known+" "+f[0]+" "+f[1]+"\n")
	write(t, filepath.Join(dir, "ssh_config"), fmt.Sprintf(`Host *
  UserKnownHostsFile %s
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  IdentitiesOnly yes
  IdentityAgent none
  PasswordAuthentication no
  KbdInteractiveAuthentication no
  ControlMaster no
  ControlPath none
`, filepath.Join(dir, "known_hosts")))
	config := filepath.Join(dir, "sshd_config")
	var setenv []string
	for k, v := range o.Env {
		setenv = append(setenv, strconv.Quote(k+"="+v))
	}
	sort.Strings(setenv)
	cfg := fmt.Sprintf(`ListenAddress %s
HostKey %s
AuthorizedKeysFile %s
PidFile none
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
AuthenticationMethods publickey
PasswordAuthentication no
KbdInteractiveAuthentication no
PrintMotd no
LogLevel INFO
`, addr, hostKey, filepath.Join(dir, "authorized_keys"))
	if len(setenv) > 0 {
		cfg += "SetEnv " + strings.Join(setenv, " ") + "\n"
	}
	write(t, config, cfg)

	cmd := exec.Command(SSHDPath, "-D", "-e", "-f", config)
	startDaemon(t, ns, cmd, s.log, func(line string) bool { return strings.HasPrefix(line, "Server listening on") }, func() { s.stopSessions(t, cmd) })
	return s
}

// startDaemon starts cmd in ns, keeps what it writes on stderr in log,
// and returns once ready says a line of it tells it is ready. When the
// test ends, also when it fails, it runs before (if not nil), sends cmd
// SIGTERM, waits for it (SIGKILL after 10 s) and logs what it wrote if
// the test failed.
func startDaemon(t testing.TB, ns *NetNS, cmd *exec.Cmd, log *lockedBuffer, ready func(line string) bool, before func()) {
	t.Helper()
	name := filepath.Base(cmd.Path)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Do(cmd.Start); err != nil {
		t.Fatalf("start %s in %s: %v", name, ns.Name, err)
	}
	started := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			log.add(sc.Text())
			if ready(sc.Text()) {
				once.Do(func() { close(started) })
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		if before != nil {
			before()
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", name, log)
		}
	})
	select {
	case <-started:
	case <-exited:
		t.Fatalf("%s ended before it was ready:\n%s", name, log)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s was not ready within 30s:\n%s", name, log)
	}
}

// stopSessions ends what sshd forked and is still running (each
// connection's sshd calls setsid, so it is not in sshd's process group,
// and what runs in its sessions) and waits until all are gone; sshd
// itself is stopped after.
func (s *SSHD) stopSessions(t testing.TB, cmd *exec.Cmd) {
	var all []int
	for next := []int{cmd.Process.Pid}; len(next) > 0; {
		var kids []int
		for _, p := range next {
			kids = append(kids, childrenOf(p)...)
		}
		all, next = append(all, kids...), kids
	}
	for _, pid := range all {
		stopPid(t, pid)
	}
}

// stopPid sends SIGTERM to a process that is not our child and waits, on
// a pidfd, until it is gone (SIGKILL after 10s).
func stopPid(t testing.TB, pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already
	}
	defer unix.Close(fd)
	gone := func() bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, 10_000)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return err == nil && n > 0
		}
	}
	for _, sig := range []unix.Signal{unix.SIGTERM, unix.SIGKILL} {
		_ = unix.PidfdSendSignal(fd, sig, nil, 0)
		if gone() {
			return
		}
	}
	t.Errorf("sshd session %d did not end", pid)
}

// childrenOf lists the processes whose parent is pid (/proc/PID/stat).
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, n)
		}
	}
	return kids
}

// ClientArgs are the ssh options that reach this server with key: its
// client config (-F: the server's host key pinned, no agent, no other
// key, no password) and -i key.
func (s *SSHD) ClientArgs(key string) []string {
	return []string{"-F", filepath.Join(s.dir, "ssh_config"), "-i", key}
}

// ClientConfig writes an ssh client config that reaches this server with
// key (ClientArgs' config with an IdentityFile line), for a program that
// takes only -F, and returns its path.
func (s *SSHD) ClientConfig(t testing.TB, key string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dir, "ssh_config"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ssh_config")
	write(t, p, string(b)+"  IdentityFile "+key+"\n")
	return p
}

// Log is what sshd logged so far.
func (s *SSHD) Log() string { return s.log.String() }

// NewSSHKey makes an ed25519 key pair without a passphrase in a directory
// of the test and returns the private key's path (the public one is
// PATH.pub).
func NewSSHKey(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "id_ed25519")
	keygen(t, p)
	return p
}

func keygen(t testing.TB, path string) {
	t.Helper()
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "linerate-test", "-f", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
}

func write(t testing.TB, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
