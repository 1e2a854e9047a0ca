package vm

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"
	"golang.org/x/sys/unix"

	"linerate/internal/version"
)

// Paths the guest's agent reads and writes inside the guest.
const (
	virtioPorts = "/sys/class/virtio-ports"
	devDir      = "/dev"
	bootIDFile  = "/proc/sys/kernel/random/boot_id"
	uptimeFile  = "/proc/uptime"
	guestRun    = "/run/linerate"
)

// Guest runs linerate's agent inside a guest: it finds the virtio-serial
// port named PortName, answers the host's handshake and serves its
// requests (set the node up, run commands, reboot) until the session
// ends, which it returns as an error. Whatever started it (busybox's init
// in an initramfs guest, systemd in a Debian one) starts it again, and
// the new agent answers the host's next handshake.
func Guest(ctx context.Context, log io.Writer) error {
	port, err := findPort(virtioPorts, PortName)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(port, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", port, err)
	}
	defer f.Close()
	// One line on the console a boot: where a guest that never answers
	// got to (the supervisor shows the console's end).
	fmt.Fprintf(log, "linerate guest: waiting for the host on %s\n", port)
	br := bufio.NewReaderSize(&portReader{f: f, ctx: ctx}, 64<<10)
	if err := guestHandshake(br, f); err != nil {
		return err
	}
	sess, err := yamux.Server(bufConn{Reader: br, WriteCloser: f}, yamuxConfig())
	if err != nil {
		return err
	}
	defer sess.Close()
	g := &guest{log: log}
	go func() {
		<-ctx.Done()
		sess.Close()
	}()
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			return fmt.Errorf("session with the host ended: %w", err)
		}
		go g.serve(st)
	}
}

// findPort returns the device of the virtio-serial port with the name.
func findPort(dir, name string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("no virtio-serial ports (%s): %w", dir, err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "name"))
		if err == nil && strings.TrimSpace(string(b)) == name {
			return filepath.Join(devDir, e.Name()), nil
		}
	}
	return "", fmt.Errorf("no virtio-serial port named %s in %s", name, dir)
}

// portReader reads a virtio-serial port, on which a read returns nothing
// at once while the host's end is not connected: it waits and tries
// again instead of reporting the end of the stream.
type portReader struct {
	f   *os.File
	ctx context.Context
}

