package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"
)

// Supervisor is what runs a guest on the host: `linerate lab
// vm-supervise FILE` reads it from FILE (lab up writes it), starts QEMU
// with the taps it inherited, keeps a session with the guest's agent
// across the guest's boots, sets the guest up after each boot, and
// answers commands (`lab exec`, `lab reboot`, status) on Socket. It runs
// in the node's own network namespace, so `lab down` stops it and QEMU
// as it stops every process of a lab.
type Supervisor struct {
	Machine Machine `json:"machine"`
	Config  Config  `json:"config"`
	// QEMU is the emulator's binary; Socket the unix socket commands
	// reach the guest through.
	QEMU   string `json:"qemu"`
	Socket string `json:"socket"`
	// TapFiles is how many files, from 3 on, the supervisor inherited:
	// the taps' queues, which NICs[i].FDs index.
	TapFiles int `json:"tap_files"`
	// BootTimeout bounds each boot, from QEMU's start or the guest's
	// reset to its agent's first answer. A boot whose agent has not
	// answered by half of it is reset once (see stallReset).
	BootTimeout time.Duration `json:"boot_timeout"`
}

// Guest states a Status reports.
const (
	StateBooting = "booting" // QEMU runs; the agent has not answered yet
	StateReady   = "ready"   // the guest is set up as its Config says
	StateFailed  = "failed"  // it answered, but its setup failed (Error)
	StateStopped = "stopped" // QEMU has ended
)

// Status is a guest's state as its supervisor knows it.
type Status struct {
	State string `json:"state"`
	// Boots counts the boots the guest finished being set up after.
	Boots int    `json:"boots"`
	Hello Hello  `json:"hello"`
	Accel Accel  `json:"accel"`
	Error string `json:"error,omitempty"`
	// Since is when State began.
	Since time.Time `json:"since"`
	// Stall says why the supervisor last reset a boot whose agent had
	// not answered by half of the boot timeout (stallReset), if it did.
	Stall string `json:"stall,omitempty"`
}

// clientRequest is the first line a command sends on the socket.
type clientRequest struct {
	Op         string        `json:"op"` // "status", "wait", "guest"
	AfterBoots int           `json:"after_boots,omitempty"`
	Timeout    time.Duration `json:"timeout,omitempty"`
}

// supervisor is a Supervisor running.
type supervisor struct {
	cfg Supervisor
	log io.Writer

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at each change of st
	st      Status
	sess    *yamux.Session
	reset   chan struct{}
	// stalled is set once this boot has been reset for not answering,
	// and cleared when a boot answers: one reset per boot at most.
	// resetAt is when the last such reset was.
	stalled bool
	resetAt time.Time

	qmpMu sync.Mutex // serialises commands on qmp
	qmp   net.Conn
}

// Write saves the supervisor's file.
func (cfg Supervisor) Write(path string) error {
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(b, '\n'))
}

