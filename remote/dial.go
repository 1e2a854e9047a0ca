package remote

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// Options say how to reach hosts. The zero value runs the system's ssh and
// the host's linerate.
type Options struct {
	// SSH is the ssh client to run (default "ssh", found on the PATH).
	SSH string
	// SSHArgs go before the destination, after linerate's own options
	// (tests give -F CONFIG -i KEY; ssh takes the first value of an option).
	SSHArgs []string
	// Command is linerate on the host (default "linerate", found on the
	// PATH of a non-interactive ssh session there).
	Command string
	// Copy copies a static linerate binary of the host's architecture to a
	// temporary directory there first, runs it, and removes it when the
	// channel closes.
	Copy bool
	// Binary is the file Copy copies. Empty: this program when it is built
	// for the host's architecture, else linerate-linux-ARCH (as `make
	// release` names it) next to this program, in dist/ beside it or in
	// ../dist.
	Binary string
	// Self is this program (default os.Executable()); SelfArch the
	// architecture it is built for (default this build's: amd64, arm64,
	// armv7).
	Self, SelfArch string
	// Timeout bounds connecting: the TCP dial of an agent, ssh's
	// ConnectTimeout (0: 10s).
	Timeout time.Duration
	// Setup runs fn where sockets are made and ssh is started (inside a
	// network namespace, in tests and the lab); nil runs it directly.
	Setup func(fn func() error) error
	// Stderr, when set, also receives what ssh and the agent on the host
	// write on stderr.
	Stderr io.Writer
}

// closeGrace is how long Close waits for ssh to end by itself (the agent
// read EOF and exited) before it ends ssh.
const closeGrace = 5 * time.Second

func (o *Options) setup(fn func() error) error {
	if o.Setup == nil {
		return fn()
	}
	return o.Setup(fn)
}

func (o *Options) timeout() time.Duration { return cmp.Or(o.Timeout, 10*time.Second) }

// Dial opens a control channel to the agent on h: a TCP connection to a
// running agent, or `linerate serve --stdio` started over ssh (copied there
// first with Options.Copy). Nothing is spoken on the channel yet; when ssh
// fails (it could not connect or log in, linerate is missing there), the
// first Read or Write on the channel returns an *Error that says so.
// Failures before the channel exists (an agent that does not answer, the
// copy) are returned here, as an *Error too. ctx bounds dialling and the
// copy; the channel lives until Close.
func Dial(ctx context.Context, h Host, o Options) (net.Conn, error) {
	switch h.Kind {
	case Agent:
		return dialAgent(ctx, h, &o)
	case SSH:
		return dialSSH(ctx, h, &o)
	case DNS, SRV:
		return nil, fmt.Errorf("%w: %s stands for the agents DNS gives: look them up first (Discover)", ErrSpec, h)
	}
	return nil, fmt.Errorf("%w: no way to reach %q", ErrSpec, h.Name)
}

func dialAgent(ctx context.Context, h Host, o *Options) (net.Conn, error) {
	d := net.Dialer{Timeout: o.timeout()}
	var c net.Conn
	err := o.setup(func() error {
		var err error
		c, err = d.DialContext(ctx, "tcp", h.String())
		return err
	})
	if err != nil {
		return nil, &Error{Host: h.String(), Kind: ErrUnreachable, ExitCode: -1, Err: err,
			Hint: "is 'linerate serve' running there?"}
	}
	return c, nil
}

// sshArgs is the ssh command line that runs command on h: no terminal,
// never a prompt, a bounded connect, and keepalives so that a host that
// vanishes ends the channel.
func (o *Options) sshArgs(h Host, command string) []string {
	args := []string{"-T", "-o", "BatchMode=yes",
		"-o", "ConnectTimeout=" + strconv.Itoa(int(max(o.timeout().Seconds(), 1))),
		"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"}
	if h.Port != 0 {
		args = append(args, "-p", strconv.Itoa(h.Port))
	}
	args = append(args, o.SSHArgs...)
	return append(args, "--", h.destination(), command)
}

