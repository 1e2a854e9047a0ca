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
	"sync"
	"syscall"
	"time"
)

// supervisorStart bounds the wait for a new supervisor's socket.
const supervisorStart = 5 * time.Second

// Client reaches a guest through its supervisor's socket.
type Client struct {
	Socket string
}

// dial connects and sends the first line.
func (c Client) dial(ctx context.Context, req clientRequest) (net.Conn, *bufio.Reader, error) {
	var d net.Dialer
	// A supervisor just started makes its socket in a moment.
	deadline := time.Now().Add(supervisorStart)
	conn, err := d.DialContext(ctx, "unix", c.Socket)
	for err != nil && (errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		conn, err = d.DialContext(ctx, "unix", c.Socket)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the guest's supervisor (%s): %w", c.Socket, err)
	}
	if err := writeLine(conn, req); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, bufio.NewReader(conn), nil
}

// Status asks the supervisor how the guest is.
func (c Client) Status(ctx context.Context) (Status, error) {
	return c.ask(ctx, clientRequest{Op: "status"})
}

// Wait returns once the guest has been set up after more than
// afterBoots boots (its Status), or says why not.
func (c Client) Wait(ctx context.Context, afterBoots int, timeout time.Duration) (Status, error) {
	st, err := c.ask(ctx, clientRequest{Op: "wait", AfterBoots: afterBoots, Timeout: timeout})
	if err != nil {
		return st, err
	}
	if st.State != StateReady || st.Boots <= afterBoots {
		return st, fmt.Errorf("guest %s: %s", st.State, st.Error)
	}
	return st, nil
}

func (c Client) ask(ctx context.Context, req clientRequest) (Status, error) {
	conn, br, err := c.dial(ctx, req)
	if err != nil {
		return Status{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	var st Status
	if err := readLine(br, &st); err != nil {
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
		return st, fmt.Errorf("the guest's supervisor: %w", err)
	}
	return st, nil
}

// guest opens a stream to the guest's agent and sends req on it.
func (c Client) guest(ctx context.Context, req Request, timeout time.Duration) (net.Conn, *bufio.Reader, error) {
	conn, br, err := c.dial(ctx, clientRequest{Op: "guest", Timeout: timeout})
	if err != nil {
		return nil, nil, err
	}
	var st Status
	if err := readLine(br, &st); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("the guest's supervisor: %w", err)
	}
	if st.State != StateReady && st.State != StateFailed {
		conn.Close()
		return nil, nil, fmt.Errorf("guest %s: %s", st.State, st.Error)
	}
	if err := writeLine(conn, req); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, br, nil
}

// Reboot reboots the guest and returns once it is set up again.
func (c Client) Reboot(ctx context.Context, timeout time.Duration) (Status, error) {
	before, err := c.Status(ctx)
	if err != nil {
		return before, err
	}
	conn, br, err := c.guest(ctx, Request{Op: OpReboot}, timeout)
	if err != nil {
		return before, err
	}
	var rep Reply
	err = readLine(br, &rep)
	conn.Close()
	if err != nil {
		return before, fmt.Errorf("reboot: %w", err)
	}
	if rep.Error != "" {
		return before, fmt.Errorf("reboot: %s", rep.Error)
	}
	st, err := c.Wait(ctx, before.Boots, timeout)
	if err == nil && st.Hello.BootID == before.Hello.BootID {
		return st, fmt.Errorf("the guest answered again without rebooting (boot %s)", st.Hello.BootID)
	}
	return st, err
}

// Exec runs argv in the guest with stdin, stdout and stderr, passing on
// the signals that arrive on sigs, and returns its exit status (128+N
// when signal N ended it). env is added to the guest's environment.
func (c Client) Exec(ctx context.Context, argv, env []string, stdin io.Reader, stdout, stderr io.Writer, sigs <-chan os.Signal) (int, error) {
	conn, br, err := c.guest(ctx, Request{Op: OpExec, Exec: &ExecRequest{Argv: argv, Env: env}}, time.Minute)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var wmu sync.Mutex
	send := func(kind byte, p []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return writeFrame(conn, kind, p)
	}
	if stdin != nil {
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := stdin.Read(buf)
				if n > 0 && send(frameStdin, buf[:n]) != nil {
					return
				}
				if err != nil {
					send(frameStdinEOF, nil)
					return
				}
			}
		}()
	} else {
		send(frameStdinEOF, nil)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case sig := <-sigs:
				if s, ok := sig.(syscall.Signal); ok {
					send(frameSignal, []byte{byte(s)})
				}
			case <-ctx.Done():
				send(frameSignal, []byte{byte(syscall.SIGKILL)})
				return
			case <-done:
				return
			}
		}
	}()
	for {
		kind, p, err := readFrame(br)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return 0, errors.New("the guest's agent ended the command's stream without its exit status (did the guest reboot?)")
			}
			return 0, err
		}
		switch kind {
		case frameStdout:
			if stdout != nil {
				stdout.Write(p)
			}
		case frameStderr:
			if stderr != nil {
				stderr.Write(p)
			}
		case frameExit:
			var e Exit
			if err := json.Unmarshal(p, &e); err != nil {
				return 0, fmt.Errorf("exit status: %w", err)
			}
			if e.Error != "" {
				return e.Code, fmt.Errorf("%s: %s", argv[0], e.Error)
			}
			return e.Code, nil
		}
	}
}