// LoadSupervisor reads a supervisor's file.
func LoadSupervisor(path string) (Supervisor, error) {
	var s Supervisor
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Run runs the guest until QEMU ends or ctx is cancelled (then QEMU is
// told to quit).
func (cfg Supervisor) Run(ctx context.Context, log io.Writer) error {
	s := &supervisor{cfg: cfg, log: log, changed: make(chan struct{}), reset: make(chan struct{}, 1)}
	s.st = Status{State: StateBooting, Accel: cfg.Machine.Accel, Since: time.Now()}
	os.Remove(cfg.Socket)
	ln, err := net.Listen("unix", cfg.Socket)
	if err != nil {
		return fmt.Errorf("command socket: %w", err)
	}
	defer ln.Close()
	go s.accept(ln)

	for _, p := range []string{cfg.Machine.Serial, cfg.Machine.QMP} {
		os.Remove(p)
	}
	q := exec.Command(cfg.QEMU, cfg.Machine.Args()...)
	for i := 0; i < cfg.TapFiles; i++ {
		q.ExtraFiles = append(q.ExtraFiles, os.NewFile(uintptr(3+i), fmt.Sprintf("tap%d", i)))
	}
	q.Stdout, q.Stderr = log, log
	// QEMU goes with its supervisor, whatever ends that.
	q.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := q.Start(); err != nil {
		s.set(StateStopped, "", err)
		return fmt.Errorf("start %s: %w", cfg.QEMU, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- q.Wait() }()

	qmp, err := dialRetry(ctx, cfg.Machine.QMP, 10*time.Second, exited)
	if err != nil {
		q.Process.Kill()
		s.set(StateStopped, "", err)
		return fmt.Errorf("QEMU's monitor: %w", err)
	}
	s.qmpMu.Lock()
	s.qmp = qmp
	s.qmpMu.Unlock()
	go s.events(qmp)

	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go s.sessions(sctx, exited)

	select {
	case err = <-exited:
	case <-ctx.Done():
		s.command("quit")
		select {
		case err = <-exited:
		case <-time.After(5 * time.Second):
			q.Process.Kill()
			err = <-exited
		}
	}
	qmp.Close()
	if err != nil {
		err = fmt.Errorf("QEMU ended: %w", err)
	}
	s.set(StateStopped, "", err)
	return err
}

// set changes the state and wakes whoever waits for a change.
func (s *supervisor) set(state string, _ string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.State == StateStopped {
		return
	}
	s.st.State, s.st.Since, s.st.Error = state, time.Now(), ""
	if err != nil {
		s.st.Error = err.Error()
	}
	s.notifyLocked()
}

// notifyLocked wakes whoever waits for a change; s.mu is held.
func (s *supervisor) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *supervisor) status() (Status, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st, s.changed
}

func (s *supervisor) logf(format string, a ...any) {
	fmt.Fprintf(s.log, "%s %s: "+format+"\n", append([]any{time.Now().Format("15:04:05.000"), s.cfg.Machine.Node}, a...)...)
}

// dialRetry connects to a unix socket QEMU is about to create.
func dialRetry(ctx context.Context, path string, within time.Duration, exited <-chan error) (net.Conn, error) {
	deadline := time.Now().Add(within)
	for {
		c, err := net.Dial("unix", path)
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("QEMU ended: %v", err)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// events reads QEMU's monitor: a RESET (the guest rebooted) ends the
// session, which the guest's new agent will start again.
func (s *supervisor) events(c net.Conn) {
	br := bufio.NewReader(c)
	fmt.Fprintln(c, `{"execute":"qmp_capabilities"}`)
	for {
		line, err := readBounded(br)
		if err != nil {
			return
		}
		var ev struct {
			Event string `json:"event"`
		}
		if json.Unmarshal(line, &ev) != nil || ev.Event == "" {
			continue
		}
		s.logf("QEMU: %s", ev.Event)
		if ev.Event == "RESET" {
			select {
			case s.reset <- struct{}{}:
			default:
			}
		}
	}
}

// sessions keeps a session with the guest's agent: connect, handshake,
// set the guest up, then watch until the guest resets or stops
// answering, and start over.
func (s *supervisor) sessions(ctx context.Context, exited <-chan error) {
	for ctx.Err() == nil {
		err := s.session(ctx, exited)
		if ctx.Err() != nil {
			return
		}
		s.logf("session ended: %v", err)
		s.set(StateBooting, "", nil)
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *supervisor) session(ctx context.Context, exited <-chan error) error {
	c, err := dialRetry(ctx, s.cfg.Machine.Serial, 10*time.Second, exited)
	if err != nil {
		return err
	}
	defer c.Close()
	// A reset that came before this session is about an older boot.
	select {
	case <-s.reset:
	default:
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.reset:
			cancel()
		case <-hctx.Done():
		}
	}()
	br := bufio.NewReaderSize(c, 64<<10)
	s.mu.Lock()
	within, mayReset := s.cfg.BootTimeout, !s.stalled
	s.mu.Unlock()
	if mayReset {
		within /= 2
	}
	hello, err := hostHandshake(hctx, br, c, within)
	if errors.Is(err, errNoAnswer) && mayReset {
		s.stallReset(within)
		return err
	}
	if err != nil {
		return err
	}
	sess, err := yamux.Client(bufConn{Reader: br, WriteCloser: c}, yamuxConfig())
	if err != nil {
		return err
	}
	defer sess.Close()
	s.logf("agent answered: boot %s, up %.1fs", hello.BootID, hello.Uptime)
	s.mu.Lock()
	s.stalled = false
	s.st.Hello = hello
	s.sess = sess
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.sess = nil
		s.mu.Unlock()
	}()
	if err := configure(sess, &s.cfg.Config); err != nil {
		s.logf("setup failed: %v", err)
		s.set(StateFailed, "", err)
	} else {
		s.mu.Lock()
		s.st.Boots++
		s.mu.Unlock()
		s.set(StateReady, "", nil)
	}
	misses := 0
	for {
		select {
		case <-hctx.Done():
			return errors.New("the guest reset")
		case <-sess.CloseChan():
			return errors.New("the session closed")
		case <-time.After(3 * time.Second):
		}
		if _, err := sess.Ping(); err != nil {
			misses++
			if misses >= 3 {
				return fmt.Errorf("the agent does not answer: %w", err)
			}
			continue
		}
		misses = 0
	}
}

// errNoAnswer is a handshake that got no acknowledgement in time.
var errNoAnswer = errors.New("the guest's agent did not answer")

// stallReset resets a guest whose agent has not answered within a
// boot's first half. A boot under TCG takes seconds, and its agent
// answers within them; one that has said nothing for half the boot
// timeout is stuck (seen once in CI: a 4-CPU guest on a 2-CPU host
// silent for 2 minutes, its console empty), and a second boot is worth
// more than the second half of the wait. A guest that was ready and
// stopped answering comes here too, after its session ends. It is done
// once per boot, said in the log with the console's last line, and kept
// in the status.
func (s *supervisor) stallReset(waited time.Duration) {
	why := fmt.Sprintf("no answer from the agent %s after the boot began", waited)
	if last := lastLine(s.cfg.Machine.Console); last != "" {
		why += "; the console's last line: " + last
	}
	s.logf("%s: resetting the guest (once)", why)
	s.mu.Lock()
	s.stalled = true
	s.resetAt = time.Now()
	s.st.Stall = why
	s.notifyLocked()
	s.mu.Unlock()
	// cont: a guest QEMU paused (a disk error, a monitor's stop) runs
	// again; to a running one it is nothing.
	for _, c := range []string{"system_reset", "cont"} {
		if err := s.command(c); err != nil {
			s.logf("%s: %v", c, err)
		}
	}
}

// command sends QEMU's monitor a command without arguments; its answer
// is read (and ignored) by events.
func (s *supervisor) command(name string) error {
	s.qmpMu.Lock()
	defer s.qmpMu.Unlock()
	if s.qmp == nil {
		return errors.New("no monitor connection")
	}
	_, err := fmt.Fprintf(s.qmp, "{\"execute\":%q}\n", name)
	return err
}

// lastLine is the last line of a file's last 4 KiB (tail), at most its
// last 200 bytes.
func lastLine(path string) string {
	t := tail(path, 4096)
	last := strings.TrimSpace(strings.ToValidUTF8(t[strings.LastIndexByte(t, '\n')+1:], "?"))
	if len(last) > 200 {
		last = last[len(last)-200:]
	}
	return last
}

// hostHandshake sends LRSYNC until the agent acknowledges it, then LRGO.
func hostHandshake(ctx context.Context, br *bufio.Reader, w io.Writer, within time.Duration) (Hello, error) {
	nonce := newNonce()
	type ack struct {
		hello Hello
		err   error
	}
	acks := make(chan ack, 1)
	ready := make(chan error, 1)
	go func() {
		for {
			line, err := br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil {
				acks <- ack{err: err}
				return
			}
			s := string(line)
			i := strings.Index(s, ackWord+" "+nonce+" ")
			if i < 0 {
				continue
			}
			var h Hello
			if err := json.Unmarshal([]byte(strings.TrimSpace(s[i+len(ackWord)+len(nonce)+2:])), &h); err != nil {
				acks <- ack{err: fmt.Errorf("agent's hello: %w", err)}
				return
			}
			acks <- ack{hello: h}
			break
		}
		// Whatever follows, up to the agent's LRREADY, is from before
		// our LRGO.
		for {
			line, err := br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil {
				ready <- err
				return
			}
			if strings.Contains(string(line), readyWord+" "+nonce) {
				ready <- nil
				return
			}
		}
	}()
	deadline := time.After(within)
	for {
		if _, err := fmt.Fprintf(w, "\n%s %s\n", syncWord, nonce); err != nil {
			return Hello{}, err
		}
		select {
		case a := <-acks:
			if a.err != nil {
				return Hello{}, a.err
			}
			if _, err := fmt.Fprintf(w, "%s %s\n", goWord, nonce); err != nil {
				return Hello{}, err
			}
			select {
			case err := <-ready:
				return a.hello, err
			case <-deadline:
				return Hello{}, fmt.Errorf("the guest's agent did not start its session within %s", within)
			case <-ctx.Done():
				return Hello{}, ctx.Err()
			}
		case <-deadline:
			return Hello{}, fmt.Errorf("%w within %s", errNoAnswer, within)
		case <-ctx.Done():
			return Hello{}, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// configure sends the guest its setup and waits for the answer.
func configure(sess *yamux.Session, c *Config) error {
	st, err := sess.OpenStream()
	if err != nil {
		return err
	}
	defer st.Close()
	if err := writeLine(st, Request{Op: OpConfig, Config: c}); err != nil {
		return err
	}
	var rep Reply
	if err := readLine(bufio.NewReader(st), &rep); err != nil {
		return fmt.Errorf("guest's setup: %w", err)
	}
	if rep.Error != "" {
		return errors.New(rep.Error)
	}
	return nil
}

// accept serves commands on the socket.
func (s *supervisor) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go s.client(c)
	}
}

func (s *supervisor) client(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	var req clientRequest
	if err := readLine(br, &req); err != nil {
		return
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = s.cfg.BootTimeout
	}
	switch req.Op {
	case "status":
		st, _ := s.status()
		writeLine(c, st)
	case "wait":
		writeLine(c, s.wait(req.AfterBoots, timeout))
	case "guest":
		st := s.wait(-1, timeout)
		s.mu.Lock()
		sess := s.sess
		s.mu.Unlock()
		if st.State != StateReady && st.State != StateFailed || sess == nil {
			if st.Error == "" {
				st.Error = "the guest's agent is not answering (state " + st.State + ")"
			}
			writeLine(c, st)
			return
		}
		stream, err := sess.OpenStream()
		if err != nil {
			st.State, st.Error = StateBooting, err.Error()
			writeLine(c, st)
			return
		}
		writeLine(c, st)
		splice(c, br, stream)
	}
}

// wait returns once the guest is ready after more than afterBoots boots,
// has failed or stopped, or timeout has passed.
func (s *supervisor) wait(afterBoots int, timeout time.Duration) Status {
	begun := time.Now()
	end := begun.Add(timeout)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		st, changed := s.status()
		switch {
		case st.State == StateReady && st.Boots > afterBoots,
			st.State == StateFailed && st.Boots >= afterBoots,
			st.State == StateStopped:
			return st
		}
		// A boot reset for stalling has the other half of the boot
		// timeout from its reset (stallReset), even where that runs past
		// this wait's own end.
		s.mu.Lock()
		resetAt := s.resetAt
		s.mu.Unlock()
		if second := resetAt.Add(s.cfg.BootTimeout / 2); resetAt.After(begun) && second.After(end) {
			end = second
			deadline.Reset(time.Until(end))
		}
		select {
		case <-changed:
		case <-deadline.C:
			st, _ := s.status()
			if st.Error == "" {
				st.Error = fmt.Sprintf("not ready after %s (state %s)", time.Since(begun).Round(time.Second), st.State)
			}
			return st
		}
	}
}

// splice copies between a command's connection and its guest stream
// until both directions end.
func splice(c net.Conn, br *bufio.Reader, st net.Conn) {
	done := make(chan struct{})
	go func() {
		io.Copy(st, br)
		st.Close()
		close(done)
	}()
	io.Copy(c, st)
	c.Close()
	st.Close()
	<-done
}
