package remote_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"linerate/internal/testenv"
	"linerate/remote"
	"linerate/traffic"
	"linerate/wire"
)

// buildDir holds the linerate binary the ssh tests run on the far side;
// TestMain removes it.
var buildDir string

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "linerate-remote-test-")
	if err != nil {
		panic(err)
	}
	buildDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

var build struct {
	once sync.Once
	path string
	err  error
}

// linerate builds cmd/linerate once per run, static as make release builds
// it, into a directory of its own (bin/linerate there), so that it can be
// put on the PATH of an ssh session or copied.
func linerate(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		p := filepath.Join(buildDir, "bin", "linerate")
		cmd := exec.Command("go", "build", "-trimpath", "-o", p, "linerate/cmd/linerate")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = errors.New(err.Error() + ": " + string(out))
			return
		}
		build.path = p
	})
	if build.err != nil {
		t.Fatalf("build linerate: %v", build.err)
	}
	return build.path
}

// sshLab is two namespaces joined by a veth: the controller at 10.77.0.1
// and the host at 10.77.0.2, where sshd runs.
type sshLab struct {
	client, server *testenv.NetNS
	sshd           *testenv.SSHD
}

var (
	clientAddr = netip.MustParseAddr("10.77.0.1")
	serverAddr = netip.MustParseAddr("10.77.0.2")
)

func newPair(t *testing.T) *sshLab {
	t.Helper()
	l := &sshLab{client: testenv.NewNetNS(t), server: testenv.NewNetNS(t)}
	testenv.Veth(t, l.client, "vc", l.server, "vs", 1)
	l.client.AddAddr(t, "vc", clientAddr.String()+"/24")
	l.server.AddAddr(t, "vs", serverAddr.String()+"/24")
	return l
}

// newSSHLab starts sshd on the host with env in its sessions.
func newSSHLab(t *testing.T, env map[string]string) *sshLab {
	t.Helper()
	l := newPair(t)
	l.sshd = testenv.StartSSHD(t, l.server, netip.AddrPortFrom(serverAddr, 22), testenv.SSHDOptions{Env: env})
	return l
}

// options reach the host from the controller's namespace with key.
func (l *sshLab) options(key string) remote.Options {
	o := remote.Options{Setup: l.client.Do, Timeout: 5 * time.Second}
	if l.sshd != nil {
		o.SSHArgs = l.sshd.ClientArgs(key)
	}
	return o
}

// greet dials spec and says hello; it returns the welcome and the channel
// (closed when the test ends), or the error.
func greet(t *testing.T, spec string, o remote.Options) (*traffic.Message, net.Conn, error) {
	t.Helper()
	h, err := remote.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	c, err := remote.Dial(context.Background(), h, o)
	if err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() { c.Close() })
	m, err := traffic.Greet(c, "", 30*time.Second)
	return m, c, err
}

// hostError checks that err is an *remote.Error of kind with ssh's exit
// code and that its one line says each of want.
func hostError(t *testing.T, err error, kind error, code int, want ...string) {
	t.Helper()
	var e *remote.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a *remote.Error", err, err)
	}
	if !errors.Is(err, kind) {
		t.Errorf("error %q is not %v", err, kind)
	}
	if e.ExitCode != code {
		t.Errorf("exit code %d, want %d (%q)", e.ExitCode, code, err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error is more than one line: %q", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not say %q", msg, w)
		}
	}
}

// The ssh path end to end: the controller's ssh logs in to a real sshd in
// another namespace, starts `linerate serve --stdio` found on the PATH
// there, and the control protocol's hello and welcome cross the channel.
func TestSSHHello(t *testing.T) {
	bin := linerate(t)
	l := newSSHLab(t, map[string]string{"PATH": filepath.Dir(bin) + ":/usr/bin:/bin"})
	m, c, err := greet(t, "ssh://root@"+serverAddr.String(), l.options(l.sshd.Key))
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != wire.ProtocolVersion || m.ServerID == "" {
		t.Errorf("welcome %+v", m)
	}
	if got := c.RemoteAddr().String(); got != "ssh://root@10.77.0.2" {
		t.Errorf("remote address %q", got)
	}
	// A deadline on the channel works: nothing comes after the welcome.
	if err := c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var ne net.Error
	if _, err := c.Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("read past the deadline: %v, want a timeout", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// A key sshd does not accept: one line with the host, ssh's exit code 255
// and its "Permission denied".
func TestSSHWrongKey(t *testing.T) {
	l := newSSHLab(t, nil)
	_, _, err := greet(t, "ssh://root@"+serverAddr.String(), l.options(testenv.NewSSHKey(t)))
	hostError(t, err, remote.ErrAuth, 255, "ssh://root@10.77.0.2: authentication failed", "ssh exit 255", "Permission denied")
}

// No sshd on the port: connection refused.
func TestSSHRefused(t *testing.T) {
	l := newSSHLab(t, nil)
	_, _, err := greet(t, "ssh://root@"+serverAddr.String()+":2222", l.options(l.sshd.Key))
	hostError(t, err, remote.ErrUnreachable, 255, "ssh://root@10.77.0.2:2222: unreachable", "Connection refused")
}

// No linerate on the host's PATH: exit 127 and how to install it.
func TestSSHNotInstalled(t *testing.T) {
	l := newSSHLab(t, map[string]string{"PATH": "/usr/bin:/bin"})
	_, _, err := greet(t, "ssh://root@"+serverAddr.String(), l.options(l.sshd.Key))
	hostError(t, err, remote.ErrNotInstalled, 127, "ssh://root@10.77.0.2: linerate is not installed", "command not found",
		"make release", "--copy")
}

// --copy: no linerate on the host, so this one (its architecture matches)
// goes to a temporary directory there, runs, and is removed when the
// channel closes.
func TestSSHCopy(t *testing.T) {
	bin := linerate(t)
	tmp := t.TempDir()
	l := newSSHLab(t, map[string]string{"PATH": "/usr/bin:/bin", "TMPDIR": tmp})
	o := l.options(l.sshd.Key)
	o.Copy, o.Self = true, bin
	m, c, err := greet(t, "ssh://root@"+serverAddr.String(), o)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != wire.ProtocolVersion {
		t.Errorf("welcome %+v", m)
	}
	copies, _ := filepath.Glob(filepath.Join(tmp, "linerate.*", "linerate"))
	if len(copies) != 1 {
		t.Fatalf("copies on the host while the agent runs: %v, want 1", copies)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left on the host after close: %v", left)
	}
}

// An agent already running: a TCP connection to its control port; none
// there: one line with the address and the dial error.
func TestAgentDial(t *testing.T) {
	l := newPair(t)
	var ln net.Listener
	if err := l.server.Do(func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(serverAddr, remote.DefaultPort).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv := &traffic.Server{Setup: l.server.Do}
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	m, c, err := greet(t, serverAddr.String(), l.options(""))
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != wire.ProtocolVersion {
		t.Errorf("welcome %+v", m)
	}
	c.Close()
	_, _, err = greet(t, serverAddr.String()+":7558", l.options(""))
	hostError(t, err, remote.ErrUnreachable, -1, "10.77.0.2:7558: unreachable", "connection refused", "is 'linerate serve' running there?")
}
