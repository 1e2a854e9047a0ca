package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"linerate/internal/usage"
	"linerate/live"
)

func TestWatchBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"watch", "--interval", "10ms"}, "--interval 10ms"},
		{[]string{"watch", "--count", "-1"}, "--count -1"},
		{[]string{"watch", "no-such-if0"}, `no interface "no-such-if0"`},
		{[]string{"watch", "--web", "nonsense"}, "want HOST:PORT"},
		{[]string{"watch", "--web", "127.0.0.1:99999"}, "not 0-65535"},
		{[]string{"watch", "--web", "example.com:80"}, "not an IP address"},
		{[]string{"bench", "udp", "--to", "127.0.0.1", "--search", "ndr", "--web", "127.0.0.1:0"}, "not for --search"},
	} {
		_, err := runArgs(t, c.args...)
		if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: err %v, want one line of bad input saying %q", c.args, err, c.want)
		}
	}
}

// TestWatch runs the built binary: under a real terminal (a pty) it
// redraws in place and stops after --count; into a pipe it prints blocks
// or JSON lines; Ctrl-C stops it with exit 0; --web serves /metrics.
func TestWatch(t *testing.T) {
	bin := buildLinerate(t, t.TempDir())
	t.Run("terminal", func(t *testing.T) { testWatchTerminal(t, bin) })
	t.Run("pipe", func(t *testing.T) { testWatchPipe(t, bin) })
	t.Run("interrupt", func(t *testing.T) { testWatchInterrupt(t, bin) })
	t.Run("web", func(t *testing.T) { testWatchWeb(t, bin) })
}

func testWatchTerminal(t *testing.T, bin string) {
	cmd := exec.Command(bin, "watch", "--count", "3", "--interval", "200ms", "--web", "127.0.0.1:0")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&out, tty); close(copied) }() // ends with EIO when the child exits
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("watch --count 3 under a terminal: %v\n%q", err, out.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("watch --count 3 --interval 200ms did not exit in 10s:\n%q", out.String())
	}
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
		t.Fatal("the terminal output did not end")
	}
	s := out.String()
	for _, want := range []string{"\x1b[2J", "\x1b[?25l", "live page http://127.0.0.1:", "usr%", "sys%", "soft%", "NET_RX/s", "squeeze/s", "IFACE", "rx pps", "IRQ", "total/s", "\x1b[?25h"} {
		if !strings.Contains(s, want) {
			t.Errorf("terminal output lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "\x1b[H"); n != 3 {
		t.Errorf("%d frames drawn from home, want 3 (--count 3)", n)
	}
	if !regexp.MustCompile(`\n0 +[0-9.]+ +[0-9.]+`).MatchString(s) {
		t.Errorf("no row for CPU 0:\n%s", s)
	}
}

func testWatchPipe(t *testing.T, bin string) {
	r := run(t, bin, "watch", "--count", "2", "--interval", "200ms")
	if r.code != 0 || strings.Count(r.stdout, "linerate watch ") != 2 || strings.Contains(r.stdout, "\x1b") {
		t.Errorf("watch --count 2 into a pipe: exit %d, want 2 blocks without escapes:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, bin, "watch", "--count", "2", "--interval", "200ms", "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 {
		t.Fatalf("watch --json --count 2: exit %d, %d lines:\n%s%s", r.code, len(lines), r.stdout, r.stderr)
	}
	for i, l := range lines {
		var s live.Snapshot
		if err := json.Unmarshal([]byte(l), &s); err != nil || len(s.CPUs) == 0 || s.Seconds < 0.1 || s.Seq != uint64(i+1) {
			t.Errorf("line %d: %v %+v", i, err, s)
		}
	}
}

func testWatchInterrupt(t *testing.T, bin string) {
	cmd := exec.Command(bin, "watch", "--interval", "100ms")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	br := bufio.NewReader(stdout)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "linerate watch ") {
		t.Fatalf("first line %q, %v", line, err)
	}
	cmd.Process.Signal(os.Interrupt)
	go io.Copy(io.Discard, br)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("watch after Ctrl-C: %v, want exit 0", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch did not stop on Ctrl-C")
	}
}

var liveAddrRE = regexp.MustCompile(`live view: http://([0-9.:]+)/`)

func testWatchWeb(t *testing.T, bin string) {
	cmd := exec.Command(bin, "watch", "--interval", "200ms", "--count", "50", "--web", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	m := liveAddrRE.FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("stderr %q, %v: want the live view's address", line, err)
	}
	var body string
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + m[1] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			body = string(b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics: %s %s", resp.Status, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{`linerate_cpu_seconds_total{cpu="0",mode="softirq"}`, "# TYPE linerate_softnet_dropped_packets_total counter"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	} else if err != nil {
		t.Errorf("watch --web after SIGTERM: %v, want exit 0", err)
	}
}