func (p *portReader) Read(b []byte) (int, error) {
	for {
		n, err := p.f.Read(b)
		if n > 0 {
			return n, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		select {
		case <-p.ctx.Done():
			return 0, p.ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// guestHandshake answers each LRSYNC with LRACK and our Hello, and
// returns on the LRGO that names the nonce last acknowledged. Anything
// else read is skipped.
func guestHandshake(br *bufio.Reader, w io.Writer) error {
	hello, err := json.Marshal(readHello())
	if err != nil {
		return err
	}
	acked := ""
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // not a line of the handshake
		}
		if err != nil {
			return fmt.Errorf("handshake: %w", err)
		}
		s := string(line)
		if i := strings.Index(s, syncWord+" "); i >= 0 {
			acked = strings.TrimSpace(s[i+len(syncWord)+1:])
			if _, err := fmt.Fprintf(w, "%s %s %s\n", ackWord, acked, hello); err != nil {
				return fmt.Errorf("handshake: %w", err)
			}
			continue
		}
		if i := strings.Index(s, goWord+" "); i >= 0 && acked != "" && strings.TrimSpace(s[i+len(goWord)+1:]) == acked {
			_, err := fmt.Fprintf(w, "%s %s\n", readyWord, acked)
			return err
		}
	}
}

func readHello() Hello {
	h := Hello{Version: version.Version}
	if b, err := os.ReadFile(bootIDFile); err == nil {
		h.BootID = strings.TrimSpace(string(b))
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile(uptimeFile); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			h.Uptime, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return h
}

// guest is the agent's state across requests.
type guest struct {
	log io.Writer
	mu  sync.Mutex // serialises configs
	// stopWatch ends the watch of the NICs (watchNICs).
	stopWatch chan struct{}
}

func (g *guest) logf(format string, a ...any) {
	fmt.Fprintf(g.log, "linerate guest: "+format+"\n", a...)
}

// serve answers one stream.
func (g *guest) serve(st net.Conn) {
	defer st.Close()
	br := bufio.NewReader(st)
	var req Request
	if err := readLine(br, &req); err != nil {
		g.logf("bad request: %v", err)
		return
	}
	switch req.Op {
	case OpExec:
		if req.Exec == nil || len(req.Exec.Argv) == 0 {
			writeExit(st, Exit{Code: 127, Error: "no command"})
			return
		}
		g.exec(st, br, req.Exec)
	case OpConfig:
		var rep Reply
		if req.Config == nil {
			rep.Error = "no config"
		} else if err := g.configure(req.Config); err != nil {
			rep.Error = err.Error()
		}
		writeLine(st, rep)
	case OpReboot:
		writeLine(st, Reply{})
		// reboot is busybox's in an initramfs guest, systemd's in a
		// Debian one: both shut down in order.
		if err := exec.Command("reboot").Start(); err != nil {
			g.logf("reboot: %v", err)
		}
	default:
		writeLine(st, Reply{Error: fmt.Sprintf("unknown request %q", req.Op)})
	}
}

func writeExit(w io.Writer, e Exit) error {
	b, _ := json.Marshal(e)
	return writeFrame(w, frameExit, b)
}

// guestPath is the PATH commands run with in a guest.
const guestPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// exec runs one command: stdin, signals and the end of the stream come
// in frames; output and the exit go back as frames. A stream that ends
// before the command kills the command's process group.
func (g *guest) exec(st net.Conn, br *bufio.Reader, req *ExecRequest) {
	var wmu sync.Mutex
	send := func(kind byte, p []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return writeFrame(st, kind, p)
	}
	argv0 := req.Argv[0]
	if _, err := os.Stat(argv0); err != nil || !filepath.IsAbs(argv0) {
		argv0 = filepath.Base(argv0)
	}
	cmd := exec.Command(argv0, req.Argv[1:]...)
	cmd.Env = append([]string{"PATH=" + guestPath, "HOME=/root"}, req.Env...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err1 := cmd.StdinPipe()
	stdout, err2 := cmd.StdoutPipe()
	stderr, err3 := cmd.StderrPipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		writeExit(st, Exit{Code: 126, Error: err.Error()})
		return
	}
	if err := cmd.Start(); err != nil {
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		writeExit(st, Exit{Code: code, Error: err.Error()})
		return
	}
	pgid := cmd.Process.Pid
	// What the host sends: stdin, its end, signals. The stream's end
	// (the host's command gone) kills the group.
	go func() {
		for {
			kind, p, err := readFrame(br)
			if err != nil {
				syscall.Kill(-pgid, syscall.SIGKILL)
				stdin.Close()
				return
			}
			switch kind {
			case frameStdin:
				stdin.Write(p)
			case frameStdinEOF:
				stdin.Close()
			case frameSignal:
				if len(p) == 1 {
					syscall.Kill(-pgid, syscall.Signal(p[0]))
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for _, o := range []struct {
		r    io.Reader
		kind byte
	}{{stdout, frameStdout}, {stderr, frameStderr}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			for {
				n, err := o.r.Read(buf)
				if n > 0 {
					if send(o.kind, buf[:n]) != nil {
						io.Copy(io.Discard, o.r)
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	err := cmd.Wait()
	e := Exit{}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = int(ws.Signal())
			e.Code = 128 + e.Signal
		} else {
			e.Code = ee.ExitCode()
		}
	} else if err != nil {
		e.Code, e.Error = 1, err.Error()
	}
	wmu.Lock()
	writeExit(st, e)
	wmu.Unlock()
}

// newNonce is a random handshake nonce.
func newNonce() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