// sshCmd is ssh running command on h, in its own process group so that a
// Ctrl-C on the terminal reaches linerate, which then ends the channel in
// order, and not ssh.
func (o *Options) sshCmd(h Host, command string) *exec.Cmd {
	cmd := exec.Command(cmp.Or(o.SSH, "ssh"), o.sshArgs(h, command)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// run runs a short command on h over ssh and returns its standard output.
func (o *Options) run(ctx context.Context, h Host, stdin io.Reader, command string) (string, error) {
	cmd := o.sshCmd(h, command)
	var out bytes.Buffer
	tail := &tailWriter{also: o.Stderr}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, tail
	if err := o.setup(cmd.Start); err != nil {
		return "", sshStartError(h, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	err := cmd.Wait()
	stop()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", sshError(h.String(), ee.ExitCode(), tail.last(), false)
		}
		return "", &Error{Host: h.String(), Kind: ErrSSH, ExitCode: -1, Err: err}
	}
	return out.String(), nil
}

func sshStartError(h Host, err error) *Error {
	e := &Error{Host: h.String(), Kind: ErrSSH, ExitCode: -1, Err: err}
	if errors.Is(err, exec.ErrNotFound) {
		e.Hint = "install OpenSSH's client (Debian: apt install openssh-client)"
	}
	return e
}

func dialSSH(ctx context.Context, h Host, o *Options) (net.Conn, error) {
	command := cmp.Or(o.Command, "linerate") + " serve --stdio"
	if o.Copy {
		dir, err := o.copyTo(ctx, h)
		if err != nil {
			return nil, err
		}
		// The agent runs from the copy, which goes once it ends: when the
		// channel closes, or when ssh's connection drops (the agent reads
		// EOF).
		command = fmt.Sprintf(`sh -c '%s/linerate serve --stdio; s=$?; rm -rf %s; exit $s'`, dir, dir)
	}
	return o.start(h, command)
}

// start runs command on h with its standard input and output as the
// channel.
func (o *Options) start(h Host, command string) (net.Conn, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := o.sshCmd(h, command)
	ch := &sshChannel{cmd: cmd, host: h.String(), tail: &tailWriter{also: o.Stderr}, done: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, ch.tail
	err = o.setup(cmd.Start)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, sshStartError(h, err)
	}
	go func() {
		_ = cmd.Wait()
		close(ch.done)
	}()
	return &pipeConn{r: outR, w: inW, local: Addr{"ssh", "local"}, remote: Addr{"ssh", h.String()},
		ended: ch.ended, closed: ch.close}, nil
}

// sshChannel is the ssh process behind a channel.
type sshChannel struct {
	cmd     *exec.Cmd
	host    string
	tail    *tailWriter
	done    chan struct{} // closed once ssh has exited and been waited for
	closing atomic.Bool   // set by close: an end we asked for
}

// ended says why the channel ended once ssh has exited: err itself (EOF)
// when ssh ended well or was ended by Close, else an *Error.
func (s *sshChannel) ended(err error) error {
	select {
	case <-s.done:
	case <-time.After(closeGrace):
		return err
	}
	code := s.cmd.ProcessState.ExitCode()
	if code == 0 || s.closing.Load() {
		return err
	}
	if code < 0 {
		return &Error{Host: s.host, Kind: ErrSSH, ExitCode: -1, Err: fmt.Errorf("ssh: %s", s.cmd.ProcessState)}
	}
	return sshError(s.host, code, s.tail.last(), true)
}

// close runs after the channel's write end is closed: the agent reads EOF
// and exits, and ssh with it. One that does not within closeGrace is
// ended.
func (s *sshChannel) close() error {
	select {
	case <-s.done:
		return nil
	case <-time.After(closeGrace):
	}
	s.closing.Store(true)
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(2 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	return nil
}
